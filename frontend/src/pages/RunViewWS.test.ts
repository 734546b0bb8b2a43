import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { render, waitFor } from '@testing-library/svelte';
import RunView from './RunView.svelte';
import { plan as wirePlan, run as wireRun } from '../test-fixtures/wire';

// The run view of a plan with a WebSocket step: WebSocket charts fed by the seconds' ws blocks,
// and the summary's WebSocket table beside the HTTP figures; a plan without one shows neither.
class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((ev: { data: string }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: (() => void) | null = null;
  constructor(public url: string) {
    FakeSocket.all.push(this);
  }
  send(msg: unknown) {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  close() {}
}

const lat = (v: number) => ({ min: v, mean: v, p50: v, p75: v, p90: v, p95: 2 * v, p99: 2 * v, p99_9: 2 * v, max: 3 * v });
const wsBlock = (n: number) => ({
  sessions: n,
  sessions_failed: 0,
  messages_sent: 10 * n,
  messages_received: 10 * n,
  messages_sent_rate: 10 * n,
  messages_received_rate: 10 * n,
  connect_ms: lat(1),
  round_trip_ms: lat(0.5),
});
const runOf = (url: string) =>
  wireRun({
    id: 7,
    plan_id: 1,
    plan_name: 'p',
    status: 'running',
    started_at: new Date(Date.now() - 3000).toISOString(),
    ended_at: null,
    summary: null,
    plan: wirePlan({ requests: [{ method: 'GET', url }], load: { executor: 'constant-vus', vus: 2, duration: '8s' } }),
  });
const sample = (n: number, ws: unknown) => ({
  t: n,
  elapsed_s: n,
  requests: 2,
  rps: 2,
  errors: 0,
  latency_ms: { p50: 1, p95: 1, p99: 1, max: 1 },
  status_codes: { '101': 2 },
  active_vus: 2,
  client: { cpu_percent: 10, rss_bytes: 1 << 25 },
  generator_bound: false,
  ...(ws ? { ws } : {}),
});
const summary = (ws: unknown) => ({
  requests: 4,
  successes: 4,
  errors: 0,
  interrupted: 0,
  dropped_iterations: 0,
  duration_s: 2,
  rps: 2,
  send_rate: 2,
  latency_ms: lat(1),
  status_codes: { '101': 4 },
  error_kinds: {},
  executor: 'constant-vus',
  thresholds: [],
  seconds: 2,
  generator_bound_seconds: 0,
  ...(ws ? { ws } : {}),
});

let current = runOf('ws://127.0.0.1:1/');
beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal('WebSocket', FakeSocket);
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string) => {
      if (url === '/api/runs/7') return new Response(JSON.stringify(current), { status: 200 });
      return new Response(JSON.stringify({ items: [] }), { status: 200 });
    }),
  );
});
afterEach(() => {
  vi.unstubAllGlobals();
});

describe('RunView with WebSocket steps', () => {
  it('charts the messages and round trips each second, then shows the summary’s WebSocket table', async () => {
    current = runOf('ws://127.0.0.1:1/');
    const { container } = render(RunView, { id: '7' });
    const q = (sel: string) => container.querySelector(sel);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const sock = FakeSocket.all[0];
    sock.onopen?.();
    sock.send({ type: 'sample', data: sample(1, wsBlock(1)) });
    sock.send({ type: 'sample', data: sample(2, wsBlock(2)) });
    await waitFor(() => expect(q('[data-testid=chart-ws-messages]')?.getAttribute('data-points')).toBe('2'));
    expect(q('[data-testid=chart-ws-rtt]')!.getAttribute('data-points')).toBe('2');
    expect(q('[data-testid=chart-ws-messages]')!.textContent).toContain('received');
    expect(q('[data-testid=ws-summary]')).toBeNull();

    sock.send({ type: 'summary', data: summary(wsBlock(4)), run: { ...current, status: 'finished', ended_at: new Date().toISOString() } });
    await waitFor(() => expect(q('[data-testid=ws-summary]')).not.toBeNull());
    expect(q('[data-testid=ws-summary] [data-col=sessions]')!.textContent).toBe('4');
    expect(q('[data-testid=ws-summary] [data-col=sent]')!.textContent).toContain('40');
    expect(q('[data-testid=ws-latency-round-trip]')!.textContent).toContain('0.5');
  });

  it('shows no WebSocket chart or table for an HTTP-only run', async () => {
    current = runOf('http://127.0.0.1:1/');
    const { container } = render(RunView, { id: '7' });
    const q = (sel: string) => container.querySelector(sel);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const sock = FakeSocket.all[0];
    sock.onopen?.();
    sock.send({ type: 'sample', data: sample(1, null) });
    await waitFor(() => expect(q('[data-testid=chart-tps]')?.getAttribute('data-points')).toBe('1'));
    sock.send({ type: 'summary', data: summary(null), run: { ...current, status: 'finished', ended_at: new Date().toISOString() } });
    await waitFor(() => expect(q('[data-testid=summary]')).not.toBeNull());
    expect(q('[data-testid=chart-ws-messages]')).toBeNull();
    expect(q('[data-testid=ws-summary]')).toBeNull();
  });
});
