import { describe, expect, it } from 'vitest';
import {
  fmtCores,
  fmtNum,
  fmtPrecisePct,
  fmtThresholdValue,
  fmtTime,
  hasLatencyData,
  thresholdMetric,
  thresholdPassed,
  tzLabel,
} from './format';

describe('threshold values', () => {
  it('shows error_rate (a fraction) as a percentage', () => {
    expect(fmtThresholdValue('error_rate<1%', 0.0123)).toBe('1.23 %');
    expect(fmtThresholdValue('error_rate < 0.05', 0.5)).toBe('50 %');
    expect(fmtThresholdValue('error_rate<0.01%', 0.00045)).toBe('0.045 %');
    expect(fmtThresholdValue('error_rate<1%', 0)).toBe('0 %');
    expect(fmtThresholdValue('error_rate<1%', 1)).toBe('100 %');
  });

  it('shows latencies in ms and rps in req/s', () => {
    expect(fmtThresholdValue('p(95)<200ms', 12.34)).toBe('12.3 ms');
    expect(fmtThresholdValue('avg<1s', 0.5)).toBe('0.5 ms');
    expect(fmtThresholdValue('rps>1000', 49.00980196)).toBe('49 req/s');
    expect(thresholdMetric(' med < 3ms')).toBe('latency');
    expect(thresholdMetric('max<2s')).toBe('latency');
  });

  it('null means no data, and a threshold without data fails', () => {
    expect(fmtThresholdValue('p(95)<200ms', null)).toBe('no data');
    expect(fmtThresholdValue('p(95)<200ms', undefined)).toBe('no data');
    expect(thresholdPassed({ ok: true, value: null })).toBe(false);
    expect(thresholdPassed({ ok: true, value: 3 })).toBe(true);
    expect(thresholdPassed({ ok: false, value: 3 })).toBe(false);
    expect(fmtPrecisePct(0.0001234)).toBe('0.0123 %');
  });
});

describe('numbers, CPU and times', () => {
  it('rounds API numbers for display', () => {
    expect(fmtNum(49.00980196)).toBe('49');
    expect(fmtNum(3.14159)).toBe('3.14');
    expect(fmtNum(3646203)).toBe('3,646,203');
  });

  it('prints CPU percent of one core as cores', () => {
    expect(fmtCores(127)).toBe('1.27 cores');
    expect(fmtCores(100)).toBe('1 core');
    expect(fmtCores(50)).toBe('0.5 cores');
    expect(fmtCores(null)).toBe('—');
  });

  it('says which clock a time is on', () => {
    const zone = tzLabel(new Date('2026-11-29T10:00:00Z'));
    expect(zone).not.toBe('');
    expect(fmtTime('2026-11-29T10:00:00Z', { zone: true })).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d ${zone.replace(/[+]/g, '\\+')}$`));
    expect(fmtTime('2026-11-29T10:00:00Z')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  });

  it('knows a latency block without any response is no data', () => {
    const zeros = { min: 0, mean: 0, p50: 0, p95: 0, p99: 0, max: 0 };
    expect(hasLatencyData(zeros, {})).toBe(false);
    expect(hasLatencyData(zeros, undefined)).toBe(false);
    expect(hasLatencyData(undefined, { '200': 1 })).toBe(false);
    expect(hasLatencyData({ ...zeros, max: 1.2 }, {})).toBe(true);
    expect(hasLatencyData(zeros, { '200': 3 })).toBe(true);
  });
});
