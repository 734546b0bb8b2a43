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
});
