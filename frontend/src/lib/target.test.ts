import { describe, expect, it } from 'vitest';
import { fmtTargetValue, kindOf, seriesOfId, serverCPUMax, TargetStore } from './target';
import type { Sample, Summary } from './types';

const sample = (elapsed: number, target?: Record<string, number>, errs?: Sample['target_errors']): Sample =>
  ({ elapsed_s: elapsed, t: 1_700_000_000_000 + elapsed * 1000, target, target_errors: errs }) as unknown as Sample;

describe('TargetStore', () => {
  it('keeps a column per series, a missing second as null (a gap), later series padded', () => {
    const s = new TargetStore();
    expect(s.push(sample(1, { 'web1/cpu_percent': 10, 'web1/memory_used_bytes': 1048576 }))).toBe(true);
    expect(s.push(sample(2, { 'web1/memory_used_bytes': 2097152 }))).toBe(true); // cpu missing: a gap
    expect(s.push(sample(3, { 'web1/cpu_percent': 30, 'nginx/rss_bytes/nginx': 5 * 1048576 }))).toBe(true);
    expect(s.push(sample(3, { 'web1/cpu_percent': 99 }))).toBe(false); // time must move forward
    expect(s.x).toEqual([1, 2, 3]);
    expect(s.cols.get('web1/cpu_percent')).toEqual([10, null, 30]);
    expect(s.cols.get('nginx/rss_bytes/nginx')).toEqual([null, null, 5 * 1048576]);
    const charts = s.charts();
    expect(charts.map((c) => c.key)).toEqual(['web1|cpu', 'web1|memory', 'nginx|memory']);
    const mem = charts[1];
    expect(s.data(mem)).toEqual([[1, 2, 3], [1, 2, null]]); // MiB
    expect(s.gaps(charts[0])).toBe(1);
  });

  it('keeps each monitor error once, with the second it first appeared', () => {
    const s = new TargetStore();
    s.push(sample(1, {}, [{ monitor: 'web1', message: 'timeout after 800ms', t: 1000, seconds: 1 }]));
    s.push(sample(2, {}, [{ monitor: 'web1', message: 'timeout after 800ms', t: 2000, seconds: 1 }]));
    s.push(sample(3, {}, [{ monitor: 'web1', message: 'line 3: malformed exposition', t: 3000, seconds: 1 }]));
    expect(s.errors.map((e) => [e.message, e.t])).toEqual([
      ['timeout after 800ms', 1000],
      ['line 3: malformed exposition', 3000],
    ]);
    expect(s.any).toBe(true);
  });

  it('groups custom metrics one chart each, after the presets', () => {
    const s = new TargetStore();
    s.push(sample(1, { 'app/queue_depth': 3, 'app/tcp_conns': 9, 'app/jobs_total/kind=a': 1 }));
    expect(s.charts().map((c) => c.key)).toEqual(['app|tcp', 'app|custom|jobs_total', 'app|custom|queue_depth']);
  });

  it('takes type and unit from the summary series list', () => {
    const s = new TargetStore();
    s.push(sample(1, { 'p/cpu_percent/nginx': 50 }));
    s.describe([{ id: 'p/cpu_percent/nginx', monitor: 'p', type: 'process', metric: 'cpu_percent', label: 'nginx', unit: 'percent' }]);
    expect(s.meta.get('p/cpu_percent/nginx')?.type).toBe('process');
  });
});

describe('target helpers', () => {
  it('parses series ids and formats values in their unit', () => {
    expect(seriesOfId('web1/cpu_percent/3')).toEqual({ id: 'web1/cpu_percent/3', monitor: 'web1', type: '', metric: 'cpu_percent', unit: 'percent', label: '3' });
    expect(kindOf('net_in_bytes_per_s')).toBe('network');
    expect(kindOf('http_requests_total')).toBe('custom');
    expect(fmtTargetValue(52428800, 'bytes')).toBe('50 MiB');
    expect(fmtTargetValue(42.5, 'percent')).toBe('42.5 %');
    expect(fmtTargetValue(null, 'percent')).toBe('—');
  });

  it('serverCPUMax takes the total or process CPU, not a core', () => {
    const stat = (id: string, type: string, label: string | undefined, max: number) => ({
      id, monitor: id.split('/')[0], type, metric: 'cpu_percent', label, unit: 'percent', avg: 1, max, seconds: 3, gaps: 0,
    });
    const sum = { target: [stat('n/cpu_percent', 'node', undefined, 60), stat('n/cpu_percent/0', 'node', '0', 99), stat('p/cpu_percent/nginx', 'process', 'nginx', 80)] } as unknown as Summary;
    expect(serverCPUMax(sum)).toBe(80);
    expect(serverCPUMax({} as Summary)).toBeNull();
  });
});
