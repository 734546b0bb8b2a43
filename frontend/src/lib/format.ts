// Number, time and size formatting for tables and tiles.

const intFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function fmtInt(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return intFmt.format(Math.round(n));
}

/** fmtNum prints with a precision that suits the magnitude (1234 → "1,234", 12.34 → "12.3", 0.123 → "0.123"). */
export function fmtNum(n: number | null | undefined, maxDigits = 3): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const a = Math.abs(n);
  if (a >= 1000) return intFmt.format(Math.round(n));
  if (a === 0) return '0';
  const decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : maxDigits;
  return Number(n.toFixed(decimals)).toString();
}

export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  return `${fmtNum(ms)} ms`;
}

export function fmtPct(fraction: number | null | undefined): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '—';
  const p = fraction * 100;
  if (p === 0) return '0 %';
  if (p < 0.01) return '<0.01 %';
  return `${Number(p.toFixed(p >= 10 ? 1 : 2))} %`;
}

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : fmtNum(v)} ${units[i]}`;
}

export function fmtMiB(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  return `${fmtNum(bytes / 1048576)} MiB`;
}

/** fmtDuration prints seconds as "45.2 s", "3m 05s", "1h 02m". */
export function fmtDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '—';
  if (s < 60) return `${Number(s.toFixed(s < 10 ? 2 : 1))} s`;
  const total = Math.round(s);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  return `${m}m ${String(sec).padStart(2, '0')}s`;
}

/**
 * tzLabel names the browser's time zone as it applies at `d` ("UTC", "GMT+1", "PST"), so that
 * printed times say which clock they are on.
 */
export function tzLabel(d: Date = new Date()): string {
  try {
    const part = new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' })
      .formatToParts(d)
      .find((p) => p.type === 'timeZoneName');
    if (part?.value) return part.value;
  } catch {
    /* no Intl time zone support: fall through */
  }
  const off = -d.getTimezoneOffset();
  if (off === 0) return 'UTC';
  const sign = off > 0 ? '+' : '-';
  const a = Math.abs(off);
  return `UTC${sign}${Math.floor(a / 60)}${a % 60 ? ':' + String(a % 60).padStart(2, '0') : ''}`;
}

/**
 * fmtTime prints an RFC 3339 time on the browser's clock, e.g. "2026-11-29 23:46:05"; with
 * `{ zone: true }` the time zone follows ("2026-11-29 23:46:05 GMT+1").
 */
export function fmtTime(iso: string | null | undefined, opts: { zone?: boolean } = {}): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, '0');
  const s = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  return opts.zone ? `${s} ${tzLabel(d)}` : s;
}

/** fmtClock prints only the time of day of an RFC 3339 time ("23:46:05"), for an end on the same day as its start. */
export function fmtClock(iso: string | null | undefined): string {
  const s = fmtTime(iso);
  return s.length === 19 ? s.slice(11) : s;
}

/** fmtAgo prints how long ago a time was ("12 s ago", "3 min ago", "2 d ago"). */
export function fmtAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/**
 * fmtCores prints a CPU figure given as percent of one core (the server's convention: 200 = two
 * cores busy) as cores: 127 → "1.27 cores", 50 → "0.5 cores".
 */
export function fmtCores(cpuPercent: number | null | undefined): string {
  if (cpuPercent === null || cpuPercent === undefined || !Number.isFinite(cpuPercent)) return '—';
  const c = cpuPercent / 100;
  const text = c === 0 ? '0' : Number(c.toFixed(c >= 10 ? 1 : 2)).toString();
  return `${text} ${c === 1 ? 'core' : 'cores'}`;
}

/** The tooltip of every CPU figure of the load generator. */
export const CPU_TOOLTIP =
  'CPU time of the Volley process, in cores: 1 core = 100 % of one core (the server reports percent of one core, so 200 % = two cores busy).';

/** thresholdMetric tells which metric a threshold expression tests (k6 syntax: p(95)<200ms, error_rate<1%, rps>100). */
export function thresholdMetric(expr: string): 'latency' | 'error_rate' | 'rps' | 'other' {
  const e = expr.trim();
  if (/^error_rate\b/.test(e)) return 'error_rate';
  if (/^rps\b/.test(e)) return 'rps';
  if (/^(p\(|avg\b|min\b|max\b|med\b)/.test(e)) return 'latency';
  return 'other';
}

/** fmtPrecisePct prints a fraction as a percentage with up to 3 significant digits (0.0123 → "1.23 %", 0.00045 → "0.045 %"). */
export function fmtPrecisePct(fraction: number): string {
  const p = fraction * 100;
  if (p === 0) return '0 %';
  const text = Math.abs(p) >= 100 ? p.toFixed(0) : Number(p.toPrecision(3)).toString();
  return `${text} %`;
}

/**
 * fmtThresholdValue prints a threshold's observed value in its metric's unit: error_rate is a
 * fraction shown as a percentage, latencies are ms, rps is req/s. null (or absent) means the metric
 * had no data — e.g. a latency threshold when no response arrived — and prints "no data".
 */
export function fmtThresholdValue(expr: string, value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return 'no data';
  switch (thresholdMetric(expr)) {
    case 'error_rate':
      return fmtPrecisePct(value);
    case 'latency':
      return fmtMs(value);
    case 'rps':
      return `${fmtNum(value)} req/s`;
    default:
      return fmtNum(value);
  }
}

/** thresholdPassed: a threshold passes only when the server says so and there was data to judge. */
export function thresholdPassed(t: { ok: boolean; value: number | null | undefined }): boolean {
  return t.ok === true && t.value !== null && t.value !== undefined;
}

/**
 * hasLatencyData tells whether a latency block describes any response. When every request failed
 * before a response (e.g. all connect_refused) the server reports zeros (max 0) and no status codes.
 */
export function hasLatencyData(
  lat: Partial<Record<string, number>> | null | undefined,
  statusCodes?: Record<string, number> | null,
): boolean {
  if (!lat) return false;
  if (Object.values(statusCodes ?? {}).some((n) => n > 0)) return true;
  return Object.values(lat).some((v) => typeof v === 'number' && v > 0);
}
