// The per-request table of the run view (Locust's statistics tab): one row per request name, from
// the live samples while a run goes on (each second's by_name: counts of that second, percentiles,
// checks and timing since the start) and from the summary's by_name afterwards.
import { hasLatencyData } from './format';
import type { NameSample, NameStats, Sample, Summary, Timing } from './types';

export interface RequestRow {
  name: string;
  requests: number;
  errors: number;
  /** Requests per second: of the last second live, over the run after it; null when unknown (older runs). */
  rps: number | null;
  /**
   * Latency percentiles (ms) of all responses since the start, error statuses included; null when
   * the name has no response yet (no latency data, hasLatencyData: shown "—", never 0).
   */
  p50: number | null;
  p95: number | null;
  p99: number | null;
  /** Check outcomes since the start; null when unknown (older runs). */
  checksPassed: number | null;
  checksFailed: number | null;
  /** The request's phases since the start; null when unknown (older runs). */
  timing: Timing | null;
}

interface RowFigures {
  rps?: number;
  p50?: number;
  p95?: number;
  p99?: number;
  passed?: number;
  failed?: number;
  timing?: Timing;
}

/** makeRow builds a row: times only for a name with a response (has), null for what is unknown. */
function makeRow(name: string, requests: number, errors: number, has: boolean, f: RowFigures): RequestRow {
  const num = (v: number | undefined) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const time = (v: number | undefined) => (has ? num(v) : null);
  return {
    name,
    requests,
    errors,
    rps: num(f.rps),
    p50: time(f.p50),
    p95: time(f.p95),
    p99: time(f.p99),
    checksPassed: num(f.passed),
    checksFailed: num(f.failed),
    timing: f.timing ?? null,
  };
}

/** RequestStats folds live samples into per-name rows: counts add up, the rest is the latest second's. */
export class RequestStats {
  private names = new Map<string, { requests: number; errors: number; last: Partial<NameSample> }>();

  reset() {
    this.names.clear();
  }

  add(s: Pick<Sample, 'by_name'>) {
    for (const [name, n] of Object.entries(s.by_name ?? {})) {
      const r = this.names.get(name) ?? { requests: 0, errors: 0, last: {} };
      r.requests += n.requests ?? 0;
      r.errors += n.errors ?? 0;
      r.last = n;
      this.names.set(name, r);
    }
  }

  rows(): RequestRow[] {
    return [...this.names.entries()]
      .sort((a, b) => a[0].localeCompare(b[0]))
      .map(([name, { requests, errors, last: l }]) =>
        makeRow(name, requests, errors, hasLatencyData({ p50: l.p50_ms, p95: l.p95_ms, p99: l.p99_ms }), { rps: l.rps, p50: l.p50_ms, p95: l.p95_ms, p99: l.p99_ms, passed: l.checks_passed, failed: l.checks_failed, timing: l.timing }),
      );
  }
}

/** rowsFromSummary gives the rows of a finished run. */
export function rowsFromSummary(sum: Pick<Summary, 'by_name'>): RequestRow[] {
  return Object.entries(sum.by_name ?? {})
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([name, n]: [string, Partial<NameStats>]) =>
      makeRow(name, n.requests ?? 0, n.errors ?? 0, hasLatencyData(n.latency_ms), {
        rps: n.rps,
        p50: n.latency_ms?.p50,
        p95: n.latency_ms?.p95,
        p99: n.latency_ms?.p99,
        passed: n.checks_passed,
        failed: n.checks_failed,
        timing: n.timing,
      }),
    );
}

/**
 * totalRow adds the rows up. Its percentiles are the run's (the summary's) after the run, the one
 * row's when there is one; live with several names they are the run's of the last second (live:
 * the latest sample, as the P95 tile), since the names' own cannot be merged — null (shown "—")
 * until a sample has a response.
 */
export function totalRow(
  rows: RequestRow[],
  sum?: Pick<Summary, 'latency_ms' | 'status_codes' | 'rps'> | null,
  live?: Pick<Sample, 'latency_ms' | 'status_codes'> | null,
): RequestRow {
  const add = (f: (r: RequestRow) => number | null) =>
    rows.some((r) => f(r) !== null) ? rows.reduce((a, r) => a + (f(r) ?? 0), 0) : null;
  const requests = rows.reduce((a, r) => a + r.requests, 0);
  const errors = rows.reduce((a, r) => a + r.errors, 0);
  const checks = { passed: add((r) => r.checksPassed) ?? undefined, failed: add((r) => r.checksFailed) ?? undefined };
  if (sum) {
    const l = sum.latency_ms;
    return makeRow('', requests, errors, hasLatencyData(l, sum.status_codes), { rps: sum.rps, p50: l?.p50, p95: l?.p95, p99: l?.p99, ...checks });
  }
  const one = rows.length === 1 ? rows[0] : undefined; // live, the run's percentiles are the one name's
  const l = one ? { p50: one.p50 ?? undefined, p95: one.p95 ?? undefined, p99: one.p99 ?? undefined } : live?.latency_ms;
  const has = one ? one.p50 !== null : hasLatencyData(live?.latency_ms, live?.status_codes);
  return makeRow('', requests, errors, has, { rps: add((r) => r.rps) ?? undefined, p50: l?.p50, p95: l?.p95, p99: l?.p99, ...checks });
}

