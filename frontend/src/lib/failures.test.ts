import { describe, expect, it } from 'vitest';
import { LiveFailures, runFailures } from './failures';
import { sample, summary } from '../test-fixtures/wire';
import type { FailureGroup } from './types';

const g503 = (count: number, withSample: boolean): FailureGroup => ({
  request: 'r',
  kind: 'status_5xx',
  status: 503,
  message: 'HTTP 503 Service Unavailable',
  count,
  ...(withSample ? { sample: { status: 503, headers: [], body: 'busy', body_truncated: false } } : {}),
});

describe('LiveFailures', () => {
  it('merges the groups each second changed, keeping each sample, sent once', () => {
    const l = new LiveFailures();
    const timeout = (count: number): FailureGroup => ({ request: 'r', kind: 'timeout', status: 0, message: 't', count });
    expect(l.push(sample({ elapsed_s: 1 }))).toBe(false); // no change that second
    expect(l.push(sample({ elapsed_s: 2, failures: [g503(3, true)] }))).toBe(true);
    expect(l.push(sample({ elapsed_s: 3, failures: [] }))).toBe(false);
    l.push(sample({ elapsed_s: 4, failures: [g503(9, false), timeout(1)] }));
    expect(l.groups.map((g) => g.count)).toEqual([9, 1]);
    expect(l.groups[0].sample?.body).toBe('busy');
    expect(l.groups[1].sample).toBeUndefined();
    l.push(sample({ elapsed_s: 5, failures: [timeout(12)] })); // the 503s stopped
    expect(l.groups.map((g) => [g.message, g.count])).toEqual([['t', 12], ['HTTP 503 Service Unavailable', 9]]);
    expect(l.groups[1].sample?.body).toBe('busy');
    l.reset();
    l.push(sample({ elapsed_s: 6, failures: [g503(10, false)] }));
    expect(l.groups).toHaveLength(1);
    expect(l.groups[0].sample).toBeUndefined();
  });

  it('shows the summary once there is one, nothing for an older run without groups', () => {
    const live = [g503(1, false)];
    expect(runFailures(null, live)).toBe(live);
    expect(runFailures(summary({ failures: [g503(5, true)] }), live)![0].count).toBe(5);
    const older = summary();
    delete (older as Partial<typeof older>).failures;
    expect(runFailures(older, live)).toBeNull();
  });
});
