// The run view of a run over agents: the agents count and "degraded" badges, each agent's
// generator CPU and memory, and a mark on every second whose share is missing.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, waitFor } from '@testing-library/svelte';
import RunView from './RunView.svelte';
import { plan as wirePlan, run as wireRun, summary as wireSummary } from '../test-fixtures/wire';

const summary = wireSummary({ requests: 300, successes: 300, duration_s: 3, rps: 100, seconds: 3, agents: 2, degraded: true, lost_agents: ['gen-b'] });
const run = wireRun({
  id: 9,
  status: 'finished',
  ended_at: '2026-11-29T10:00:03Z',
  duration_s: 3,
  requests: 300,
  agents: 2,
  degraded: true,
  summary,
  plan: wirePlan({ requests: [{ method: 'GET', url: 'http://127.0.0.1:1/' }], load: { executor: 'constant-vus', vus: 2, duration: '3s' } }),
});
const cs = (cpu: number, mib: number) => ({ cpu_percent: cpu, rss_bytes: mib * 1048576, goroutines: 1, open_conns: 1, gc_pause_ms: 0, schedule_lag_p99_ms: 0 });
const seconds = [1, 2, 3].map((s) => ({
  t: s * 1000,
  elapsed_s: s,
  requests: s === 3 ? 50 : 100,
  rps: s === 3 ? 50 : 100,
  active_vus: 2,
  latency_ms: { p50: 1, p95: 2, p99: 4, max: 5 },
  status_codes: { '200': 100 },
  agents: s === 3 ? { 'gen-a': cs(30, 40) } : { 'gen-a': cs(10 * s, 20), 'gen-b': cs(50, 60) },
  ...(s === 3 ? { missing_share: 0.5, missing_agents: ['gen-b'] } : {}),
}));

afterEach(() => vi.unstubAllGlobals());

describe('RunView of a run over agents', () => {
  it('shows the agents, their generator figures, degraded and the seconds whose share is missing', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async (url: string) => {
        if (url === '/api/runs/9') return new Response(JSON.stringify(run), { status: 200 });
        if (url.startsWith('/api/runs/9/samples')) return new Response(JSON.stringify({ items: seconds, total: 3 }), { status: 200 });
        if (url === '/api/runs/9/distribution') return new Response(JSON.stringify({ items: [], count: 0 }), { status: 200 });
        return new Response(JSON.stringify({ error: { code: 'not_found', message: 'nope' } }), { status: 404 });
      }),
    );
    const { container } = render(RunView, { id: '9' });
    const q = (s: string) => container.querySelector(s);
    await waitFor(() => expect(container.querySelectorAll('[data-testid=agent-run-row]')).toHaveLength(2), { timeout: 10_000 });
    expect(q('[data-testid=run-agents]')!.textContent).toBe('2 agents');
    expect(q('[data-testid=run-degraded]')!.getAttribute('title')).toContain('gen-b');
    const rows = [...container.querySelectorAll('[data-testid=agent-run-row]')].map((r) => r.textContent ?? '');
    expect(rows).toHaveLength(2);
    for (const want of ['gen-a', '30 %', '20 %', '40 MiB']) expect(rows[0]).toContain(want); // now, avg of 10/20/30, max RSS
    for (const want of ['gen-b', '50 %', '60 MiB']) expect(rows[1]).toContain(want);
    expect([...container.querySelectorAll('[data-testid=missing-second]')].map((m) => m.textContent)).toEqual(['s3: share missing: gen-b']);
  });
});
