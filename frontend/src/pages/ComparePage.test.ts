import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import ComparePage from './ComparePage.svelte';
import fixture from '../test-fixtures/compare-1-3-5.json';
import type { CompareResponse } from '../lib/types';

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

    const tps = container.querySelector('[data-metric=tps] [data-run-id="3"]')!;
    expect(tps.getAttribute('data-verdict')).toBe('improvement');
    expect(tps.querySelector('.verdict')!.textContent).toBe('improvement');
    expect(tps.querySelector('[data-testid=delta-pct]')!.textContent).toBe('+111 %');
    expect(tps.getAttribute('title')).toContain('p-value: < 0.0001');
    expect(tps.getAttribute('title')).toContain('Mann-Whitney');

    const p95 = container.querySelector('[data-metric=p95] [data-run-id="3"]')!;
    expect(p95.querySelector('.verdict.v-regression')!.textContent).toBe('regression');
    expect(p95.getAttribute('title')).toMatch(/99 % interval of Δ: \[\+0\.243 ms, \+0\.382 ms\]/);

    const inc = container.querySelector('[data-metric=tps] [data-run-id="5"]')!;
    expect(inc.querySelector('.v-inconclusive')!.textContent).toBe('inconclusive');
    expect(inc.getAttribute('title')).toContain('fewer than 10 usable seconds');

    expect(container.querySelector('[data-metric=tps] [data-run-id="1"]')!.getAttribute('data-verdict')).toBe('baseline');
  });

  it('shows the load-shape warnings and overlays every run on each chart', async () => {
    stub();
    const { container } = render(ComparePage, { query: new URLSearchParams('ids=1,3,5&baseline=1') });
    await waitFor(() => expect(container.querySelector('[data-testid=compare-warnings]')).not.toBeNull());
    const items = [...container.querySelectorAll('[data-testid=compare-warnings] li')].map((li) => li.textContent);
    expect(items).toHaveLength(res.warnings!.length);
    expect(items[0]).toContain('applies a different load than the baseline');
    expect(container.querySelector('[data-testid=compare-warnings] .warn-kind')!.textContent).toBe('load differs');
    for (const id of ['tps', 'p95', 'p99', 'errors', 'cpu', 'vus']) {
      const chart = container.querySelector(`[data-testid=compare-chart-${id}]`)!;
      expect(chart.getAttribute('data-series')).toBe('3');
      expect(chart.getAttribute('data-points')).toBe('4');
    }
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
