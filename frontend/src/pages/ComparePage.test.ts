import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import ComparePage from './ComparePage.svelte';
import fixture from '../test-fixtures/compare-1-3-5.json';
import serverRows from '../test-fixtures/compare-server-rows.json';
import type { CompareResponse } from '../lib/types';
import { alignSeries, PICKS } from '../lib/compare';
import { setLocale } from '../lib/i18n.svelte';

// A real GET /api/compare?ids=1,3,5&baseline=1 answer of the backend (series cut to 4 seconds).
const res = fixture as unknown as CompareResponse;

afterEach(() => {
  vi.unstubAllGlobals();
  location.hash = '';
});

function stub(body: unknown = res, status = 200) {
  const f = vi.fn(async (_url: string) => new Response(JSON.stringify(body), { status }));
  vi.stubGlobal('fetch', f);
  return f;
}

describe('ComparePage', () => {
  it('renders the delta table: one row per metric, one cell per run with its verdict, p-value / CI in the tooltip', async () => {
    const f = stub();
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
    await waitFor(() => expect(container.querySelector('[data-testid=compare-table]')).not.toBeNull());
    expect(String(f.mock.calls[0][0])).toMatch(/^\/api\/compare\?ids=1,3,5&baseline=1&points=\d+$/);

    const rows = [...container.querySelectorAll('[data-testid=compare-row]')];
    expect(rows.map((r) => r.getAttribute('data-metric'))).toEqual(res.metrics.map((m) => m.metric));
    for (const m of res.metrics) {
      const row = container.querySelector(`[data-testid=compare-row][data-metric="${m.metric}"]`)!;
      const cells = [...row.querySelectorAll('[data-verdict]')];
      expect(cells.map((c) => c.getAttribute('data-verdict'))).toEqual(m.values.map((v) => v.verdict));
      // every cell carries a badge of its verdict's colour class
      for (const c of cells) expect(c.querySelector(`.verdict.v-${c.getAttribute('data-verdict')}`)).not.toBeNull();
    }

    // a 19 % TPS drop: regression, with its effect and 95 % interval in the cell
    const tps = container.querySelector('[data-metric=tps] [data-run-id="3"]')!;
    expect(tps.getAttribute('data-verdict')).toBe('regression');
    expect(tps.querySelector('.verdict')!.textContent).toBe('regression');
    expect(tps.querySelector('[data-testid=delta-pct]')!.textContent).toBe('−19.4 %');
    expect(tps.querySelector('[data-testid=effect]')!.textContent).toBe('−19.4 % [−20.2 %, −18.6 %]');
    expect(tps.getAttribute('title')).toContain('p-value: < 0.0001');
    expect(tps.getAttribute('title')).toContain('corrected for autocorrelation');
    expect(tps.getAttribute('title')).toContain('practical threshold: ±5 %');

    const p95 = container.querySelector('[data-metric=p95] [data-run-id="3"]')!;
    expect(p95.querySelector('.verdict.v-regression')!.textContent).toBe('regression');
    expect(p95.getAttribute('title')).toMatch(/95 % interval of Δ: \[\+2 ms, \+2\.6 ms\]/);

    // inconclusive says what would decide it, computed by the server from the noise
    const inc = container.querySelector('[data-metric=p95] [data-run-id="5"]')!;
    expect(inc.querySelector('.v-inconclusive')!.textContent).toBe('inconclusive');
    expect(inc.querySelector('[data-testid=decide]')!.textContent).toBe('to decide: run both runs for ≥ 20 s');
    expect(container.querySelector('[data-metric=tps] [data-run-id="5"]')!.getAttribute('data-verdict')).toBe('no_change');

    // generator CPU follows the load: no verdict, no effect
    const cpu = container.querySelector('[data-metric=cpu_percent] [data-run-id="3"]')!;
    expect(cpu.querySelector('.verdict.v-none')!.textContent).toBe('no verdict');
    expect(cpu.querySelector('[data-testid=effect]')).toBeNull();
    expect(container.querySelector('[data-testid=compare-row][data-metric=cpu_percent] [data-testid=follows-load]')!.textContent).toBe('follows the load');
    expect(container.querySelector('[data-testid=compare-row][data-metric=tps] [data-testid=row-threshold]')!.textContent).toBe('±5 %');
    expect(container.querySelector('[data-testid=compare-counts]')!.textContent).not.toContain('no verdict');

    expect(container.querySelector('[data-metric=tps] [data-run-id="1"]')!.getAttribute('data-verdict')).toBe('baseline');
  });

  // The server rows of a real backend comparison (compare package, synthetic runs: #3 costs 20 % more
  // CPU per request, its monitor missed 2 seconds; #5 had no server monitor).
  it('shows the server rows: CPU % without a verdict, CPU per request and memory with verdict badges, no monitor as not comparable', async () => {
    stub({ ...res, metrics: [...res.metrics, ...serverRows] });
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
    await waitFor(() => expect(container.querySelector('[data-testid=compare-row][data-metric=server_cpu_us_per_request]')).not.toBeNull());
    const row = (m: string) => container.querySelector(`[data-testid=compare-row][data-metric=${m}]`)!;
    const cell = (m: string, id: number) => row(m).querySelector(`[data-run-id="${id}"]`)!;

    expect(row('server_cpu_percent').querySelector('[data-testid=follows-load]')).not.toBeNull();
    expect(cell('server_cpu_percent', 3).querySelector('.verdict.v-none')!.textContent).toBe('no verdict');

    const us = cell('server_cpu_us_per_request', 3);
    expect(row('server_cpu_us_per_request').querySelector('th')!.textContent).toContain('server CPU per request');
    expect(row('server_cpu_us_per_request').querySelector('[data-testid=follows-load]')).toBeNull();
    expect(row('server_cpu_us_per_request').querySelector('[data-testid=row-threshold]')!.textContent).toBe('±10 %');
    expect(us.querySelector('.val')!.textContent).toBe('236 µs/req');
    expect(us.querySelector('.verdict.v-regression')!.textContent).toBe('regression');
    expect(us.querySelector('[data-testid=effect]')!.textContent).toBe('+17.8 % [+10 %, +26.3 %]');
    expect(us.getAttribute('title')).toContain('practical threshold: ±10 %');

    // no monitor: no verdict, and why — never "no change"
    const none = cell('server_cpu_us_per_request', 5);
    expect(none.getAttribute('data-verdict')).toBe('none');
    expect(none.querySelector('.val')!.textContent).toBe('—');
    expect(none.querySelector('[data-testid=no-data]')!.textContent).toBe('not comparable: this run or the baseline had no server monitor');
    expect(cell('server_memory_bytes', 5).querySelector('[data-testid=no-data]')).not.toBeNull();

    // memory: no change within 10 %, its two gap seconds counted
    const mem = cell('server_memory_bytes', 3);
    expect(mem.querySelector('.verdict.v-no_change')!.textContent).toBe('no change');
    expect(mem.querySelector('[data-testid=gaps]')!.textContent).toBe('2 s without a monitor value left out');
    expect(mem.getAttribute('title')).toContain('seconds without a monitor value, left out: 2');

    // the baseline's own gap seconds are shown on its cell
    expect(cell('server_memory_bytes', 1).querySelector('[data-testid=gaps]')).toBeNull();
    stub({ ...res, metrics: [...res.metrics, ...serverRows.map((m) => ({ ...m, values: m.values.map((v) => (v.run_id === 1 ? { ...v, gaps: 3 } : v)) }))] });
    const again = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
    await waitFor(() => expect(again.container.querySelector('[data-metric=server_memory_bytes] [data-run-id="1"] [data-testid=gaps]')).not.toBeNull());
    expect(again.container.querySelector('[data-metric=server_memory_bytes] [data-run-id="1"] [data-testid=gaps]')!.textContent).toBe('3 s without a monitor value left out');

    // the headline counts the server verdicts like the others
    expect(container.querySelector('[data-testid=compare-counts]')!.textContent).toContain('regression');
  });

  it('says why a server row is not comparable in Chinese too', async () => {
    setLocale('zh-CN');
    try {
      stub({ ...res, metrics: [...res.metrics, ...serverRows] });
      const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
      await waitFor(() => expect(container.querySelector('[data-metric=server_cpu_us_per_request] [data-run-id="5"]')).not.toBeNull());
      const row = container.querySelector('[data-testid=compare-row][data-metric=server_cpu_us_per_request]')!;
      expect(row.querySelector('th')!.textContent).toContain('服务器每请求 CPU');
      expect(row.querySelector('[data-run-id="5"] [data-testid=no-data]')!.textContent).toBe('无法比较：本次运行或基线没有服务器监控');
      expect(row.querySelector('[data-run-id="3"] .val')!.textContent).toContain('µs/请求');
      expect(container.querySelector('[data-metric=server_memory_bytes] [data-run-id="3"] [data-testid=gaps]')!.textContent).toBe('已排除 2 秒无监控数据');
    } finally {
      setLocale('en');
    }
  });

  it('shows the load-shape warnings and overlays every run on each chart', async () => {
    stub();
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
    await waitFor(() => expect(container.querySelector('[data-testid=compare-warnings]')).not.toBeNull());
    const items = [...container.querySelectorAll('[data-testid=compare-warnings] li')].map((li) => li.textContent);
    expect(items).toHaveLength(res.warnings!.filter((w) => typeof w !== 'string' && w.load).length);
    expect(items[0]).toContain('applies a different load than the baseline');
    expect(container.querySelector('[data-testid=compare-warnings] .warn-kind')!.textContent).toBe('load differs');
    for (const id of ['tps', 'p95', 'p99', 'errors', 'cpu', 'vus']) {
      const chart = container.querySelector(`[data-testid=compare-chart-${id}]`)!;
      expect(chart.getAttribute('data-series')).toBe('3');
      // the union of the runs' (downsampled) seconds
      expect(chart.getAttribute('data-points')).toBe(String(alignSeries(res.series, [1, 3, 5], PICKS.tps)[0].length));
    }
  });

  it('shows data notes apart from the load warning, which appears only for a load difference', async () => {
    const notesOnly: CompareResponse = {
      ...res,
      warnings: [{ code: 'few_seconds', run_id: 5, message: '#5 has 3 usable seconds (of 5), fewer than 4: its verdicts are inconclusive' }],
    };
    stub(notesOnly);
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
    await waitFor(() => expect(container.querySelector('[data-testid=compare-notes]')).not.toBeNull());
    expect(container.querySelector('[data-testid=compare-warnings]')).toBeNull();
    expect(container.querySelector('[data-testid=compare-notes]')!.textContent).toContain('too few seconds');
  });

  it('edits the practical threshold: sent to the server through the URL, refused outside [0.1, 100]', async () => {
    const f = stub();
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1&threshold=10') });
    await waitFor(() => expect(container.querySelector('[data-testid=compare-threshold]')).not.toBeNull());
    expect(String(f.mock.calls[0][0])).toMatch(/&threshold=10$/);
    const input = container.querySelector<HTMLInputElement>('[data-testid=compare-threshold]')!;
    expect(input.value).toBe('5'); // what the server used (the fixture's answer)
    await fireEvent.input(input, { target: { value: '0' } });
    await fireEvent.change(input);
    expect(container.querySelector('[data-testid=compare-threshold-error]')!.textContent).toContain('from 0.1 to 100');
    await fireEvent.input(input, { target: { value: '2.5' } });
    await fireEvent.change(input);
    expect(location.hash).toBe('#/compare?ids=1,3,5&baseline=1&threshold=2.5');
  });

  it('shows an unusable threshold of the address instead of silently using the default', async () => {
    const f = stub();
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1&threshold=NaN') });
    await waitFor(() => expect(container.querySelector('[data-testid=compare-threshold-error]')).not.toBeNull());
    expect(String(f.mock.calls[0][0])).not.toContain('threshold');
    const msg = container.querySelector('[data-testid=compare-threshold-error]')!.textContent!;
    expect(msg).toContain('"NaN"');
    expect(msg).toContain('the default 5 % is used');
  });

  it('shows a run without a successful response: latency —, no verdict, a data note, an improvement withheld', async () => {
    // The fixture with run 3 as the backend answers for a target that failed every request.
    const dead = structuredClone(res);
    for (const m of dead.metrics) {
      const v = m.values.find((x) => x.run_id === 3)!;
      if (['p50', 'p90', 'p95', 'p99', 'max'].includes(m.metric)) {
        Object.assign(v, { value: null, delta: null, delta_pct: null, verdict: 'none', reason: 'no successful response: the latency is unknown, no verdict' });
        for (const k of ['effect', 'ci_low', 'ci_high', 'ci'] as const) delete v[k];
      }
      if (m.metric === 'tps')
        Object.assign(v, { verdict: 'inconclusive', decide_code: 'errors_rose', decide_hint: 'the error rate rose: fix the errors, then compare again', decide_seconds: undefined });
    }
    dead.warnings = [{ code: 'no_success', run_id: 3, message: '#3 had no successful response: its latency is unknown and its TPS 0' }];
    stub(dead);
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
    await waitFor(() => expect(container.querySelector('[data-testid=compare-notes]')).not.toBeNull());
    expect(container.querySelector('[data-testid=compare-warnings]')).toBeNull(); // not a load difference
    expect(container.querySelector('[data-testid=compare-notes] .warn-kind')!.textContent).toBe('no successful response');
    const p50 = container.querySelector('[data-metric=p50] [data-run-id="3"]')!;
    expect(p50.getAttribute('data-verdict')).toBe('none');
    expect(p50.querySelector('.val')!.textContent).toBe('—');
    expect(p50.querySelector('[data-testid=delta-pct]')!.textContent).toBe('—');
    const tps = container.querySelector('[data-metric=tps] [data-run-id="3"]')!;
    expect(tps.querySelector('[data-testid=decide]')!.textContent).toContain('the error rate rose');
    expect(tps.getAttribute('title')).toContain('successful responses per second');
  });

  it('changes the baseline through the URL', async () => {
    stub();
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=baseline-radio]')).toHaveLength(3));
    await fireEvent.change(container.querySelector('[data-testid=baseline-radio][value="3"]')!);
    expect(location.hash).toBe('#/compare?ids=1,3,5&baseline=3');
  });

  it('asks for 2–5 runs without calling the server, and shows a server refusal', async () => {
    const f = stub();
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=4') });
    expect(container.querySelector('[data-testid=compare-empty]')).not.toBeNull();
    expect(f).not.toHaveBeenCalled();

    stub({ error: { code: 'not_found', message: 'run 99 not found' } }, 404);
    const r2 = render(ComparePage, { query: new URLSearchParams('ids=1,99') });
    await waitFor(() => expect(r2.container.querySelector('[role=alert]')?.textContent).toContain('run 99 not found'));
  });
});
