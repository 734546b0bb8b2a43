// The run view of a finished run: server-downsampled samples plotted as they come, the latency
// distribution, per-request and checks tables, notes and tags, compare-with-previous and export.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import RunView from './RunView.svelte';
import { setLocale } from '../lib/i18n.svelte';
import { nameStats, plan as wirePlan, run as wireRun, summary as wireSummary } from '../test-fixtures/wire';

const lat = { min: 0.1, mean: 1, p50: 1, p75: 1.2, p90: 1.5, p95: 2, p99: 4, p99_9: 8, max: 20 };
const summary = wireSummary({
  requests: 3600,
  successes: 3590,
  errors: 10,
  interrupted: 0,
  duration_s: 3600,
  rps: 1,
  latency_ms: lat,
  status_codes: { '200': 3590, '500': 10 },
  error_kinds: { status_5xx: 10 },
  client: { cpu_percent_avg: 12, cpu_percent_max: 30, rss_bytes_max: 1 << 25 },
  by_name: { home: nameStats({ requests: 3000, errors: 0, latency_ms: lat }), api: nameStats({ requests: 600, errors: 10, latency_ms: lat }) },
  checks: [
    { request: 'home', check: 'status eq 200', passes: 3000, fails: 0 },
    { request: 'api', check: 'status eq 200', passes: 590, fails: 10 },
  ],
  thresholds: [{ expr: 'p(95)<200ms', value: 2, ok: true }],
  seconds: 3600,
  generator_bound_seconds: 0,
  executor: 'constant-vus',
});
const run = wireRun({
  id: 8,
  plan_id: 1,
  plan_name: 'p',
  status: 'finished',
  started_at: '2026-11-29T10:00:00Z',
  ended_at: '2026-11-29T11:00:00Z',
  duration_s: 3600,
  thresholds_ok: true,
  notes: '',
  tags: ['nightly'],
  summary,
  plan: wirePlan({ requests: [{ method: 'GET', url: 'http://127.0.0.1:1/' }], load: { executor: 'constant-vus', vus: 2, duration: '1h' } }),
});
// What the server sends for ?points=N of a 3600-second run: its pick of seconds (LTTB), uneven.
const picked = [1, 5, 37, 120, 1800, 3599, 3600].map((e, i) => ({
  t: e * 1000,
  elapsed_s: e,
  requests: 1,
  rps: i === 3 ? 50 : 1,
  errors: 0,
  active_vus: 2,
  latency_ms: { p50: 1, p95: 2, p99: 4, max: 5 },
  status_codes: { '200': 1 },
}));
const distribution = {
  items: [
    { percentile: 50, value_ms: 1 },
    { percentile: 90, value_ms: 1.5 },
    { percentile: 99, value_ms: 4 },
    { percentile: 99.9, value_ms: 8 },
    { percentile: 100, value_ms: 20 },
  ],
  count: 3600,
};

type Handler = (url: string, init: RequestInit) => Response | undefined;

function stub(extra: Handler = () => undefined) {
  const f = vi.fn(async (url: string, init: RequestInit = {}) => {
    const r = extra(url, init);
    if (r) return r;
    if (url === '/api/runs/8') return new Response(JSON.stringify(run), { status: 200 });
    if (url.startsWith('/api/runs/8/samples')) return new Response(JSON.stringify({ items: picked, downsampled: true, total: 3600 }), { status: 200 });
    if (url === '/api/runs/8/distribution') return new Response(JSON.stringify(distribution), { status: 200 });
    return new Response(JSON.stringify({ error: { code: 'not_found', message: 'nope' } }), { status: 404 });
  });
  vi.stubGlobal('fetch', f);
  return f;
}

afterEach(() => {
  vi.unstubAllGlobals();
  location.hash = '';
});

describe('RunView of a finished run', () => {
  it('asks for about one point per chart pixel and plots exactly what the server picked', async () => {
    const f = stub();
    const { container } = render(RunView, { id: '8' });
    const q = (s: string) => container.querySelector(s);
    // the charts load on first use: on a busy machine that takes more than waitFor's default second
    await waitFor(() => expect(q('[data-testid=chart-tps]')?.getAttribute('data-points')).toBe('7'), { timeout: 10_000 });
    const url = f.mock.calls.map((c) => String(c[0])).find((u) => u.startsWith('/api/runs/8/samples'))!;
    const points = Number(new URL(url, 'http://x').searchParams.get('points'));
    expect(points).toBeGreaterThanOrEqual(200);
    expect(points).toBeLessThanOrEqual(5000);
    // no client-side resampling: every picked second, uneven spacing kept, on every chart
    for (const id of ['chart-latency', 'chart-errors', 'chart-vus', 'chart-cpu', 'chart-rss']) expect(q(`[data-testid=${id}]`)!.getAttribute('data-points')).toBe('7');
    expect(q('[data-testid=samples-downsampled]')!.textContent).toContain('7 points of 3,600 seconds');
  });

  it('draws the latency distribution and lists requests, checks, thresholds and the trust note', async () => {
    stub();
    const { container } = render(RunView, { id: '8' });
    const q = (s: string) => container.querySelector(s);
    await waitFor(() => expect(q('[data-testid=chart-distribution]')).not.toBeNull());
    expect(q('[data-testid=chart-distribution]')!.getAttribute('data-points')).toBe('5'); // 4 percentiles + max
    expect(container.querySelectorAll('[data-testid=requests-row]')).toHaveLength(2);
    const checks = [...q('[data-testid=summary-checks]')!.querySelectorAll('tbody tr')];
    expect(checks).toHaveLength(2);
    expect(checks[1].textContent).toContain('98.3 %');
    expect(q('[data-testid=summary-thresholds]')).not.toBeNull();
    expect(q('[data-testid=generator-trust]')!.textContent).toContain('never saturated');
    // the HTML report is in the UI's language; JSON and CSV have none
    expect(q('[data-testid=export-html]')!.getAttribute('href')).toBe('/api/runs/8/report?format=html&lang=en');
    expect(q('[data-testid=export-csv]')!.getAttribute('href')).toBe('/api/runs/8/report?format=csv');
    expect(q('[data-testid=export-json]')!.hasAttribute('download')).toBe(true);
  });

  it('asks for the HTML report in the language the UI shows, and follows a switch', async () => {
    stub();
    setLocale('zh-CN');
    try {
      const { container } = render(RunView, { id: '8' });
      const q = (s: string) => container.querySelector(s);
      await waitFor(() => expect(q('[data-testid=export-html]')).not.toBeNull());
      expect(q('[data-testid=export-html]')!.getAttribute('href')).toBe('/api/runs/8/report?format=html&lang=zh-CN');
      expect(q('[data-testid=export-json]')!.getAttribute('href')).toBe('/api/runs/8/report?format=json');
      setLocale('en');
      await waitFor(() => expect(q('[data-testid=export-html]')!.getAttribute('href')).toBe('/api/runs/8/report?format=html&lang=en'));
    } finally {
      setLocale('en');
    }
  });

  it('edits tags and notes in place with PATCH', async () => {
    const patches: unknown[] = [];
    stub((url, init) => {
      if (url === '/api/runs/8' && init.method === 'PATCH') {
        const body = JSON.parse(String(init.body));
        patches.push(body);
        return new Response(JSON.stringify({ ...run, summary: undefined, ...body }), { status: 200 });
      }
    });
    const { container } = render(RunView, { id: '8' });
    const q = (s: string) => container.querySelector(s);
    await waitFor(() => expect(q('#run-tag-input')).not.toBeNull());
    const input = q('#run-tag-input') as HTMLInputElement;
    await fireEvent.input(input, { target: { value: 'Baseline' } });
    await fireEvent.keyDown(input, { key: 'Enter' });
    await waitFor(() => expect(q('[data-testid=run-tags] [data-tag=baseline]')).not.toBeNull());
    expect(patches[0]).toEqual({ tags: ['baseline', 'nightly'] });

    await fireEvent.input(input, { target: { value: 'Bad Tag!' } });
    await fireEvent.keyDown(input, { key: 'Enter' });
    expect(q('[data-testid=tag-error]')!.textContent).toContain('not a valid tag');
    expect(patches).toHaveLength(1);

    await fireEvent.click(q('[data-testid=remove-tag][data-tag=nightly]')!);
    await waitFor(() => expect(patches[1]).toEqual({ tags: ['baseline'] }));

    const notes = q('#run-notes') as HTMLTextAreaElement;
    await fireEvent.input(notes, { target: { value: 'after the cache fix' } });
    await fireEvent.click(q('[data-testid=save-notes]')!);
    await waitFor(() => expect(patches[2]).toEqual({ notes: 'after the cache fix' }));
    await waitFor(() => expect(q('[data-testid=notes-saved]')).not.toBeNull());
    // the summary is still shown after the PATCH answer (which has none)
    expect(q('[data-testid=summary]')).not.toBeNull();
  });

  it('compares with the previous run of the plan, or says there is none', async () => {
    let previous: Response | undefined = new Response(JSON.stringify({ ...run, id: 5 }), { status: 200 });
    stub((url) => (url === '/api/runs/8/previous' ? previous : undefined));
    const { container } = render(RunView, { id: '8' });
    const q = (s: string) => container.querySelector(s);
    await waitFor(() => expect(q('[data-testid=compare-previous]')).not.toBeNull());
    await fireEvent.click(q('[data-testid=compare-previous]')!);
    await waitFor(() => expect(location.hash).toBe('#/compare?ids=5,8&baseline=5'));

    previous = new Response(JSON.stringify({ error: { code: 'not_found', message: 'run 8 has no earlier run' } }), { status: 404 });
    await fireEvent.click(q('[data-testid=compare-previous]')!);
    await waitFor(() => expect(q('[data-testid=action-error]')?.textContent).toContain('no previous run'));
  });

  it('puts the capacity table of a sweep first, with its sentence and a one-click HTML export', async () => {
    const sweep = [
      { vus: 1, duration_s: 3, requests: 300, rps: 100, p50_ms: 1, p90_ms: 2, p99_ms: 3, error_rate: 0, cpu_percent: 20, rss_bytes: 1 << 24, knee: false },
      { vus: 8, duration_s: 3, requests: 1500, rps: 500, p50_ms: 1, p90_ms: 2, p99_ms: 3, error_rate: 0, cpu_percent: 60, rss_bytes: 1 << 24, knee: true },
    ];
    stub((url) =>
      url === '/api/runs/8'
        ? new Response(JSON.stringify({ ...run, summary: { ...summary, executor: 'concurrency-sweep', sweep } }), { status: 200 })
        : undefined,
    );
    const { container } = render(RunView, { id: '8' });
    const q = (s: string) => container.querySelector(s);
    await waitFor(() => expect(q('[data-testid=capacity]')).not.toBeNull());
    expect(container.querySelectorAll('[data-testid=capacity-table]')).toHaveLength(1);
    expect(q('[data-testid=capacity-sentence]')!.textContent).toContain('The knee is at 8 VUs');
    // above the summary card
    const cap = q('[data-testid=capacity]')!;
    expect(cap.compareDocumentPosition(q('[data-testid=summary]')!) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(q('[data-testid=capacity-export-html]')!.getAttribute('href')).toBe('/api/runs/8/report?format=html&lang=en');
  });
});
