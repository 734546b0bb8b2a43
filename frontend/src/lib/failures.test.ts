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
  it('keeps the latest groups and each sample, sent once, in later seconds', () => {
    const l = new LiveFailures();
    expect(l.push(sample({ elapsed_s: 1 }))).toBe(false); // no change that second
    expect(l.push(sample({ elapsed_s: 2, failures: [g503(3, true)] }))).toBe(true);
    expect(l.push(sample({ elapsed_s: 3 }))).toBe(false);
    l.push(sample({ elapsed_s: 4, failures: [g503(9, false), { request: 'r', kind: 'timeout', status: 0, message: 't', count: 1 }] }));
    expect(l.groups.map((g) => g.count)).toEqual([9, 1]);
    expect(l.groups[0].sample?.body).toBe('busy');
    expect(l.groups[1].sample).toBeUndefined();
    l.reset();
    l.push(sample({ elapsed_s: 5, failures: [g503(10, false)] }));
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
