import { describe, expect, it } from 'vitest';
import { alignSeries, compareQueryString, fmtDeltaPct, fmtMetricDelta, fmtMetricValue, PICKS, parseCompareQuery, verdictCounts } from './compare';
import type { CompareResponse, Sample } from './types';
import fixture from '../test-fixtures/compare-1-3-5.json';
import { sample } from '../test-fixtures/wire';

const s = (elapsed: number, rps: number, p95: number | null = 1): Sample => sample({
  t: elapsed * 1000,
  elapsed_s: elapsed,
  requests: rps,
  rps,
  errors: 0,
  active_vus: 1,
  latency_ms: p95 === null ? { p95: 0, p99: 0, max: 0 } : { p95, p99: p95 * 2, max: p95 * 3 },
  status_codes: p95 === null ? {} : { '200': rps },
});

describe('compare helpers', () => {
  it('reads ids and baseline from the URL (distinct, positive; baseline must be one of them)', () => {
    expect(parseCompareQuery(new URLSearchParams('ids=3,1,3,x,0,7&baseline=1'))).toEqual({ ids: [3, 1, 7], baseline: 1 });
    expect(parseCompareQuery(new URLSearchParams('ids=3,4&baseline=9'))).toEqual({ ids: [3, 4], baseline: null });
    expect(compareQueryString([3, 4], 4)).toBe('/compare?ids=3,4&baseline=4');
    expect(compareQueryString([3, 4], null)).toBe('/compare?ids=3,4');
  });

  it('overlays downsampled series on the union of their seconds, null where a run has no point', () => {
    const series = { '1': [s(1, 10), s(3, 30), s(9, 90)], '2': [s(1, 11), s(2, 22), s(9, 99, null)] };
    const [x, a, b] = alignSeries(series, [1, 2], PICKS.tps);
    expect(x).toEqual([1, 2, 3, 9]);
    expect(a).toEqual([10, null, 30, 90]);
    expect(b).toEqual([11, 22, null, 99]);
    // a second without any response has no latency: a gap, not 0 ms
    expect(alignSeries(series, [1, 2], PICKS.p95)[2]).toEqual([1, 1, null, null]);
    expect(alignSeries(undefined, [1], PICKS.tps)).toEqual([[], []]);
  });

  it('prints values and deltas in the metric unit', () => {
    expect(fmtMetricValue('ms', 0.442)).toBe('0.442 ms');
    expect(fmtMetricValue('req/s', 70799.6)).toBe('70,800 req/s');
    expect(fmtMetricValue('fraction', 0.0123)).toBe('1.23 %');
    expect(fmtMetricValue('% of one core', 172)).toBe('1.72 cores');
    expect(fmtMetricValue('bytes', 48128000)).toBe('45.9 MiB');
    expect(fmtMetricDelta('ms', -0.162)).toBe('−0.162 ms');
    expect(fmtMetricDelta('fraction', 0.002)).toBe('+0.2 pp');
    expect(fmtMetricDelta('ms', 0)).toBe('±0');
    expect(fmtDeltaPct(111.27)).toBe('+111 %');
    expect(fmtDeltaPct(-14.08)).toBe('−14.1 %');
    expect(fmtDeltaPct(null)).toBe('—');
  });

  it('counts the verdicts of a real response (baseline cells left out)', () => {
    const c = verdictCounts((fixture as unknown as CompareResponse).metrics);
    expect(c.baseline).toBeUndefined();
    expect(Object.values(c).reduce((a, b) => a + b, 0)).toBe(2 * (fixture as unknown as CompareResponse).metrics.length);
  });
});
