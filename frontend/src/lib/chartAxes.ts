// Axis helpers shared by the charts.
import type uPlot from 'uplot';

/** fmtElapsed prints elapsed seconds as "45s", "3:05", "1:02:03" (chart ticks and legends). */
export function fmtElapsed(s: number): string {
  if (!Number.isFinite(s)) return '';
  const t = Math.round(s);
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = String(t % 60).padStart(2, '0');
  if (h > 0) return `${h}:${String(m).padStart(2, '0')}:${sec}`;
  return m > 0 ? `${m}:${sec}` : `${t}s`;
}

/**
 * The latency distribution's x axis: a percentile p (50, 99.9, …) sits at log10(1/(1−p/100)),
 * so 90 % → 1, 99 % → 2, 99.9 % → 3: each "nine" gets the same width. The maximum (p = 100) has
 * no finite place; it is drawn half a step after the last finite point.
 */
export function percentileX(p: number): number {
  if (p >= 100) return Number.POSITIVE_INFINITY;
  return Math.log10(100 / (100 - p));
}

/** The ticks of that axis: 50 %, 90 %, 99 %, 99.9 %, … up to the first one at or past the last point. */
export function percentileTicks(maxX: number): { x: number; label: string }[] {
  const out = [{ x: percentileX(50), label: '50%' }];
  for (let k = 1; k <= 7 && k <= Math.ceil(maxX - 1e-9); k++) {
    const p = 100 - 100 / 10 ** k;
    out.push({ x: k, label: `${Number(p.toFixed(k))}%` });
  }
  return out;
}

/** distributionData maps the server's curve to chart columns; max goes half a step after the last point. */
export function distributionData(items: readonly { percentile: number; value_ms: number }[]): {
  xs: number[];
  ys: (number | null)[];
  labels: string[];
  maxX: number;
} {
  const finite = items.filter((p) => p.percentile < 100 && Number.isFinite(p.value_ms)).sort((a, b) => a.percentile - b.percentile);
  const xs = finite.map((p) => percentileX(p.percentile));
  const ys: (number | null)[] = finite.map((p) => (p.value_ms > 0 ? p.value_ms : null));
  const labels = finite.map((p) => `p${Number(p.percentile.toFixed(4))}`);
  const last = xs.length ? xs[xs.length - 1] : 0;
  const max = items.find((p) => p.percentile >= 100);
  let maxX = last;
  if (max && Number.isFinite(max.value_ms)) {
    maxX = last + 0.5;
    xs.push(maxX);
    ys.push(max.value_ms > 0 ? max.value_ms : null);
    labels.push('max');
  }
  return { xs, ys, labels, maxX };
}


/** One line of a per-second chart. */
export interface ElapsedLine {
  label: string;
  color: string;
  dash?: number[];
  fill?: string;
}

/**
 * elapsedChart gives the scales, axes and series of a per-second chart: elapsed seconds on x, y
 * from 0 to 8 % above the highest value, one line per entry, legend values as format(v) + unit.
 */
export function elapsedChart(
  elapsedLabel: string,
  unit: string,
  format: (v: number) => string,
  lines: ElapsedLine[],
  spanGaps: boolean,
): Pick<uPlot.Options, 'scales' | 'axes' | 'series'> {
  return {
    scales: {
      x: { time: false },
      y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.08 : 1] },
    },
    axes: elapsedAxes(elapsedLabel, unit, format),
    series: [
      { label: elapsedLabel, value: (_u, v) => (v == null ? '—' : fmtElapsed(v)) },
      ...lines.map((l) => ({
        label: l.label,
        stroke: l.color,
        width: 1.5,
        dash: l.dash,
        fill: l.fill,
        spanGaps,
        points: { show: false },
        value: (_u: uPlot, v: number | null) => (v == null ? '—' : `${format(v)} ${unit}`),
      })),
    ],
  };
}

/**
 * elapsedAxes are the axes of every per-second chart: elapsed time on x (whole seconds, since
 * samples are one a second) and the value on y, wide enough for its longest tick label.
 */
export function elapsedAxes(elapsedLabel: string, unit: string, format: (v: number) => string): uPlot.Axis[] {
  return [
    {
      label: elapsedLabel,
      labelSize: 18,
      size: 36,
      incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400],
      values: (_u, splits) => splits.map(fmtElapsed),
      grid: { stroke: '#eef0f3' },
    },
    valueAxis(unit, format),
  ];
}

/** valueAxis is a y axis labelled `label`, wide enough for its longest tick label ("100,000"). */
export function valueAxis(label: string, format: (v: number) => string): uPlot.Axis {
  return {
    label,
    labelSize: 18,
    size: (_u, values) => 30 + 7 * Math.max(3, ...(values ?? []).map((v) => String(v).length)),
    values: (_u, splits) => splits.map((v) => format(v)),
    grid: { stroke: '#eef0f3' },
  };
}
