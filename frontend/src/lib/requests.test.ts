import { describe, expect, it } from 'vitest';
import { RequestStats, rowsFromSummary, totalRow } from './requests';
import { latency, nameStats, summary as wireSummary, timing } from '../test-fixtures/wire';
import type { NameSample } from './types';

function ns(over: Partial<NameSample>): NameSample {
  return { requests: 0, errors: 0, rps: 0, p50_ms: 0, p95_ms: 0, p99_ms: 0, checks_passed: 0, checks_failed: 0, timing: timing(), ...over };
}

describe('RequestStats', () => {
  it('adds up each name’s counts and keeps its latest percentiles, checks and timing', () => {
    const st = new RequestStats();
    st.add({ by_name: { b: ns({ requests: 10, errors: 1, rps: 10, p50_ms: 5, p95_ms: 9, p99_ms: 12, checks_passed: 9, checks_failed: 1 }) } });
    st.add({ by_name: { b: ns({ requests: 20, errors: 0, rps: 20, p50_ms: 4, p95_ms: 8, p99_ms: 11, checks_passed: 29, checks_failed: 1, timing: timing({ wait_ms: { p50: 3 } }) }), a: ns({ requests: 5, errors: 5 }) } });
    const rows = st.rows();
    expect(rows.map((r) => r.name)).toEqual(['a', 'b']); // sorted
    expect(rows[1]).toMatchObject({ requests: 30, errors: 1, rps: 20, p50: 4, p95: 8, p99: 11, checksPassed: 29, checksFailed: 1 });
    expect(rows[1].timing?.wait_ms.p50).toBe(3);
    // no successful response: no times (shown "—"), never 0
    expect(rows[0]).toMatchObject({ requests: 5, errors: 5, p50: null, p95: null, p99: null });
    const tot = totalRow(rows);
    expect(tot).toMatchObject({ requests: 35, errors: 6, rps: 20, checksPassed: 29, checksFailed: 1, p95: null });
    st.reset();
    expect(st.rows()).toEqual([]);
  });

  it('makes rows from a summary, older ones without rps, checks or timing included', () => {
    const sum = wireSummary({
      successes: 8,
      rps: 4,
      latency_ms: latency({ p50: 2, p95: 3, p99: 4 }),
      by_name: {
        new: nameStats({ requests: 8, errors: 0, rps: 4, latency_ms: latency({ p50: 2, p95: 3, p99: 4 }), timing: timing({ connect_ms: { p95: 1 } }), checks_passed: 8 }),
        old: { requests: 2, errors: 2, latency_ms: latency() } as never,
      },
    });
    const rows = rowsFromSummary(sum);
    expect(rows[0]).toMatchObject({ name: 'new', rps: 4, p95: 3, checksPassed: 8 });
    expect(rows[1]).toMatchObject({ name: 'old', rps: null, p50: null, checksPassed: null, checksFailed: null, timing: null });
    expect(totalRow(rows, sum)).toMatchObject({ requests: 10, errors: 2, rps: 4, p50: 2, p95: 3, p99: 4, checksPassed: 8 });
    expect(totalRow(rows, { ...sum, latency_ms: latency() }).p95).toBeNull(); // no response at all
  });

  it('shows the latency of a name whose every response was an error (503, failed check); "—" only without a response', () => {
    const st = new RequestStats();
    st.add({ by_name: { bad: ns({ requests: 4, errors: 4, p50_ms: 7, p95_ms: 9, p99_ms: 10, timing: timing({ wait_ms: { p50: 6 } }) }), refused: ns({ requests: 3, errors: 3 }) } });
    const live = st.rows();
    expect(live[0]).toMatchObject({ name: 'bad', p50: 7, p95: 9, p99: 10 });
    expect(live[1]).toMatchObject({ name: 'refused', p50: null, p95: null, p99: null });
    const sum = wireSummary({
      requests: 5,
      errors: 5,
      status_codes: { '503': 5 },
      latency_ms: latency({ p50: 6, p95: 8, p99: 9, max: 9 }),
      by_name: { bad: nameStats({ requests: 5, errors: 5, latency_ms: latency({ p50: 6, p95: 8, p99: 9, max: 9 }) }) },
    });
    const rows = rowsFromSummary(sum);
    expect(rows[0]).toMatchObject({ name: 'bad', p50: 6, p95: 8, p99: 9 });
    expect(totalRow(rows, sum)).toMatchObject({ p50: 6, p95: 8, p99: 9 });
  });

  it('live with several names, the Total row has the run’s latency of the last second (the P95 tile), "—" before any response', () => {
    const st = new RequestStats();
    st.add({ by_name: { a: ns({ requests: 4, p50_ms: 7, p95_ms: 9, p99_ms: 10 }), b: ns({ requests: 2, errors: 2, p50_ms: 3, p95_ms: 4, p99_ms: 5 }) } });
    const last = { latency_ms: latency({ p50: 5, p95: 8, p99: 9.5, max: 10 }), status_codes: { '200': 4, '503': 2 } };
    expect(totalRow(st.rows(), null, last)).toMatchObject({ requests: 6, errors: 2, p50: 5, p95: 8, p99: 9.5 });
    expect(totalRow(st.rows(), null, { latency_ms: latency(), status_codes: {} })).toMatchObject({ p50: null, p95: null, p99: null });
  });
});
