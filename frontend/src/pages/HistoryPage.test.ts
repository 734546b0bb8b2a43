import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, waitFor } from '@testing-library/svelte';
import HistoryPage from './HistoryPage.svelte';

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
      const body = url.startsWith('/api/plans')
        ? { items: [{ id: 1, name: 'static page' }], total: 1 }
        : { items: runs(60, 25), total: 60 };
      return new Response(JSON.stringify(body), { status: 200 });
    });
    vi.stubGlobal('fetch', f);
    const { container } = render(HistoryPage, { query: new URLSearchParams('plan_id=1&offset=25') });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(25));
    const first = container.querySelector('[data-testid=run-row]')!;
    expect(first.getAttribute('data-run-id')).toBe('60');
    expect(first.textContent).toContain('1.5 %');
    expect(f.mock.calls.map((c) => c[0])).toContain('/api/runs?plan_id=1&limit=25&offset=25');
    expect(container.textContent).toContain('26–50 of 60');

    (container.querySelector('[data-testid=next-page]') as HTMLButtonElement).click();
    expect(location.hash).toBe('#/runs?plan_id=1&offset=50');
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
