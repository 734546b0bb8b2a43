import { describe, expect, it } from 'vitest';
import {
  alignSeries,
  compareQueryString,
  decideText,
  fmtDeltaPct,
  fmtEffect,
  fmtEffectCI,
  fmtMetricDelta,
  fmtMetricValue,
  fmtThreshold,
  isLoadWarning,
  noDataText,
  PICKS,
  parseCompareQuery,
  verdictCounts,
} from './compare';
import { setLocale } from './i18n.svelte';
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
    expect(parseCompareQuery(new URLSearchParams('ids=3,1,3,x,0,7&baseline=1'))).toEqual({ ids: [3, 1, 7], baseline: 1, threshold: null, badThreshold: null });
    expect(parseCompareQuery(new URLSearchParams('ids=3,4&baseline=9&threshold=2.5'))).toEqual({ ids: [3, 4], baseline: null, threshold: 2.5, badThreshold: null });
    for (const bad of ['0', '-1', '101', 'x', ''])
      expect(parseCompareQuery(new URLSearchParams(`ids=3,4&threshold=${bad}`)).threshold).toBeNull();
    // an unusable threshold in the address is kept to be shown, never silently replaced
    for (const [qs, shown] of [['threshold=NaN', 'NaN'], ['threshold=1e-320', '1e-320'], ['threshold=0.05', '0.05'], ['threshold=5&threshold=0', '5, 0'], ['threshold=0x10', '0x10']])
      expect(parseCompareQuery(new URLSearchParams(`ids=3,4&${qs}`))).toMatchObject({ threshold: null, badThreshold: shown });
    expect(parseCompareQuery(new URLSearchParams('ids=3,4&threshold=0.1'))).toMatchObject({ threshold: 0.1, badThreshold: null });
    expect(compareQueryString([3, 4], 4)).toBe('/compare?ids=3,4&baseline=4');
    expect(compareQueryString([3, 4], null)).toBe('/compare?ids=3,4');
    expect(compareQueryString([3, 4], 4, 10)).toBe('/compare?ids=3,4&baseline=4&threshold=10');
    expect(compareQueryString([3, 4], null, 0)).toBe('/compare?ids=3,4');
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
    // a second without a reading of its own (interval_s 0): its rates are gaps
    const stalled = { '1': [s(1, 10), { ...s(2, 0), interval_s: 0 }, { ...s(3, 20), interval_s: 2 }] };
    expect(alignSeries(stalled, [1], PICKS.tps)[1]).toEqual([10, null, 20]);
    expect(alignSeries(stalled, [1], PICKS.errors)[1]).toEqual([0, null, 0]);
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
    expect(c.none).toBeUndefined(); // no verdict: not counted
    const judged = (fixture as unknown as CompareResponse).metrics.flatMap((m) => m.values).filter((v) => v.verdict !== 'baseline' && v.verdict !== 'none');
    expect(Object.values(c).reduce((a, b) => a + b, 0)).toBe(judged.length);
    expect(judged.length).toBeGreaterThan(0);
  });

  it('prints effects with their interval, thresholds and what would decide, in both languages', () => {
    const rel = { metric: 'tps', unit: 'req/s', higher_is_better: true, effect_kind: 'relative', threshold: 0.05, values: [] };
    const abs = { metric: 'error_rate', unit: 'fraction', higher_is_better: false, effect_kind: 'absolute', threshold: 0.001, values: [] };
    const v = { run_id: 2, value: 800, verdict: 'regression', effect: -0.201, ci_low: -0.25, ci_high: -0.152 };
    expect(fmtEffect(rel, -0.201)).toBe('−20.1 %');
    expect(fmtEffectCI(rel, v)).toBe('−20.1 % [−25 %, −15.2 %]');
    expect(fmtEffectCI(rel, { ...v, effect: undefined })).toBe('');
    expect(fmtEffect(abs, 0.002)).toBe('+0.2 pp');
    expect(fmtThreshold(rel)).toBe('±5 %');
    expect(fmtThreshold(abs)).toBe('±0.1 pp');
    expect(fmtThreshold({ ...rel, threshold: undefined })).toBe('');
    const inc = { run_id: 2, value: 1, verdict: 'inconclusive', decide_code: 'longer_run', decide_seconds: 45, decide_hint: 'run both runs for ≥ 45 s' };
    expect(decideText(inc)).toBe('to decide: run both runs for ≥ 45 s');
    expect(decideText({ ...inc, decide_code: 'too_noisy' })).toContain('noise is too high');
    expect(decideText({ ...inc, decide_code: 'unknown', decide_hint: 'server text' })).toBe('server text');
    expect(decideText({ ...inc, verdict: 'no_change' })).toBe('');
    setLocale('zh-CN');
    try {
      expect(decideText(inc)).toBe('如需结论：两次运行都至少运行 45 秒');
    } finally {
      setLocale('en');
    }
  });

  it('says why a server value has no verdict: only for "none" with a reason code; an unknown code keeps the server text', () => {
    const v = { run_id: 2, value: null, verdict: 'none', reason_code: 'monitor_gaps', gaps: 9, reason: 'monitor gaps: 9 of the 28 usable seconds' };
    expect(noDataText(v)).toBe('not comparable: the server monitor missed too many seconds of this run or the baseline');
    expect(noDataText({ ...v, reason_code: 'no_monitor' })).toBe('not comparable: this run or the baseline had no server monitor');
    expect(noDataText({ ...v, reason_code: 'later_code' })).toBe(v.reason);
    expect(noDataText({ ...v, reason_code: undefined })).toBe('');
    expect(noDataText({ ...v, verdict: 'inconclusive' })).toBe('');
    expect(fmtMetricValue('µs/request', 236.43)).toBe('236 µs/req');
    setLocale('zh-CN');
    try {
      expect(noDataText(v)).toBe('无法比较：本次运行或基线中服务器监控缺失的秒数过多');
      expect(fmtMetricValue('µs/request', 236.43)).toBe('236 µs/请求');
    } finally {
      setLocale('en');
    }
  });

  it('tells load warnings from data notes', () => {
    expect(isLoadWarning({ code: 'few_seconds', message: 'x' })).toBe(false);
    expect(isLoadWarning({ code: 'generator_bound', message: 'x' })).toBe(false);
    expect(isLoadWarning({ code: 'load_differs', message: 'x' })).toBe(true);
    expect(isLoadWarning({ code: 'new_code', load: true, message: 'x' })).toBe(true);
    expect(isLoadWarning('plain text')).toBe(false);
  });
});
