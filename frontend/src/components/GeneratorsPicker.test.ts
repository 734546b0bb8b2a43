import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import GeneratorsPicker from './GeneratorsPicker.svelte';
import RunAgentsBadge from './RunAgentsBadge.svelte';
import AgentsPanel from './AgentsPanel.svelte';
import { AgentsStore } from '../lib/agents';
import { setLocale } from '../lib/i18n.svelte';
import type { Sample } from '../lib/types';

afterEach(() => {
  vi.unstubAllGlobals();
  setLocale('en');
});

function agents(listening: boolean) {
  const body = {
    listening,
    agents: listening
      ? [
          { id: 'gen-1', labels: { zone: 'eu' }, state: 'idle' },
          { id: 'gen-2', labels: { zone: 'us' }, state: 'idle' },
          { id: 'gen-3', labels: { zone: 'eu' }, state: 'running' },
        ]
      : [],
  };
  vi.stubGlobal('fetch', vi.fn(async () => new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } })));
}

describe('GeneratorsPicker', () => {
  it('disables the agent choices with a hint when the server has no agents listener', async () => {
    agents(false);
    const { getByTestId } = render(GeneratorsPicker);
    expect(fetch).not.toHaveBeenCalled(); // folded: nothing asked until opened
    await fireEvent.click(getByTestId('generators-toggle'));
    await waitFor(() => expect(getByTestId('gen-off').textContent).toContain('--agents-listen HOST:PORT'));
    expect((getByTestId('gen-local') as HTMLInputElement).checked).toBe(true);
    expect((getByTestId('gen-agents') as HTMLInputElement).disabled).toBe(true);
    expect((getByTestId('gen-labels') as HTMLInputElement).disabled).toBe(true);
  });

  it('picks N agents or agents with labels, counting the idle ones that match', async () => {
    agents(true);
    let value: unknown = { kind: 'local' };
    const { getByTestId, queryByTestId, container } = render(GeneratorsPicker, {
      props: {
        get value() {
          return value as never;
        },
        set value(v) {
          value = v;
        },
      },
    });
    await fireEvent.click(getByTestId('generators-toggle'));
    await waitFor(() => expect((getByTestId('gen-agents') as HTMLInputElement).disabled).toBe(false));
    expect(queryByTestId('gen-off')).toBeNull();
    expect(container.textContent).toContain('2 idle agents');
    await fireEvent.click(getByTestId('gen-agents'));
    await fireEvent.input(getByTestId('gen-count'), { target: { value: '2' } });
    await waitFor(() => expect(value).toEqual({ kind: 'agents', n: 2 }));
    expect(getByTestId('generators-choice').textContent).toBe('2 agents');
    await fireEvent.click(getByTestId('gen-labels'));
    await fireEvent.input(getByTestId('gen-label-text'), { target: { value: 'zone=eu' } });
    await waitFor(() => expect(value).toEqual({ kind: 'labels', text: 'zone=eu' }));
    expect(getByTestId('gen-label-match').textContent).toContain('1 idle agent');
  });

  it('speaks Chinese', async () => {
    setLocale('zh-CN');
    agents(false);
    const { getByTestId } = render(GeneratorsPicker);
    await fireEvent.click(getByTestId('generators-toggle'));
    await waitFor(() => expect(getByTestId('gen-off').textContent).toContain('本服务器不接受代理'));
    expect(getByTestId('generators-toggle').textContent).toContain('负载生成器: 本服务器');
  });
});

describe('RunAgentsBadge and AgentsPanel', () => {
  it('shows the agents count and degraded, nothing for a local run', () => {
    const { getByTestId } = render(RunAgentsBadge, { props: { agents: 3, degraded: true, lost: ['gen-b'] } });
    expect(getByTestId('run-agents').textContent).toBe('3 agents');
    expect(getByTestId('run-degraded').textContent).toBe('degraded');
    expect(getByTestId('run-degraded').getAttribute('title')).toContain('gen-b');
    const local = render(RunAgentsBadge, { props: { agents: 0, degraded: false } });
    expect(local.container.querySelector('[data-testid="run-agents"], [data-testid="run-degraded"]')).toBeNull();
  });

  it('lists each agent’s CPU and memory and marks the seconds whose share is missing', () => {
    const st = new AgentsStore();
    st.push({ elapsed_s: 1, agents: { 'gen-a': { cpu_percent: 40, rss_bytes: 2 * 1048576 }, 'gen-b': { cpu_percent: 60, rss_bytes: 1048576 } } } as unknown as Sample);
    st.push({ elapsed_s: 2, agents: { 'gen-a': { cpu_percent: 20, rss_bytes: 1048576 } }, missing_share: 0.5, missing_agents: ['gen-b'] } as unknown as Sample);
    const { getAllByTestId } = render(AgentsPanel, { props: { store: st } });
    const rows = getAllByTestId('agent-run-row').map((r) => r.textContent ?? '');
    expect(rows).toHaveLength(2);
    for (const want of ['gen-a', '20 %', '30 %', '40 %', '2 MiB']) expect(rows[0]).toContain(want);
    // gen-b's "CPU now" is not its last figure: it is missing since second 2
    expect(rows[1]).toContain('missing since s2');
    const cpuNow = getAllByTestId('agent-run-row')[1].children[1];
    expect(cpuNow.textContent).not.toContain('%');
    expect(getAllByTestId('agent-missing-now').map((c) => c.closest('tr')?.dataset.agent)).toEqual(['gen-b']);
    const marks = getAllByTestId('missing-second');
    expect(marks.map((m) => m.textContent)).toEqual(['s2: share missing: gen-b']);
    expect(marks[0].getAttribute('title')).toContain('50');
  });

  it('updates an agent’s row live as seconds arrive (rows folded in place)', async () => {
    const st = new AgentsStore();
    st.push({ elapsed_s: 1, agents: { 'gen-a': { cpu_percent: 40, rss_bytes: 1048576 } } } as unknown as Sample);
    const { getByTestId, rerender } = render(AgentsPanel, { props: { store: st, tick: 1 } });
    expect(getByTestId('agent-run-row').dataset.agent).toBe('gen-a');
    expect(getByTestId('agent-run-row').lastElementChild?.textContent).toBe('1');
    st.push({ elapsed_s: 2, agents: { 'gen-a': { cpu_percent: 20, rss_bytes: 3 * 1048576 } } } as unknown as Sample);
    await rerender({ store: st, tick: 2 });
    const row = getByTestId('agent-run-row');
    expect(row.lastElementChild?.textContent).toBe('2');
    for (const want of ['20 %', '30 %', '40 %', '3 MiB']) expect(row.textContent).toContain(want);
  });
});
