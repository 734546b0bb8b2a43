// The per-second series behind the run view's charts, kept columnar (one array per series, shared
// x column) so that uPlot can take them as they are. A bounded window: when more than `capacity`
// seconds arrive, the oldest are dropped in batches (amortised O(1) per sample). Totals cover every
// sample pushed, including those that fell out of the window.
import type { Sample } from './types';
import { hasLatencyData } from './format';

export const COLUMN_KEYS = ['rps', 'p50', 'p95', 'p99', 'errors', 'dropped', 'vus', 'cpu', 'rss_mib', 'lag', 'gb', 'ws_sent', 'ws_received', 'ws_rtt_p50', 'ws_rtt_p95'] as const;
export type ColumnKey = (typeof COLUMN_KEYS)[number];

/** One line of a chart: which column, its legend label and colour. */
export interface SeriesDef {
  key: ColumnKey;
  label: string;
  color: string;
}

/** uPlot's AlignedData shape: the x column then one column per series. */
export type Columns = [number[], ...(number | null)[][]];

const MiB = 1024 * 1024;

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

export class SeriesStore {
  readonly capacity: number;
  private readonly slack: number;
  x: number[] = [];
  cols: Record<ColumnKey, (number | null)[]>;
  totalRequests = 0;
  totalErrors = 0;
  generatorBoundSeconds = 0;
  totalDropped = 0;
  last: Sample | null = null;

  constructor(capacity = 86_400) {
    if (capacity < 1) throw new Error('capacity must be at least 1');
    this.capacity = capacity;
    this.slack = Math.max(1, Math.floor(capacity / 8));
    this.cols = SeriesStore.emptyCols();
  }

  private static emptyCols(): Record<ColumnKey, (number | null)[]> {
    return Object.fromEntries(COLUMN_KEYS.map((k) => [k, []])) as unknown as Record<ColumnKey, (number | null)[]>;
  }

  get length(): number {
    return this.x.length;
  }

  /** reset forgets everything (the server resends all samples after a reconnect). */
  reset(): void {
    this.x = [];
    this.cols = SeriesStore.emptyCols();
    this.totalRequests = 0;
    this.totalErrors = 0;
    this.generatorBoundSeconds = 0;
    this.totalDropped = 0;
    this.last = null;
  }

  /**
   * push appends one second. Samples that do not move time forward (a duplicate or out-of-order
   * elapsed_s) are ignored and push returns false.
   */
  push(s: Sample): boolean {
    const x = num(s.elapsed_s);
    if (x === null) return false;
    const n = this.x.length;
    if (n > 0 && x <= this.x[n - 1]) return false;

    // A second in which no response arrived (all requests failed before one) has no latency: a gap, not 0 ms.
    const lat = hasLatencyData(s.latency_ms, s.status_codes) ? s.latency_ms! : null;
    // A second the generator's collector passed late has no reading of its own (interval_s 0; the
    // next second's spans it): its rates are gaps, not 0.
    const read = s.interval_s !== 0;
    const rss = num(s.client?.rss_bytes);
    this.x.push(x);
    this.cols.rps.push(read ? num(s.rps) : null);
    this.cols.p50.push(lat ? num(lat.p50) : null);
    this.cols.p95.push(lat ? num(lat.p95) : null);
    this.cols.p99.push(lat ? num(lat.p99) : null);
    this.cols.errors.push(read ? num(s.errors) : null);
    this.cols.dropped.push(num(s.dropped_iterations) ?? 0);
    this.cols.vus.push(num(s.active_vus));
    this.cols.cpu.push(num(s.client?.cpu_percent));
    this.cols.rss_mib.push(rss === null ? null : rss / MiB);
    this.cols.lag.push(num(s.client?.schedule_lag_p99_ms));
    // 1 in a generator-bound second, null otherwise: the TPS chart shades these seconds.
    this.cols.gb.push(s.generator_bound ? 1 : null);
    // WebSocket steps (lib/ws.ts): message rates, and the round trip where one was measured.
    const ws = s.ws;
    const rtt = ws && (ws.round_trip_ms?.max ?? 0) > 0 ? ws.round_trip_ms : null;
    this.cols.ws_sent.push(ws ? num(ws.messages_sent_rate) : null);
    this.cols.ws_received.push(ws ? num(ws.messages_received_rate) : null);
    this.cols.ws_rtt_p50.push(rtt ? num(rtt.p50) : null);
    this.cols.ws_rtt_p95.push(rtt ? num(rtt.p95) : null);

    this.totalRequests += num(s.requests) ?? 0;
    this.totalErrors += num(s.errors) ?? 0;
    this.totalDropped += num(s.dropped_iterations) ?? 0;
    if (s.generator_bound) this.generatorBoundSeconds++;
    this.last = s;

    if (this.x.length > this.capacity) {
      const drop = this.x.length - this.capacity + this.slack;
      this.x.splice(0, drop);
      for (const k of COLUMN_KEYS) this.cols[k].splice(0, drop);
    }
    return true;
  }

  /** data returns the x column and the named columns, in order, for uPlot.setData. */
  data(keys: readonly ColumnKey[]): Columns {
    return [this.x, ...keys.map((k) => this.cols[k])];
  }
}
