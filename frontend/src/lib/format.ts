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

/** fmtTime prints an RFC 3339 time in the browser's locale, e.g. "2026-11-29 23:46:05". */
export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
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
