import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import HistoryPage from './HistoryPage.svelte';
import { setLocale } from '../lib/i18n.svelte';

afterEach(() => {
  vi.unstubAllGlobals();
  location.hash = '';
});

function runs(from: number, n: number) {
  return Array.from({ length: n }, (_, i) => ({
    id: from - i,
    plan_id: 1,
    plan_name: 'static page',
    status: i === 0 ? 'running' : 'finished',
    started_at: '2026-11-29T10:00:00Z',
    duration_s: 10,
    requests: 1000,
    rps: 100,
    p95_ms: 2.5,
    error_rate: 0.015,
  }));
}

describe('HistoryPage', () => {
  it('lists runs with their ids, filters by plan and pages with limit/offset', async () => {
    const f = vi.fn(async (url: string) => {
      const body = url.startsWith('/api/plans/1/trend')
        ? { items: [] }
        : url.startsWith('/api/plans')
          ? { items: [{ id: 1, name: 'static page' }], total: 1 }
          : { items: runs(120, 50), total: 120 };
      return new Response(JSON.stringify(body), { status: 200 });
    });
    vi.stubGlobal('fetch', f);
    const { container } = render(HistoryPage, { query: new URLSearchParams('plan_id=1&offset=50') });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(50));
    const first = container.querySelector('[data-testid=run-row]')!;
    expect(first.getAttribute('data-run-id')).toBe('120');
    expect(first.textContent).toContain('1.5 %');
    expect(f.mock.calls.map((c) => c[0])).toContain('/api/runs?plan_id=1&limit=50&offset=50');
    expect(f.mock.calls.map((c) => c[0])).toContain('/api/plans/1/trend?limit=50');
    expect(container.textContent).toContain('51–100 of 120');

    (container.querySelector('[data-testid=next-page]') as HTMLButtonElement).click();
    expect(location.hash).toBe('#/runs?plan_id=1&offset=100');
  });

  it('marks runs over agents with their count and degraded, local runs with nothing', async () => {
    const items = runs(3, 3).map((r, i) => ({ ...r, status: 'finished', agents: [4, 2, 0][i], degraded: i === 1 }));
    vi.stubGlobal('fetch', vi.fn(async (url: string) =>
      new Response(JSON.stringify(url.startsWith('/api/plans') ? { items: [], total: 0 } : { items, total: 3 }), { status: 200 })));
    const { container } = render(HistoryPage, { query: new URLSearchParams() });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(3));
    const marks = [...container.querySelectorAll('[data-testid=run-row]')].map((r) =>
      [...r.querySelectorAll('[data-testid=run-agents], [data-testid=run-degraded]')].map((b) => b.textContent).join(' '));
    expect(marks).toEqual(['4 agents', '2 agents degraded', '']);
  });

  it('shows the failure when the runs cannot be loaded', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response('oops', { status: 500 })));
    const { container } = render(HistoryPage, { query: new URLSearchParams() });
    await waitFor(() => expect(container.querySelector('[role=alert]')?.textContent).toContain('Could not load the runs'));
  });

  it('has a Thresholds column: ✓ pass, ✗ fail, — for none or absent', async () => {
    const items = runs(4, 4).map((r, i) => ({ ...r, status: 'finished', rps: 49.00980196 }));
    (items[0] as Record<string, unknown>).thresholds_ok = true;
    (items[1] as Record<string, unknown>).thresholds_ok = false;
    (items[2] as Record<string, unknown>).thresholds_ok = null; // items[3]: absent
    vi.stubGlobal(
      'fetch',
      vi.fn(async (url: string) => new Response(JSON.stringify(url.startsWith('/api/plans') ? { items: [], total: 0 } : { items, total: 4 }), { status: 200 })),
    );
    const { container } = render(HistoryPage, { query: new URLSearchParams() });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(4));
    const th = [...container.querySelectorAll('thead th')].map((e) => e.textContent);
    expect(th).toContain('Thresholds');
    const marks = [...container.querySelectorAll('[data-testid=run-row]')].map((r) => r.querySelector('[data-thresholds]')?.textContent?.trim());
    expect(marks).toEqual(['✓ pass', '✗ fail', '—', '—']);
    expect(container.querySelector('[data-testid=run-row]')!.textContent).toContain('49');
    expect(container.querySelector('[data-testid=run-row]')!.textContent).not.toContain('49.0098');
  });
});

describe('HistoryPage, filters in the URL, compare and delete', () => {
  function stubRuns(items: Record<string, unknown>[] = runs(9, 4).map((r) => ({ ...r, status: 'finished', tags: r.id === 9 ? ['baseline'] : [] }))) {
    const f = vi.fn(async (url: string, init: RequestInit = {}) => {
      if (init.method === 'DELETE') return new Response(null, { status: 204 });
      if (url.startsWith('/api/plans/')) return new Response(JSON.stringify({ items: [] }), { status: 200 });
      if (url.startsWith('/api/plans')) return new Response(JSON.stringify({ items: [{ id: 1, name: 'static page' }], total: 1 }), { status: 200 });
      return new Response(JSON.stringify({ items, total: items.length }), { status: 200 });
    });
    vi.stubGlobal('fetch', f);
    return f;
  }

  it('sends every filter of the URL to the API and shows them in the controls', async () => {
    const f = stubRuns();
    const { container } = render(HistoryPage, {
      query: new URLSearchParams('status=finished&tag=baseline&from=2026-11-01&to=2026-11-02&thresholds=failed&outcome=failed,finished_with_errors&sort=p95_ms&order=asc'),
    });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(4));
    const url = new URL(String(f.mock.calls.find((c) => String(c[0]).startsWith('/api/runs'))![0]), 'http://x');
    const p = Object.fromEntries(url.searchParams);
    expect(p).toMatchObject({ status: 'finished', tag: 'baseline', thresholds: 'failed', outcome: 'finished_with_errors,failed', sort: 'p95_ms', order: 'asc', limit: '50' });
    expect(new Date(p.from).getTime()).toBe(new Date(2026, 10, 1).getTime());
    expect(new Date(p.to).getTime()).toBe(new Date(2026, 10, 3).getTime());
    expect((container.querySelector('#filter-status') as HTMLSelectElement).value).toBe('finished');
    expect((container.querySelector('#filter-tag') as HTMLInputElement).value).toBe('baseline');
    expect((container.querySelector('#filter-from') as HTMLInputElement).value).toBe('2026-11-01');
    expect((container.querySelector('#filter-thresholds') as HTMLSelectElement).value).toBe('failed');
    expect((container.querySelector('#filter-outcome') as HTMLSelectElement).value).toBe('finished_with_errors,failed');
    expect(container.querySelector('th[aria-sort=ascending] [data-sort=p95_ms]')).not.toBeNull();
  });

  it('writes filter and sort changes into the hash, back on the first page', async () => {
    stubRuns();
    const { container } = render(HistoryPage, { query: new URLSearchParams('plan_id=1&offset=50') });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(4));
    await fireEvent.click(container.querySelector('[data-sort=rps]')!);
    expect(location.hash).toBe('#/runs?plan_id=1&sort=rps&order=desc');
    const th = container.querySelector('#filter-thresholds') as HTMLSelectElement;
    th.value = 'passed';
    await fireEvent.change(th);
    expect(location.hash).toBe('#/runs?plan_id=1&thresholds=passed');
    const oc = container.querySelector('#filter-outcome') as HTMLSelectElement;
    oc.value = 'failed';
    await fireEvent.change(oc);
    expect(location.hash).toBe('#/runs?plan_id=1&outcome=failed');
    const tag = container.querySelector('#filter-tag') as HTMLInputElement;
    await fireEvent.input(tag, { target: { value: 'Nightly' } });
    await fireEvent.keyDown(tag, { key: 'Enter' });
    expect(location.hash).toBe('#/runs?plan_id=1&tag=nightly');
    const from = container.querySelector('#filter-from') as HTMLInputElement;
    await fireEvent.change(from, { target: { value: '2026-11-29' } });
    expect(location.hash).toBe('#/runs?plan_id=1&from=2026-11-29');
    // a tag chip filters by its tag
    await fireEvent.click(container.querySelector('[data-testid=run-row] [data-tag=baseline]')!);
    expect(location.hash).toBe('#/runs?plan_id=1&tag=baseline');
  });

  it('selects 2–5 runs and opens the compare page with them', async () => {
    stubRuns(runs(9, 7).map((r) => ({ ...r, status: 'finished' })));
    const { container } = render(HistoryPage, { query: new URLSearchParams() });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(7));
    const boxes = [...container.querySelectorAll('[data-testid=select-run]')] as HTMLInputElement[];
    const btn = container.querySelector('[data-testid=compare-selected]') as HTMLButtonElement;
    expect(btn.disabled).toBe(true);
    await fireEvent.click(boxes[0]);
    expect(btn.disabled).toBe(true);
    expect(btn.textContent).toContain('Compare (1)');
    for (const b of boxes.slice(1, 5)) await fireEvent.click(b);
    expect(btn.textContent).toContain('Compare (5)');
    expect(boxes[5].disabled).toBe(true); // at most 5
    await fireEvent.click(btn);
    expect(location.hash).toBe('#/compare?ids=5,6,7,8,9&baseline=5');
  });

  it('deletes a run after confirmation in a dialog', async () => {
    const f = stubRuns();
    const { container } = render(HistoryPage, { query: new URLSearchParams() });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(4));
    await fireEvent.click(container.querySelector('[data-run-id="8"] [data-testid=delete-run-row]')!);
    expect(container.querySelector('[data-testid=confirm-dialog]')!.textContent).toContain('Delete run #8?');
    await fireEvent.click(container.querySelector('[data-testid=confirm-cancel]')!);
    expect(container.querySelector('[data-testid=confirm-dialog]')).toBeNull();
    expect(f.mock.calls.some((c) => (c[1] as RequestInit | undefined)?.method === 'DELETE')).toBe(false);

    await fireEvent.click(container.querySelector('[data-run-id="8"] [data-testid=delete-run-row]')!);
    await fireEvent.click(container.querySelector('[data-testid=confirm-ok]')!);
    await waitFor(() => expect(container.querySelector('[data-testid=confirm-dialog]')).toBeNull());
    const del = f.mock.calls.find((c) => (c[1] as RequestInit | undefined)?.method === 'DELETE')!;
    expect(del[0]).toBe('/api/runs/8');
  });
});

describe('HistoryPage, server CPU max', () => {
  function stub(items: Record<string, unknown>[]) {
    const f = vi.fn(async (url: string) =>
      new Response(JSON.stringify(url.startsWith('/api/plans') ? { items: [], total: 0 } : { items, total: items.length }), { status: 200 }),
    );
    vi.stubGlobal('fetch', f);
    return f;
  }
  const headers = (c: HTMLElement) => [...c.querySelectorAll('thead th')].map((e) => e.textContent?.replace(/[▲▼↕]/g, '').trim());
  const cells = (c: HTMLElement) =>
    [...c.querySelectorAll('[data-testid=run-row]')].map((r) => r.querySelector('[data-testid=server-cpu-max]')?.textContent);

  it('has no column when no listed run has a value', async () => {
    stub(runs(3, 3).map((r, i) => ({ ...r, status: 'finished', server_cpu_max: i === 1 ? undefined : null })));
    const { container } = render(HistoryPage, { query: new URLSearchParams() });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(3));
    expect(headers(container)).not.toContain('server CPU max');
    expect(container.querySelector('[data-sort=server_cpu_max]')).toBeNull();
    expect(cells(container)).toEqual([undefined, undefined, undefined]);
  });

  it('shows the column when a run has a value, — for the others, and sorts by it on the server', async () => {
    const cpu = [187.25, null, 42.5];
    stub(runs(3, 3).map((r, i) => ({ ...r, status: 'finished', server_cpu_max: cpu[i] })));
    const { container } = render(HistoryPage, { query: new URLSearchParams() });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(3));
    expect(headers(container)).toContain('server CPU max');
    expect(cells(container)).toEqual(['187 %', '—', '42.5 %']);
    await fireEvent.click(container.querySelector('[data-sort=server_cpu_max]')!);
    expect(location.hash).toBe('#/runs?sort=server_cpu_max&order=desc');
  });

  it('sorted by it: the API is asked so, and the header stays on a page without values (zh-CN)', async () => {
    const f = stub(runs(3, 1).map((r) => ({ ...r, status: 'finished', server_cpu_max: null })));
    setLocale('zh-CN');
    try {
      const { container } = render(HistoryPage, { query: new URLSearchParams('sort=server_cpu_max&order=asc') });
      await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(1));
      expect(f.mock.calls.map((c) => c[0])).toContain('/api/runs?sort=server_cpu_max&order=asc&limit=50');
      expect(container.querySelector('th[aria-sort=ascending] [data-sort=server_cpu_max]')?.textContent).toContain('服务器 CPU 峰值');
      expect(cells(container)).toEqual(['—']);
    } finally {
      setLocale('en');
    }
  });
});
