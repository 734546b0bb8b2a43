// The target's side of a run (issue 15): the per-second values of the run's monitors
// (Sample.target, keyed by series id "<monitor>/<metric>[/<label>]"), grouped into one chart per
// monitor and kind (CPU, memory, load, network, TCP connections, each custom metric), the monitor
// errors (each shown once), and the summary's avg/max table (Summary.target).
import type { MonitorError, MonitorSeries, Sample, Summary, TargetStat } from './types';
import { fmtNum } from './format';

export type { MonitorError, MonitorSeries, TargetStat };

/** The charts of a monitor, in the order shown. */
export const TARGET_KINDS = ['cpu', 'memory', 'load', 'network', 'tcp', 'custom'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

/** The preset metrics (package monitor) and their units; anything else is a custom metric. */
const PRESET: Record<string, { kind: TargetKind; unit: string }> = {
  cpu_percent: { kind: 'cpu', unit: 'percent' },
  memory_used_bytes: { kind: 'memory', unit: 'bytes' },
  rss_bytes: { kind: 'memory', unit: 'bytes' },
  load1: { kind: 'load', unit: '' },
  net_in_bytes_per_s: { kind: 'network', unit: 'bytes_per_s' },
  net_out_bytes_per_s: { kind: 'network', unit: 'bytes_per_s' },
  tcp_conns: { kind: 'tcp', unit: 'count' },
};

export function kindOf(metric: string): TargetKind {
  return PRESET[metric]?.kind ?? 'custom';
}

/** seriesOfId describes a series from its id alone (live, before the summary lists the series). */
export function seriesOfId(id: string): MonitorSeries {
  const [monitor, metric = '', ...rest] = id.split('/');
  const label = rest.join('/');
  return { id, monitor, type: '', metric, unit: PRESET[metric]?.unit ?? '', ...(label ? { label } : {}) };
}

/** How a unit is drawn: the chart's unit text and the factor from the stored value. */
export function scaleOf(unit: string): { unit: string; factor: number } {
  switch (unit) {
    case 'percent':
      return { unit: '%', factor: 1 };
    case 'bytes':
      return { unit: 'MiB', factor: 1 / (1024 * 1024) };
    case 'bytes_per_s':
      return { unit: 'KiB/s', factor: 1 / 1024 };
    default:
      return { unit: '', factor: 1 };
  }
}

/** fmtTargetValue prints a stored value in its unit ("42.5 %", "512 MiB", "3 KiB/s", "17"). */
export function fmtTargetValue(v: number | null | undefined, unit: string): string {
  if (v == null || !Number.isFinite(v)) return '—';
  const s = scaleOf(unit);
  return `${fmtNum(v * s.factor)}${s.unit ? ' ' + s.unit : ''}`;
}

/** One chart: a monitor's series of one kind (one custom metric each). */
export interface TargetChart {
  key: string; // "<monitor>|<kind>[|<metric>]"
  monitor: string;
  kind: TargetKind;
  metric: string; // the custom metric's name; "" for presets
  unit: string; // the series' stored unit
  ids: string[];
}

/** The part of a series that tells it from the others in its chart (a legend entry). */
export function lineName(s: MonitorSeries): string {
  switch (s.metric) {
    case 'cpu_percent':
      return s.label ? (s.type === 'process' || !/^\d+$/.test(s.label) ? s.label : `cpu${s.label}`) : 'total';
    case 'memory_used_bytes':
      return 'used';
    case 'rss_bytes':
      return s.label ? `RSS ${s.label}` : 'RSS';
    case 'net_in_bytes_per_s':
      return 'in';
    case 'net_out_bytes_per_s':
      return 'out';
    case 'tcp_conns':
      return 'TCP';
    case 'load1':
      return 'load1';
  }
  return s.label || s.metric;
}

const COLORS = ['#0d9488', '#2563eb', '#dc2626', '#7c3aed', '#f59e0b', '#16a34a', '#92400e', '#db2777'];
export function lineColor(i: number): string {
  return COLORS[i % COLORS.length];
}

/**
 * TargetStore keeps the monitors' seconds as columns over one x column (elapsed seconds): a
 * second without a series' value holds null there, drawn as a gap. Errors are kept once per
 * monitor and message, with the first second they appeared.
 */
export class TargetStore {
  x: number[] = [];
  cols = new Map<string, (number | null)[]>();
  meta = new Map<string, MonitorSeries>();
  errors: MonitorError[] = [];

  get length(): number {
    return this.x.length;
  }

  /** any is whether there is something to show: a series or an error. */
  get any(): boolean {
    return this.meta.size > 0 || this.errors.length > 0;
  }

  reset(): void {
    this.x = [];
    this.cols = new Map();
    this.meta = new Map();
    this.errors = [];
  }

  /** describe takes the series as the summary lists them (type and unit). */
  describe(series: readonly MonitorSeries[] | null | undefined): void {
    for (const s of series ?? []) {
      this.meta.set(s.id, s);
      if (!this.cols.has(s.id)) this.cols.set(s.id, this.x.map(() => null));
    }
  }

  /** addErrors keeps each monitor's error once (the first second it appeared). */
  addErrors(errs: readonly MonitorError[] | null | undefined): boolean {
    let added = false;
    for (const e of errs ?? []) {
      if (this.errors.some((o) => o.monitor === e.monitor && o.message === e.message)) continue;
      this.errors.push({ ...e });
      added = true;
    }
    return added;
  }

  /** push appends one second; a second that does not move time forward is ignored (false). */
  push(s: Sample): boolean {
    this.addErrors(s.target_errors);
    const x = s.elapsed_s;
    if (typeof x !== 'number' || !Number.isFinite(x)) return false;
    if (this.x.length > 0 && x <= this.x[this.x.length - 1]) return false;
    const vals = s.target ?? {};
    for (const id of Object.keys(vals)) {
      if (!this.meta.has(id)) this.meta.set(id, seriesOfId(id));
      if (!this.cols.has(id)) this.cols.set(id, this.x.map(() => null));
    }
    this.x.push(x);
    for (const [id, col] of this.cols) {
      const v = vals[id];
      col.push(typeof v === 'number' && Number.isFinite(v) ? v : null);
    }
    return true;
  }

  /** charts groups the series: per monitor (in order of appearance), per kind, per custom metric. */
  charts(): TargetChart[] {
    const byKey = new Map<string, TargetChart>();
    for (const s of this.meta.values()) {
      const kind = kindOf(s.metric);
      const metric = kind === 'custom' ? s.metric : '';
      const key = [s.monitor, kind, metric].filter(Boolean).join('|');
      let c = byKey.get(key);
      if (!c) {
        c = { key, monitor: s.monitor, kind, metric, unit: s.unit, ids: [] };
        byKey.set(key, c);
      }
      c.ids.push(s.id);
    }
    const monitors = [...new Set([...this.meta.values()].map((s) => s.monitor))];
    return [...byKey.values()].sort(
      (a, b) =>
        monitors.indexOf(a.monitor) - monitors.indexOf(b.monitor) ||
        TARGET_KINDS.indexOf(a.kind) - TARGET_KINDS.indexOf(b.kind) ||
        a.metric.localeCompare(b.metric),
    );
  }

  /** data is a chart's uPlot columns, scaled to its unit. */
  data(c: TargetChart): [number[], ...(number | null)[][]] {
    const f = scaleOf(c.unit).factor;
    return [this.x.slice(), ...c.ids.map((id) => (this.cols.get(id) ?? []).map((v) => (v == null ? null : v * f)))];
  }

  /** gaps counts the seconds without a value in a chart's first series. */
  gaps(c: TargetChart): number {
    return (this.cols.get(c.ids[0]) ?? []).filter((v) => v == null).length;
  }
}

/** targetStats are the summary's rows in the order of its series list. */
export function targetStats(sum: Summary | null | undefined): TargetStat[] {
  return [...(sum?.target ?? [])];
}

/**
 * serverCPUMax is the highest target CPU of a run: the largest max over the CPU series without a
 * per-core label (a node's total, or a process's CPU); null when the run had no CPU monitor.
 */
export function serverCPUMax(sum: Summary | null | undefined): number | null {
  let best: number | null = null;
  for (const s of sum?.target ?? []) {
    if (s.metric !== 'cpu_percent' || (s.type === 'node' && s.label)) continue;
    if (best === null || s.max > best) best = s.max;
  }
  return best;
}
