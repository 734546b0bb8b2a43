import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import RunView from './RunView.svelte';
import type { Run } from '../lib/types';
import { plan as wirePlan, run as wireRun } from '../test-fixtures/wire';

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

const running = wireRun({
  id: 7,
  plan_id: 1,
  plan_name: 'p',
  status: 'running',
  started_at: new Date(Date.now() - 3000).toISOString(),
  ended_at: null,
  summary: null,
  plan: wirePlan({ requests: [{ method: 'GET', url: 'http://127.0.0.1:1/' }], load: { executor: 'constant-arrival-rate', rate: 10, duration: '8s', pre_allocated_vus: 2 } }),
});

const summary = {
  requests: 30,
  successes: 30,
  errors: 0,
  interrupted: 0,
  dropped_iterations: 2,
  duration_s: 3,
  rps: 10,
  send_rate: 10,
  latency_ms: { min: 1, mean: 1, p50: 1, p75: 1, p90: 1, p95: 1, p99: 1, p99_9: 1, max: 1 },
  status_codes: { '200': 30 },
  error_kinds: {},
  executor: 'constant-arrival-rate',
  thresholds: [{ expr: 'p(95)<200ms', value: 1, ok: true }],
  seconds: 3,
  generator_bound_seconds: 0,
};

const sample = (n: number, over: Record<string, unknown> = {}) => ({
  t: n,
  elapsed_s: n,
  requests: 10,
  rps: 10,
  errors: 0,
  dropped_iterations: 1,
  latency_ms: { p50: 1, p95: 1, p99: 1, max: 1 },
  status_codes: { '200': 10 },
  active_vus: 2,
  client: { cpu_percent: 127, rss_bytes: 1 << 25, schedule_lag_p99_ms: 0.8 },
  generator_bound: n === 2,
  ...over,
});

let stopAnswer: (r: Run) => void;

beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal('WebSocket', FakeSocket);
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string, init: RequestInit = {}) => {
      if (url === '/api/runs/7/stop' && init.method === 'POST') {
        const r = await new Promise<Run>((resolve) => (stopAnswer = resolve));
        return new Response(JSON.stringify(r), { status: 202 });
      }
      if (url === '/api/runs/7') return new Response(JSON.stringify(running), { status: 200 });
      return new Response(JSON.stringify({ items: [] }), { status: 200 });
    }),
  );
});
afterEach(() => {
  vi.unstubAllGlobals();
});

describe('RunView', () => {
  it('keeps the summary’s final status when the stop answer (still "running") arrives after it', async () => {
    const { container } = render(RunView, { id: '7' });
    const q = (sel: string) => container.querySelector(sel);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const ws = FakeSocket.all[0];
    ws.onopen?.();
    ws.send({ type: 'sample', data: sample(1) });
    ws.send({ type: 'sample', data: sample(2) });
    await waitFor(() => expect(q('[data-testid=chart-tps]')!.getAttribute('data-points')).toBe('2'));
    expect(q('[data-testid=run-status]')!.textContent).toBe('running');
    expect(q('[data-testid=chart-tps]')!.getAttribute('data-banded')).toBe('1');
    expect(q('[data-testid=stat-cpu]')!.textContent).toBe('1.27 cores');
    expect(q('[data-testid=stat-schedule-lag]')!.textContent).toContain('0.8 ms');
    expect(q('[data-testid=chart-errors]')!.textContent).toContain('dropped iterations');
    expect(q('[data-testid=run-started]')!.textContent).toMatch(/\d\d:\d\d:\d\d \S+$/);

    await fireEvent.click(q('[data-testid=stop-run]')!);
    ws.send({ type: 'summary', data: summary, run: { ...running, status: 'stopped', ended_at: new Date().toISOString(), thresholds_ok: true } });
    await waitFor(() => expect(q('[data-testid=summary]')).not.toBeNull());
    expect(q('[data-testid=run-status]')!.textContent).toBe('stopped');

    // The stop request is still pending (the view is busy), then its late answer arrives: wait until
    // the view has handled it (busy ends, Run again is enabled), not for a guessed time.
    expect(q('[data-testid=run-again]')!.hasAttribute('disabled')).toBe(true);
    stopAnswer({ ...running, status: 'running' });
    await waitFor(() => expect(q('[data-testid=run-again]')!.hasAttribute('disabled')).toBe(false));
    expect(q('[data-testid=run-status]')!.textContent).toBe('stopped');
    expect(q('[data-testid=run-thresholds]')!.textContent).toContain('thresholds passed');
    expect(q('[data-testid=stop-run]')).toBeNull();
  });

  it('shows the per-request table live, every second, then from the summary', async () => {
    const { container } = render(RunView, { id: '7' });
    const q = (sel: string) => container.querySelector(sel);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const ws = FakeSocket.all[0];
    ws.onopen?.();
    const row = (req: number, err: number, p95: number, over: Record<string, unknown> = {}) => ({
      requests: req, errors: err, rps: req, p50_ms: p95 / 2, p95_ms: p95, p99_ms: p95 * 2, checks_passed: 0, checks_failed: 0, ...over,
    });
    ws.send({ type: 'sample', data: sample(1, { by_name: { home: row(10, 0, 4), dead: row(3, 3, 0) } }) });
    const cell = (name: string, col: string) => q(`tr[data-request="${name}"] td[data-col=${col}]`)?.textContent;
    await waitFor(() => expect(cell('home', 'requests')).toBe('10'));
    expect(cell('dead', 'p95')).toBe('—'); // no successful response: never 0
    ws.send({ type: 'sample', data: sample(2, { by_name: { home: row(20, 1, 6, { timing: { connect_ms: { p50: 0, p95: 1 }, tls_ms: {}, wait_ms: { p50: 2, p95: 5 }, receive_ms: { p50: 1, p95: 1 } } }), dead: row(3, 3, 0) } }) });
    await waitFor(() => expect(cell('home', 'requests')).toBe('30'));
    expect(cell('home', 'p95')).toBe('6');
    expect(cell('home', 'errors')).toBe('1');
    expect(q('[data-testid=requests-total] td[data-col=requests]')!.textContent).toBe('36');
    expect(q('[data-testid=timing-row][data-request=home] td[data-col=wait_ms-p95]')!.textContent).toBe('5');

    const byName = { home: { requests: 30, errors: 1, rps: 10, latency_ms: { p50: 3, p95: 7, p99: 9 }, checks_passed: 29, checks_failed: 1 } };
    ws.send({ type: 'summary', data: { ...summary, by_name: byName }, run: { ...running, status: 'finished', ended_at: new Date().toISOString() } });
    await waitFor(() => expect(q('[data-testid=summary]')).not.toBeNull());
    expect(cell('home', 'p95')).toBe('7');
    expect(cell('home', 'checks')).toBe('29 / 1');
    expect(q('tr[data-request="dead"]')).toBeNull();
  });

  it('shows the live error message as an error at once, then the failed run — never a normal end', async () => {
    const { container } = render(RunView, { id: '7' });
    const q = (sel: string) => container.querySelector(sel);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const ws = FakeSocket.all[0];
    ws.onopen?.();
    ws.send({ type: 'sample', data: sample(1) });
    const reason = 'storage failed: the disk is full; seconds 2-31 of this run could not be saved (retried for 30s)';
    ws.send({ type: 'error', data: { error: reason } });
    await waitFor(() => expect(q('[data-testid=run-failing]')).not.toBeNull());
    expect(q('[data-testid=run-failing]')!.getAttribute('role')).toBe('alert');
    expect(q('[data-testid=run-failing]')!.textContent).toContain('The run is failing and is being stopped: ' + reason);
    expect(q('[data-testid=run-status]')!.textContent).toBe('running');

    ws.send({ type: 'summary', data: summary, run: { ...running, status: 'failed', error: reason, ended_at: new Date().toISOString() } });
    await waitFor(() => expect(q('[data-testid=run-status]')!.textContent).toBe('failed'));
    expect(q('[data-testid=run-error]')!.textContent).toContain('The run failed: ' + reason);
    expect(q('[data-testid=run-failing]')).toBeNull(); // one banner, not two
  });

  it('changes the rate of a running open model and marks the change on the charts, live and in the summary', async () => {
    const ev = { t: 5000, elapsed_s: 2.4, kind: 'rate', from: 10, to: 40, by: 'local' };
    const f = fetch as unknown as ReturnType<typeof vi.fn>;
    f.mockImplementation(async (url: string, init: RequestInit = {}) => {
      if (url === '/api/runs/7/control' && init.method === 'POST') return new Response(JSON.stringify(ev), { status: 200 });
      if (url === '/api/runs/7') return new Response(JSON.stringify(running), { status: 200 });
      return new Response(JSON.stringify({ items: [] }), { status: 200 });
    });
    const { container } = render(RunView, { id: '7' });
    const q = (sel: string) => container.querySelector(sel);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const ws = FakeSocket.all[0];
    ws.onopen?.();
    ws.send({ type: 'sample', data: sample(1) });
    await waitFor(() => expect(q('[data-testid=live-control]')).not.toBeNull());
    const input = q('[data-testid=live-control-value]') as HTMLInputElement;
    expect(input.value).toBe('10'); // the plan's constant rate
    await fireEvent.input(input, { target: { value: '40' } });
    await fireEvent.click(q('[data-testid=live-control-apply]')!);
    await waitFor(() => expect(q('[data-testid=chart-tps]')!.getAttribute('data-events')).toBe('1'));
    expect(q('[data-testid=chart-vus]')!.getAttribute('data-events')).toBe('1');
    expect(q('[data-testid=run-events]')!.textContent).toContain('rate 10 → 40 by local at 2.4 s');
    // the same change arrives in its second's sample: still one event
    ws.send({ type: 'sample', data: sample(3, { events: [ev] }) });
    await waitFor(() => expect(q('[data-testid=chart-tps]')!.getAttribute('data-points')).toBe('2'));
    expect(q('[data-testid=chart-tps]')!.getAttribute('data-events')).toBe('1');

    ws.send({ type: 'summary', data: { ...summary, events: [ev] }, run: { ...running, status: 'finished', ended_at: new Date().toISOString() } });
    await waitFor(() => expect(q('[data-testid=summary]')).not.toBeNull());
    expect(q('[data-testid=live-control]')).toBeNull();
    expect(q('[data-testid=chart-tps]')!.getAttribute('data-events')).toBe('1');
  });

  it('offers live control of a run over agents too (the server asks every agent)', async () => {
    const ev = { t: 5000, elapsed_s: 1.5, kind: 'rate', from: 10, to: 20, by: 'local' };
    const posted: string[] = [];
    (fetch as unknown as ReturnType<typeof vi.fn>).mockImplementation(async (url: string, init: RequestInit = {}) => {
      if (url === '/api/runs/7/control' && init.method === 'POST') {
        posted.push(String(init.body));
        return new Response(JSON.stringify(ev), { status: 200 });
      }
      if (url === '/api/runs/7') return new Response(JSON.stringify(running), { status: 200 });
      return new Response(JSON.stringify({ items: [] }), { status: 200 });
    });
    const { container } = render(RunView, { id: '7' });
    const q = (sel: string) => container.querySelector(sel);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const ws = FakeSocket.all[0];
    ws.onopen?.();
    const cs = { cpu_percent: 10, rss_bytes: 1 << 20, goroutines: 1, open_conns: 1, gc_pause_ms: 0, schedule_lag_p99_ms: 0 };
    ws.send({ type: 'sample', data: sample(1, { agents: { 'gen-a': cs, 'gen-b': cs } }) });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=agent-run-row]')).toHaveLength(2)); // a run over agents
    const input = q('[data-testid=live-control-value]') as HTMLInputElement;
    await fireEvent.input(input, { target: { value: '20' } });
    await fireEvent.click(q('[data-testid=live-control-apply]')!);
    await waitFor(() => expect(posted).toEqual(['{"rate":20}']));
  });

  it('offers no live control for an iteration-based executor', async () => {
    const iter = { ...running, plan: wirePlan({ requests: [{ url: 'http://127.0.0.1:1/' }], load: { executor: 'per-vu-iterations', vus: 2, iterations: 5 } }) };
    (fetch as unknown as ReturnType<typeof vi.fn>).mockImplementation(async (url: string) =>
      url === '/api/runs/7' ? new Response(JSON.stringify(iter), { status: 200 }) : new Response(JSON.stringify({ items: [] }), { status: 200 }),
    );
    const { container } = render(RunView, { id: '7' });
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    FakeSocket.all[0].onopen?.();
    await waitFor(() => expect(container.querySelector('[data-testid=stop-run]')).not.toBeNull());
    expect(container.querySelector('[data-testid=live-control]')).toBeNull();
  });

  it('says the connection is lost and freezes the elapsed counter while it is', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'setTimeout', 'Date'] });
    try {
      const { container } = render(RunView, { id: '7' });
      const q = (sel: string) => container.querySelector(sel);
      await vi.waitFor(() => expect(FakeSocket.all).toHaveLength(1));
      FakeSocket.all[0].onopen?.();
      await vi.advanceTimersByTimeAsync(2000);
      // the server goes away: the socket closes and GET /api/runs/7 fails
      vi.stubGlobal('fetch', vi.fn(async () => Promise.reject(new TypeError('Failed to fetch'))));
      FakeSocket.all[0].onclose?.({ code: 1006, reason: '' });
      await vi.advanceTimersByTimeAsync(10);
      await vi.waitFor(() => expect(q('[data-testid=live-lost]')).not.toBeNull());
      expect(q('[data-testid=live-lost]')!.textContent).toBe('connection to the server lost — retrying');
      expect(container.textContent).not.toContain('1006');
      const frozen = q('[data-testid=run-elapsed]')!.textContent;
      await vi.advanceTimersByTimeAsync(5000);
      expect(q('[data-testid=run-elapsed]')!.textContent).toBe(frozen);
      expect(q('[data-testid=connection-lost]')).not.toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });
  it('shows the failure groups live, with each sample sent once, then the summary’s', async () => {
    const { container } = render(RunView, { id: '7' });
    const q = (sel: string) => container.querySelector(sel);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const ws = FakeSocket.all[0];
    ws.onopen?.();
    const g = { request: 'r', kind: 'status_5xx', status: 503, message: 'HTTP 503 Service Unavailable' };
    const smp = { status: 503, headers: [['Retry-After', '5']], body: 'busy', body_truncated: false };
    ws.send({ type: 'sample', data: sample(1) });
    expect(q('[data-testid=failures]')).toBeNull();
    ws.send({ type: 'sample', data: sample(2, { errors: 3, failures: [{ ...g, count: 3, sample: smp }] }) });
    const other = { request: 'r', kind: 'timeout', status: 0, message: 'no complete response within http.timeout (5s)' };
    ws.send({ type: 'sample', data: sample(3, { errors: 3, failures: [{ ...g, count: 5 }, { ...other, count: 1 }] }) });
    ws.send({ type: 'sample', data: sample(4, { errors: 1, failures: [{ ...other, count: 2 }] }) }); // the 503s stopped
    await waitFor(() => expect(container.querySelectorAll('[data-testid=failure-row]')).toHaveLength(2));
    await waitFor(() => expect(q('[data-testid=failure-row]')?.textContent).toContain('5'));
    await fireEvent.click(q('[data-testid=failure-row]')!);
    expect(q('[data-testid=failure-body]')!.textContent).toBe('busy'); // kept from second 2

    ws.send({ type: 'summary', data: { ...summary, errors: 8, failures: [{ ...g, count: 6, sample: smp }, { ...other, count: 2 }] }, run: { ...running, status: 'finished', ended_at: new Date().toISOString() } });
    await waitFor(() => expect(q('[data-testid=summary]')).not.toBeNull());
    expect([...q('[data-testid=failure-row]')!.querySelectorAll('td')].map((td) => td.textContent)).toContain('6');
  });
});

describe('RunView run again', () => {
  it('runs a run over agents again over as many agents, saying so; a local run again here', async () => {
    for (const [agents, label, body] of [
      [2, '▶ Run again on 2 agents', '{"agents":2}'],
      [0, '▶ Run again', ''],
    ] as const) {
      const done = { ...running, status: 'finished', ended_at: new Date().toISOString(), agents, summary };
      const posted: string[] = [];
      (fetch as unknown as ReturnType<typeof vi.fn>).mockImplementation(async (url: string, init: RequestInit = {}) => {
        if (url === '/api/plans/1/runs' && init.method === 'POST') {
          posted.push(String(init.body ?? ''));
          return new Response(JSON.stringify({ ...running, id: 8 }), { status: 201 });
        }
        if (url === '/api/runs/7') return new Response(JSON.stringify(done), { status: 200 });
        return new Response(JSON.stringify({ items: [] }), { status: 200 });
      });
      const { container, unmount } = render(RunView, { id: '7' });
      const again = () => container.querySelector('[data-testid=run-again]') as HTMLButtonElement | null;
      await waitFor(() => expect(again()?.disabled).toBe(false));
      expect(again()!.textContent).toBe(label);
      await fireEvent.click(again()!);
      await waitFor(() => expect(posted).toHaveLength(1));
      expect(posted[0].replace('undefined', '')).toBe(body);
      unmount();
    }
  });
});
