import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FILTERS,
  comparePath,
  dayStart,
  historyPath,
  parseHistoryQuery,
  sortBy,
  splitTags,
  toRunQuery,
  withFilters,
} from './history';

const parse = (s: string) => parseHistoryQuery(new URLSearchParams(s));

describe('history URL state ⇄ filters', () => {
  it('reads every filter, sort and page from the hash query', () => {
    const f = parse('plan_id=3&status=finished&tag=baseline&from=2026-11-01&to=2026-11-30&thresholds=failed&outcome=failed,finished_with_errors&sort=p95_ms&order=asc&offset=100');
    expect(f).toEqual({
      plan_id: '3',
      status: 'finished',
      tag: 'baseline',
      from: '2026-11-01',
      to: '2026-11-30',
      thresholds: 'failed',
      outcome: 'finished_with_errors,failed',
      sort: 'p95_ms',
      order: 'asc',
      offset: 100,
    });
  });

  it('round-trips: parse(path(f)) is f, and a path is stable', () => {
    const views = [
      DEFAULT_FILTERS,
      { ...DEFAULT_FILTERS, plan_id: '7', tag: 'v1.2-rc_1', thresholds: 'passed' as const },
      { ...DEFAULT_FILTERS, outcome: 'passed,failed' },
      { ...DEFAULT_FILTERS, from: '2026-01-31', sort: 'rps' as const, order: 'desc' as const, offset: 50 },
      { ...DEFAULT_FILTERS, sort: 'started_at' as const, order: 'asc' as const },
    ];
    for (const f of views) {
      const path = historyPath(f);
      expect(path.startsWith('/runs')).toBe(true);
      expect(parse(path.replace(/^\/runs\??/, ''))).toEqual(f);
      expect(historyPath(parse(path.replace(/^\/runs\??/, '')))).toBe(path);
    }
  });

  it('leaves the defaults out of the URL', () => {
    expect(historyPath(DEFAULT_FILTERS)).toBe('/runs');
    expect(historyPath({ ...DEFAULT_FILTERS, plan_id: '1', offset: 50 })).toBe('/runs?plan_id=1&offset=50');
    expect(historyPath({ ...DEFAULT_FILTERS, sort: 'rps' })).toBe('/runs?sort=rps&order=desc');
  });

  it('drops what is not valid instead of sending it to the server', () => {
    expect(parse('plan_id=abc&status=weird&tag=Bad Tag!&from=2026-02-30&to=yesterday&thresholds=maybe&outcome=ok,,nope&sort=name&order=up&offset=-5')).toEqual(
      DEFAULT_FILTERS,
    );
    expect(parse('tag=BASELINE').tag).toBe('baseline');
    expect(parse('outcome=failed,bogus,failed').outcome).toBe('failed');
  });

  it('goes back to the first page on a filter change but not on paging', () => {
    const f = { ...DEFAULT_FILTERS, offset: 150 };
    expect(withFilters(f, { status: 'failed' }).offset).toBe(0);
    expect(withFilters(f, { offset: 200 }).offset).toBe(200);
  });

  it('sorts: a new column descending first, the same column flips', () => {
    const a = sortBy(DEFAULT_FILTERS, 'p95_ms');
    expect([a.sort, a.order]).toEqual(['p95_ms', 'desc']);
    const b = sortBy(a, 'p95_ms');
    expect([b.sort, b.order]).toEqual(['p95_ms', 'asc']);
    expect(sortBy(DEFAULT_FILTERS, 'started_at').order).toBe('asc');
  });

  it('maps to GET /api/runs parameters: days become local-midnight RFC 3339, `to` inclusive', () => {
    const q = toRunQuery(parse('plan_id=2&from=2026-11-01&to=2026-11-30&thresholds=passed&outcome=failed&sort=rps&order=asc&offset=50'));
    expect(q.plan_id).toBe('2');
    expect(q.from).toBe(new Date(2026, 10, 1).toISOString().replace('.000Z', 'Z'));
    expect(q.to).toBe(new Date(2026, 11, 1).toISOString().replace('.000Z', 'Z'));
    expect(q).toMatchObject({ thresholds: 'passed', outcome: 'failed', sort: 'rps', order: 'asc', limit: 50, offset: 50 });
    expect(dayStart('2026-12-31', 1)).toBe(new Date(2027, 0, 1).toISOString().replace('.000Z', 'Z'));
    // the default order is the server's: not sent
    expect(toRunQuery(DEFAULT_FILTERS)).toEqual({
      plan_id: undefined, status: undefined, tag: undefined, from: undefined, to: undefined, thresholds: undefined, outcome: undefined,
      sort: undefined, order: undefined, limit: 50, offset: undefined,
    });
  });

  it('builds the compare link oldest first, the oldest as baseline', () => {
    expect(comparePath([9, 3, 5])).toBe('/compare?ids=3,5,9&baseline=3');
    expect(comparePath([9, 3], 9)).toBe('/compare?ids=3,9&baseline=9');
    expect(splitTags(' Baseline, v1.2  nightly ')).toEqual(['baseline', 'v1.2', 'nightly']);
  });
});
