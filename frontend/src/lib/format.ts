// Number, time and size formatting for tables and tiles, in the UI's language: numbers and dates
// go through Intl with the current locale (lib/i18n), units through the dictionaries. The English
// output is the one the tests and the end-to-end test read ("1,234", "1.5 %", "1.27 cores").
import { intlLocale, t, tn } from './i18n.svelte';

const nfCache = new Map<string, Intl.NumberFormat>();

/** nf is a cached Intl.NumberFormat of the current locale with at most `digits` decimals. */
export function nf(digits: number, extra: Intl.NumberFormatOptions = {}): Intl.NumberFormat {
  const loc = intlLocale();
  const key = `${loc}|${digits}|${JSON.stringify(extra)}`;
  let f = nfCache.get(key);
  if (!f) {
    f = new Intl.NumberFormat(loc, { maximumFractionDigits: digits, ...extra });
    nfCache.set(key, f);
  }
  return f;
}

/** fmtDecimals formats with `decimals` and never prints "-0". */
function fmtDecimals(n: number, decimals: number): string {
  const s = nf(decimals).format(n);
  return /^-0([.,]0*)?$/.test(s) ? s.slice(1) : s;
}

export function fmtInt(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return fmtDecimals(Math.round(n), 0);
}

/** fmtNum prints with a precision that suits the magnitude (1234 → "1,234", 12.34 → "12.3", 0.123 → "0.123"). */
export function fmtNum(n: number | null | undefined, maxDigits = 3): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const a = Math.abs(n);
  if (a >= 1000) return fmtDecimals(Math.round(n), 0);
  if (a === 0) return '0';
  const decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : maxDigits;
  return fmtDecimals(n, decimals);
}

export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  return t('unit.ms', { n: fmtNum(ms) });
}

export function fmtPct(fraction: number | null | undefined): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '—';
  const p = fraction * 100;
  if (p === 0) return t('unit.pct', { n: '0' });
  if (p > 0 && p < 0.01) return t('unit.pct', { n: '<' + fmtDecimals(0.01, 2) });
  return t('unit.pct', { n: fmtDecimals(p, Math.abs(p) >= 10 ? 1 : 2) });
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
  return `${i === 0 ? fmtInt(v) : fmtNum(v)} ${units[i]}`;
}

export function fmtMiB(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  return `${fmtNum(bytes / 1048576)} MiB`;
}

/** fmtDuration prints seconds as "45.2 s", "3m 05s", "1h 02m". */
export function fmtDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '—';
  if (s < 60) return t('unit.s', { n: fmtDecimals(s, s < 10 ? 2 : 1) });
  const total = Math.round(s);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  if (h > 0) return t('unit.hm', { h, m: String(m).padStart(2, '0') });
  return t('unit.minsec', { m, s: String(sec).padStart(2, '0') });
}

/**
 * tzLabel names the browser's time zone as it applies at `d` ("UTC", "GMT+1", "PST"), so that
 * printed times say which clock they are on.
 */
export function tzLabel(d: Date = new Date()): string {
  try {
    const part = new Intl.DateTimeFormat(intlLocale(), { timeZoneName: 'short' })
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

const dtCache = new Map<string, Intl.DateTimeFormat>();

function dtf(opts: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const loc = intlLocale();
  const key = `${loc}|${JSON.stringify(opts)}`;
  let f = dtCache.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(loc, opts);
    dtCache.set(key, f);
  }
  return f;
}

const DATE_TIME: Intl.DateTimeFormatOptions = {
  year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
};

/** fmtShortDateTime prints a Date with Intl in the current locale, for chart axes: "Nov 29, 23:46", "11月29日 23:46". */
export function fmtShortDateTime(d: Date): string {
  return dtf({ month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(d);
}

/** Intl pieces for time axes: the day ("Nov 29" / "11月29日"), the time ("23:46"), with seconds ("23:46:05"). */
export const axisTime = {
  date: (d: Date) => dtf({ month: 'short', day: 'numeric' }).format(d),
  time: (d: Date) => dtf({ hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(d),
  timeSec: (d: Date) => dtf({ hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format(d),
};

/**
 * fmtTime prints an RFC 3339 time on the browser's clock: "2026-11-29 23:46:05" in English (ISO
 * order, unambiguous), the locale's Intl form in other languages ("2026/11/29 23:46:05"); with
 * `{ zone: true }` the time zone follows ("2026-11-29 23:46:05 GMT+1").
 */
export function fmtTime(iso: string | null | undefined, opts: { zone?: boolean } = {}): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  let s: string;
  if (intlLocale() === 'en-US') {
    const p = (n: number) => String(n).padStart(2, '0');
    s = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  } else {
    s = dtf(DATE_TIME).format(d);
  }
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
  const at = new Date(iso).getTime();
  if (Number.isNaN(at)) return iso;
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 60) return t('ago.s', { n: s });
  if (s < 3600) return t('ago.min', { n: Math.floor(s / 60) });
  if (s < 86400) return t('ago.h', { n: Math.floor(s / 3600) });
  return t('ago.d', { n: Math.floor(s / 86400) });
}

/**
 * fmtCores prints a CPU figure given as percent of one core (the server's convention: 200 = two
 * cores busy) as cores: 127 → "1.27 cores", 50 → "0.5 cores".
 */
export function fmtCores(cpuPercent: number | null | undefined): string {
  if (cpuPercent === null || cpuPercent === undefined || !Number.isFinite(cpuPercent)) return '—';
  const c = cpuPercent / 100;
  const text = c === 0 ? '0' : fmtDecimals(c, c >= 10 ? 1 : 2);
  return tn('unit.cores', c, { n: text });
}

/** The tooltip of every CPU figure of the load generator. */
export function cpuTooltip(): string {
  return t('cpu.tooltip');
}

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
  if (p === 0) return t('unit.pct', { n: '0' });
  const text = Math.abs(p) >= 100 ? fmtDecimals(p, 0) : nf(20, { maximumSignificantDigits: 3 }).format(p);
  return t('unit.pct', { n: text });
}

/**
 * fmtThresholdValue prints a threshold's observed value in its metric's unit: error_rate is a
 * fraction shown as a percentage, latencies are ms, rps is req/s. null (or absent) means the metric
 * had no data — e.g. a latency threshold when no response arrived — and prints "no data".
 */
export function fmtThresholdValue(expr: string, value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return t('common.noData');
  switch (thresholdMetric(expr)) {
    case 'error_rate':
      return fmtPrecisePct(value);
    case 'latency':
      return fmtMs(value);
    case 'rps':
      return t('unit.reqps', { n: fmtNum(value) });
    default:
      return fmtNum(value);
  }
}

/** thresholdPassed: a threshold passes only when the server says so and there was data to judge. */
export function thresholdPassed(t: { ok: boolean; value: number | null | undefined }): boolean {
  return t.ok === true && t.value !== null && t.value !== undefined;
}

/**
 * noSuccess tells whether a run (its list figures) had no successful response — no request, or
 * every request failed (error_rate 1: errors = requests − successes) — so that its latency
 * figures are unknown ("—"), not 0.
 */
export function noSuccess(r: { requests: number; error_rate: number }): boolean {
  return !(r.requests > 0) || r.error_rate >= 1;
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
