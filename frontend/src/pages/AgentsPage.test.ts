import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, waitFor } from '@testing-library/svelte';
import AgentsPage from './AgentsPage.svelte';
import { setLocale } from '../lib/i18n.svelte';

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
  setLocale('en');
});

const agent = (id: string, extra: Record<string, unknown> = {}) => ({
  id, host: `host-${id}`, cores: 4, version: '1.4.0', labels: { zone: 'eu', rack: '3' }, weight: 0, state: 'idle',
  cpu_percent: 37.5, rss_bytes: 50 * 1048576, last_seen: new Date().toISOString(), ...extra,
});

/** A server whose agent list the test changes; counts the list requests. */
function server(listening: boolean) {
  const state = { agents: [agent('gen-1')], lists: 0, tokens: 0 };
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  vi.stubGlobal('fetch', vi.fn(async (url: string) => {
    if (url === '/api/agents') {
      state.lists++;
      return json(200, { listening, agents: listening ? state.agents : [] });
    }
    if (url === '/api/agents/token') {
      state.tokens++;
      return listening
        ? json(200, { token: 'vly1.sekret.abcd', url: 'nats://10.0.0.5:4222' })
        : json(409, { error: { code: 'agents_listener_off', message: 'no listener' } });
    }
    return json(404, { error: { code: 'not_found', message: url } });
  }));
  return state;
}

describe('AgentsPage', () => {
  it('lists the agents, refreshes every 2 s and shows an admin the join command', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const s = server(true);
    const { getByTestId, queryByTestId } = render(AgentsPage);
    await waitFor(() => expect(getByTestId('agent-gen-1')).toBeTruthy());
    const row = getByTestId('agent-gen-1').textContent ?? '';
    for (const want of ['host-gen-1', '1.4.0', 'rack=3, zone=eu', 'cores', 'idle', '37.5 %', '50 MiB']) expect(row).toContain(want);
    await waitFor(() => expect(getByTestId('agents-join').textContent).toContain('VOLLEY_JOIN_TOKEN=vly1.sekret.abcd volley agent --nats nats://10.0.0.5:4222'));
    expect(getByTestId('agents-join').textContent).not.toContain('--token vly1'); // not in the process list

    const before = s.lists;
    s.agents = [agent('gen-1'), agent('gen-2', { current_run: 12, state: 'running', weight: 2 })];
    await vi.advanceTimersByTimeAsync(1900);
    expect(s.lists).toBe(before);
    await vi.advanceTimersByTimeAsync(200);
    await waitFor(() => expect(getByTestId('agent-gen-2').textContent).toContain('running run 12'));
    expect(s.lists).toBe(before + 1);
    expect(s.tokens).toBe(1);

    s.agents = [agent('gen-2')];
    await vi.advanceTimersByTimeAsync(2000);
    await waitFor(() => expect(queryByTestId('agent-gen-1')).toBeNull());
  });

  it('says how to turn the listener on when there is none, in both languages', async () => {
    const s = server(false);
    setLocale('zh-CN');
    const { getByTestId, queryByTestId } = render(AgentsPage);
    await waitFor(() => expect(getByTestId('agents-off').textContent).toContain('--agents-listen HOST:PORT'));
    expect(getByTestId('agents-off').textContent).toContain('volley serve');
    expect(queryByTestId('agents-join')).toBeNull();
    expect(queryByTestId('agents-table')).toBeNull();
    expect(s.tokens).toBe(0);
  });
});
