import { describe, expect, it } from 'vitest';
import { SeriesStore } from './series';
import type { Sample } from './types';
import { sample as wireSample } from '../test-fixtures/wire';

function sample(elapsed: number, over: Partial<Sample> = {}): Sample {
  return wireSample({
    t: 1764460000000 + elapsed * 1000,
    elapsed_s: elapsed,
    requests: 100 * elapsed,
    rps: 100 * elapsed,
    errors: elapsed % 2,
    latency_ms: { p50: elapsed, p95: elapsed * 2, p99: elapsed * 3 },
    active_vus: 10,
    client: { cpu_percent: 50 + elapsed, rss_bytes: 32 * 1024 * 1024 },
    ...over,
  });
}

describe('SeriesStore', () => {
  it('keeps samples as aligned columns for uPlot', () => {
    const s = new SeriesStore();
    s.push(sample(1));
    s.push(sample(2));
    s.push(sample(3));
    expect(s.length).toBe(3);
    const [x, rps, p95, rss] = s.data(['rps', 'p95', 'rss_mib']);
    expect(x).toEqual([1, 2, 3]);
    expect(rps).toEqual([100, 200, 300]);
    expect(p95).toEqual([2, 4, 6]);
    expect(rss).toEqual([32, 32, 32]);
    expect(s.data(['cpu', 'vus', 'errors'])).toEqual([
      [1, 2, 3],
      [51, 52, 53],
      [10, 10, 10],
      [1, 0, 1],
    ]);
  });

  it('sums requests and errors and remembers the last second', () => {
    const s = new SeriesStore();
    s.push(sample(1));
    s.push(sample(2, { generator_bound: true }));
    s.push(sample(3));
    expect(s.totalRequests).toBe(600);
    expect(s.totalErrors).toBe(2);
    expect(s.generatorBoundSeconds).toBe(1);
    expect(s.last?.elapsed_s).toBe(3);
  });

  it('ignores duplicate and out-of-order seconds', () => {
    const s = new SeriesStore();
    expect(s.push(sample(1))).toBe(true);
    expect(s.push(sample(2))).toBe(true);
    expect(s.push(sample(2))).toBe(false);
    expect(s.push(sample(1))).toBe(false);
    expect(s.data(['rps'])[0]).toEqual([1, 2]);
    expect(s.totalRequests).toBe(300);
  });

  it('plots missing latency and client values as gaps (null), not zero', () => {
    const s = new SeriesStore();
    // Seconds stored by older versions may lack latency and client figures.
    s.push({ ...sample(1), latency_ms: null, client: undefined } as unknown as Sample);
    const [, p50, cpu, rss] = s.data(['p50', 'cpu', 'rss_mib']);
    expect(p50).toEqual([null]);
    expect(cpu).toEqual([null]);
    expect(rss).toEqual([null]);
  });

  it('plots the rates of a second without a reading of its own (interval_s 0) as gaps', () => {
    const s = new SeriesStore();
    const noLatency = { min: 0, mean: 0, p50: 0, p75: 0, p90: 0, p95: 0, p99: 0, p99_9: 0, max: 0 };
    s.push(sample(1));
    s.push(sample(2, { interval_s: 0, requests: 0, rps: 0, errors: 0, latency_ms: noLatency, status_codes: {} }));
    s.push(sample(3, { interval_s: 2, requests: 600, rps: 300 }));
    expect(s.data(['rps', 'errors', 'p95', 'vus'])).toEqual([
      [1, 2, 3],
      [100, null, 300],
      [1, null, 1],
      [2, null, 6],
      [10, 10, 10],
    ]);
    expect(s.totalRequests).toBe(700);
  });

  it('drops the oldest seconds beyond its capacity but keeps totals', () => {
    const s = new SeriesStore(8); // slack = 1
    for (let i = 1; i <= 20; i++) s.push(sample(i));
    expect(s.length).toBeLessThanOrEqual(8);
    expect(s.length).toBeGreaterThanOrEqual(7);
    const [x, rps] = s.data(['rps']);
    expect(x[x.length - 1]).toBe(20);
    expect(rps[rps.length - 1]).toBe(2000);
    // every column stays aligned with x
    for (const col of s.data(['rps', 'p50', 'p95', 'p99', 'errors', 'vus', 'cpu', 'rss_mib'])) {
      expect(col.length).toBe(x.length);
    }
    expect(x).toEqual(Array.from({ length: x.length }, (_, i) => 21 - x.length + i));
    expect(s.totalRequests).toBe((100 * 20 * 21) / 2);
  });

  it('reset forgets everything (the server resends on reconnect)', () => {
    const s = new SeriesStore();
    s.push(sample(1));
    s.push(sample(2));
    s.reset();
    expect(s.length).toBe(0);
    expect(s.totalRequests).toBe(0);
    expect(s.last).toBeNull();
    expect(s.push(sample(1))).toBe(true);
    expect(s.data(['rps'])).toEqual([[1], [100]]);
  });
});
