// The compare page's logic, kept out of the component so it is tested without a browser: the URL
// (#/compare?ids=1,2&baseline=1&threshold=5), the overlay of 2–5 runs' series on one elapsed-time
// axis, and how a delta-table cell is printed (value, Δ, Δ %, verdict, effect with its interval,
// what would decide an inconclusive one, and the test behind it).
import type { CompareMetric, CompareResponse, CompareValue, CompareWarning, Sample } from './types';
import { fmtBytes, fmtCores, fmtInt, fmtMs, fmtNum, fmtPrecisePct, nf } from './format';
import { t, tx } from './i18n.svelte';
import { hasLatencyData } from './format';
import { COMPARE_MAX } from './history';

/** One colour per compared run, in order (the baseline keeps its colour when the order changes). */
export const RUN_COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c'];

export const VERDICTS = ['regression', 'improvement', 'no_change', 'inconclusive', 'baseline', 'none'] as const;

export interface CompareQuery {
  ids: number[];
  baseline: number | null;
  /** The practical threshold of TPS and latency in % (null: the server's default). */
  threshold: number | null;
  /** The address's threshold text when it is not a valid threshold (or given twice); null when fine or absent. */
  badThreshold: string | null;
}

/** The smallest practical threshold in % the server accepts. */
export const MIN_THRESHOLD = 0.1;

/** validThreshold: a practical threshold in %, from 0.1 to 100 (as the server accepts). */
export function validThreshold(v: number): boolean {
  return Number.isFinite(v) && v >= MIN_THRESHOLD && v <= 100;
}

/** parseCompareQuery reads ids (distinct positive integers, in the given order), the baseline and the threshold. */
export function parseCompareQuery(q: URLSearchParams): CompareQuery {
  const ids: number[] = [];
  for (const part of (q.get('ids') ?? '').split(',')) {
    const s = part.trim();
    if (!/^\d+$/.test(s)) continue;
    const n = Number(s);
    if (n > 0 && !ids.includes(n)) ids.push(n);
  }
  const b = Number.parseInt(q.get('baseline') ?? '', 10);
  const ths = q.getAll('threshold').filter((s) => s !== '');
  const th = ths.length === 1 && /^\s*[-+]?[\d.]+(e[-+]?\d+)?\s*$/i.test(ths[0]) ? Number(ths[0]) : NaN;
  const ok = validThreshold(th);
  return {
    ids,
    baseline: Number.isFinite(b) && ids.includes(b) ? b : null,
    threshold: ok ? th : null,
    badThreshold: ths.length > 0 && !ok ? ths.join(', ') : null,
  };
}

export function compareQueryString(ids: readonly number[], baseline: number | null, threshold: number | null = null): string {
  const base = baseline !== null && ids.includes(baseline) ? `&baseline=${baseline}` : '';
  const th = threshold !== null && validThreshold(threshold) ? `&threshold=${threshold}` : '';
  return `/compare?ids=${ids.join(',')}${base}${th}`;
}

export function validCount(n: number): boolean {
  return n >= 2 && n <= COMPARE_MAX;
}

/** A per-second figure of a sample for an overlay chart; null = no value (a gap). */
export type Pick = (s: Sample) => number | null;

const fin = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

// A second the generator's collector passed late has no reading of its own (interval_s 0; the next
// second's spans it): its rates are gaps, not 0.
export const PICKS: Record<'tps' | 'p95' | 'p99' | 'errors' | 'cpu' | 'vus', Pick> = {
  tps: (s) => (s.interval_s === 0 ? null : fin(s.rps)),
  p95: (s) => (hasLatencyData(s.latency_ms, s.status_codes) ? fin(s.latency_ms?.p95) : null),
  p99: (s) => (hasLatencyData(s.latency_ms, s.status_codes) ? fin(s.latency_ms?.p99) : null),
  errors: (s) => {
    const e = fin(s.errors);
    const dt = fin(s.interval_s);
    return e === null || dt === 0 ? null : dt && dt > 0 ? e / dt : e;
  },
  cpu: (s) => fin(s.client?.cpu_percent),
  vus: (s) => fin(s.active_vus),
};

/**
 * alignSeries overlays the runs' samples on one x column: the union of their elapsed seconds,
 * ascending, with null where a run has no point (each run's series is downsampled on its own,
 * so their seconds differ). Charts draw with spanGaps so every run stays one line.
 */
export function alignSeries(series: Record<string, Sample[] | undefined> | undefined, runIds: readonly number[], pick: Pick): [number[], ...(number | null)[][]] {
  const byRun = runIds.map((id) => {
    const m = new Map<number, number | null>();
    for (const s of series?.[String(id)] ?? []) {
      const x = fin(s.elapsed_s);
      if (x !== null) m.set(x, pick(s));
    }
    return m;
  });
  const xs = [...new Set(byRun.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  return [xs, ...byRun.map((m) => xs.map((x) => (m.has(x) ? (m.get(x) ?? null) : null)))];
}

/** metricLabel names a metric row ("TPS", "p95 latency", …); unknown metrics keep their name. */
export function metricLabel(metric: string): string {
  const key = metric === 'rps' ? 'tps' : metric;
  return tx(`compare.metric.${key}`, metric);
}

/** fmtMetricValue prints a value in the metric's unit. */
export function fmtMetricValue(unit: string, v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  switch (unit) {
    case 'ms':
      return fmtMs(v);
    case 'req/s':
      return t('unit.reqps', { n: fmtNum(v) });
    case 'fraction':
      return fmtPrecisePct(v);
    case 'bytes':
      return fmtBytes(v);
    case '% of one core':
    case '%':
      return fmtCores(v);
    case 'percent': // the server's CPU (a node's is of all its cores)
      return t('unit.pct', { n: fmtNum(v) });
    case 'µs/request': // the server's CPU per request
      return t('unit.usPerReq', { n: fmtNum(v) });
    default:
      return `${fmtNum(v)} ${unit}`.trim();
  }
}

/** fmtMetricDelta prints a signed difference in the metric's unit ("+1.2 ms", "−0.3 %"). */
export function fmtMetricDelta(unit: string, d: number | null | undefined): string {
  if (d === null || d === undefined || !Number.isFinite(d)) return '—';
  if (d === 0) return '±0';
  const sign = d > 0 ? '+' : '−';
  const a = Math.abs(d);
  if (unit === 'fraction') return sign + t('unit.pp', { n: fmtNum(a * 100) });
  return sign + fmtMetricValue(unit, a);
}

/** fmtDeltaPct prints a relative change ("+12.3 %"); null when the baseline is 0. */
export function fmtDeltaPct(p: number | null | undefined): string {
  if (p === null || p === undefined || !Number.isFinite(p)) return '—';
  if (p === 0) return t('unit.pct', { n: '±0' });
  const sign = p > 0 ? '+' : '−';
  const a = Math.abs(p);
  return sign + t('unit.pct', { n: nf(a >= 100 ? 0 : 1).format(a) });
}

export function verdictLabel(v: string): string {
  return tx(`verdict.${v}`, v);
}

/** p-values print with 2 significant digits, tiny ones as "< 0.0001". */
export function fmtP(p: number): string {
  if (p < 0.0001) return '< 0.0001';
  return nf(20, { maximumSignificantDigits: 2 }).format(p);
}

/** fmtEffect prints an effect in the metric's terms: relative ones as a signed % ("−19.4 %"), the error rate in pp. */
export function fmtEffect(m: CompareMetric, e: number | null | undefined): string {
  if (e === null || e === undefined || !Number.isFinite(e)) return '—';
  if (m.effect_kind === 'relative') return fmtDeltaPct(e * 100);
  return fmtMetricDelta(m.unit, e);
}

/** fmtEffectCI prints an effect with its confidence interval ("−19.4 % [−23.1 %, −15.6 %]"); '' without one. */
export function fmtEffectCI(m: CompareMetric, v: CompareValue): string {
  if (v.effect === undefined || v.ci_low === undefined || v.ci_high === undefined) return '';
  return t('compare.effectCI', { effect: fmtEffect(m, v.effect), lo: fmtEffect(m, v.ci_low), hi: fmtEffect(m, v.ci_high) });
}

/** fmtThreshold prints a metric's practical threshold ("±5 %", "±0.1 pp"); '' when it has none. */
export function fmtThreshold(m: CompareMetric): string {
  if (m.threshold === undefined || m.threshold === null) return '';
  return '±' + fmtEffect(m, m.threshold).replace(/^[+−]/, '');
}

/** decideText says what would decide an inconclusive value, in the UI language ('' when nothing is known). */
export function decideText(v: CompareValue): string {
  if (v.verdict !== 'inconclusive') return '';
  if (v.decide_code === 'longer_run' && v.decide_seconds) return t('compare.decide.longer_run', { n: fmtInt(v.decide_seconds) });
  if (v.decide_code) return tx(`compare.decide.${v.decide_code}`, v.decide_hint ?? '');
  return v.decide_hint ?? '';
}

/** noDataText says why a server row's value has no verdict (its monitor data is missing), in the UI language; '' otherwise. */
export function noDataText(v: CompareValue): string {
  if (v.verdict !== 'none' || !v.reason_code) return '';
  return tx(`compare.reason.${v.reason_code}`, v.reason ?? '');
}

/** cellTooltip explains a cell's verdict: the effect and its interval, the test, seconds used, the threshold, the server's reason. */
export function cellTooltip(m: CompareMetric, v: CompareValue, confidence = 0.95): string {
  const lines: string[] = [verdictLabel(v.verdict)];
  if (m.follows_load && v.verdict !== 'baseline') lines.push(t('compare.tip.followsLoad'));
  const eff = fmtEffectCI(m, v);
  if (eff) lines.push(t('compare.tip.effect', { level: fmtNum(confidence * 100), effect: eff }));
  if (m.metric === 'tps') lines.push(t('compare.tip.tps'));
  if (m.test && m.test !== 'none') lines.push(t('compare.tip.test', { test: tx(`compare.test.${m.test}`, m.test) }));
  if (v.p_value !== undefined && v.p_value !== null) lines.push(t('compare.tip.p', { p: fmtP(v.p_value) }));
  if (v.ci) lines.push(t('compare.tip.ci', { level: fmtNum(confidence * 100), lo: fmtMetricDelta(m.unit, v.ci[0]), hi: fmtMetricDelta(m.unit, v.ci[1]) }));
  if (v.n !== undefined && v.verdict !== 'baseline') lines.push(t('compare.tip.n', { n: fmtInt(v.n) }));
  if (v.gaps) lines.push(t('compare.tip.gaps', { n: fmtInt(v.gaps) }));
  const th = fmtThreshold(m);
  if (th && v.verdict !== 'baseline') lines.push(t('compare.tip.threshold', { t: th }));
  const d = decideText(v);
  if (d) lines.push(d);
  const nd = noDataText(v);
  if (nd) lines.push(nd);
  else if (v.reason && !m.follows_load) lines.push(v.reason);
  return lines.join('\n');
}

export function warningText(w: CompareWarning): string {
  return typeof w === 'string' ? w : w.message;
}

const LOAD_CODES = ['executor_differs', 'load_differs', 'duration_differs', 'concurrency_differs', 'requests_differ'];

/** isLoadWarning: the runs did not apply the same load (the server's load flag, or a load code). */
export function isLoadWarning(w: CompareWarning): boolean {
  return typeof w !== 'string' && (w.load === true || LOAD_CODES.includes(w.code ?? ''));
}

/** warningLabel names a warning's kind in the UI language ('' when the server gave no known code). */
export function warningLabel(w: CompareWarning): string {
  return typeof w === 'string' || !w.code ? '' : tx(`compare.warn.${w.code}`, '');
}

/** The runs in the order the server returned them, with their colours. */
export function runsWithColors(res: CompareResponse): { id: number; color: string }[] {
  return res.runs.map((r, i) => ({ id: r.id, color: RUN_COLORS[i % RUN_COLORS.length] }));
}

/** verdictCounts tallies the judged non-baseline cells (for the page's headline; 'none' is no verdict). */
export function verdictCounts(metrics: readonly CompareMetric[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of metrics) for (const v of m.values) if (v.verdict !== 'baseline' && v.verdict !== 'none') out[v.verdict] = (out[v.verdict] ?? 0) + 1;
  return out;
}
