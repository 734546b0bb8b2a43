// The history page's state lives in the URL hash (#/runs?plan_id=3&tag=baseline&sort=p95_ms…) so a
// filtered, sorted, paged view can be shared and reloaded. parseHistoryQuery reads it (anything
// invalid falls back to the default), historyPath writes it back with the defaults left out, and
// toRunQuery turns it into GET /api/runs parameters.
import type { RunQuery } from './api';
import { RUN_OUTCOMES } from './contract.gen';

export const PAGE_SIZE = 50;
export const STATUSES = ['running', 'finished', 'stopped', 'failed', 'interrupted'] as const;
export const SORT_KEYS = ['started_at', 'duration_s', 'requests', 'rps', 'p95_ms', 'error_rate', 'server_cpu_max'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
export type Order = 'asc' | 'desc';
export type ThresholdFilter = '' | 'passed' | 'failed';
/** The server's tag syntax (PATCH /api/runs/:id). */
export const TAG_RE = /^[a-z0-9._-]{1,40}$/;
export const MAX_TAGS = 20;
/** Compare takes 2 to 5 runs. */
export const COMPARE_MIN = 2;
export const COMPARE_MAX = 5;

export interface HistoryFilters {
  plan_id: string;
  status: string;
  tag: string;
  /** Local calendar days, YYYY-MM-DD, both inclusive. */
  from: string;
  to: string;
  thresholds: ThresholdFilter;
  /** Outcomes, a comma list in RUN_OUTCOMES order ('' = any), sent to the API as it is. */
  outcome: string;
  sort: SortKey;
  order: Order;
  offset: number;
}

export const DEFAULT_FILTERS: Readonly<HistoryFilters> = {
  plan_id: '',
  status: '',
  tag: '',
  from: '',
  to: '',
  thresholds: '',
  outcome: '',
  sort: 'started_at',
  order: 'desc',
  offset: 0,
};

/** isDay accepts a real calendar day written YYYY-MM-DD. */
export function isDay(s: string): boolean {
  const m = /^(\d{4})-(\d\d)-(\d\d)$/.exec(s);
  if (!m) return false;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return d.getFullYear() === Number(m[1]) && d.getMonth() === Number(m[2]) - 1 && d.getDate() === Number(m[3]);
}

/** parseOutcomes keeps the known outcomes of a comma list, each once, in RUN_OUTCOMES order ('' if none). */
export function parseOutcomes(list: string): string {
  const given = list.split(',').map((s) => s.trim());
  return RUN_OUTCOMES.filter((o) => given.includes(o)).join(',');
}

export function parseHistoryQuery(q: URLSearchParams): HistoryFilters {
  const get = (k: string) => (q.get(k) ?? '').trim();
  const planId = get('plan_id');
  const status = get('status');
  const tag = get('tag').toLowerCase();
  const th = get('thresholds');
  const sort = get('sort');
  const order = get('order');
  const offset = Number.parseInt(get('offset'), 10);
  return {
    plan_id: /^\d+$/.test(planId) && planId !== '0' ? planId : '',
    status: (STATUSES as readonly string[]).includes(status) ? status : '',
    tag: TAG_RE.test(tag) ? tag : '',
    from: isDay(get('from')) ? get('from') : '',
    to: isDay(get('to')) ? get('to') : '',
    thresholds: th === 'passed' || th === 'failed' ? th : '',
    outcome: parseOutcomes(get('outcome')),
    sort: (SORT_KEYS as readonly string[]).includes(sort) ? (sort as SortKey) : DEFAULT_FILTERS.sort,
    order: order === 'asc' || order === 'desc' ? order : DEFAULT_FILTERS.order,
    offset: Number.isFinite(offset) && offset > 0 ? offset : 0,
  };
}

/** historyPath is the hash path of a view (#/runs?…), defaults left out, keys in a fixed order. */
export function historyPath(f: HistoryFilters): string {
  const p = new URLSearchParams();
  if (f.plan_id) p.set('plan_id', f.plan_id);
  if (f.status) p.set('status', f.status);
  if (f.tag) p.set('tag', f.tag);
  if (f.from) p.set('from', f.from);
  if (f.to) p.set('to', f.to);
  if (f.thresholds) p.set('thresholds', f.thresholds);
  if (f.outcome) p.set('outcome', f.outcome);
  if (f.sort !== DEFAULT_FILTERS.sort || f.order !== DEFAULT_FILTERS.order) {
    p.set('sort', f.sort);
    p.set('order', f.order);
  }
  if (f.offset > 0) p.set('offset', String(f.offset));
  const s = p.toString();
  return `/runs${s ? `?${s}` : ''}`;
}

/** withFilters applies a change; any change but paging goes back to the first page. */
export function withFilters(f: HistoryFilters, patch: Partial<HistoryFilters>): HistoryFilters {
  return { ...f, offset: 0, ...patch };
}

/** sortBy: a click on the current column flips the order; on another one sorts it descending (biggest, newest first). */
export function sortBy(f: HistoryFilters, key: SortKey): HistoryFilters {
  if (f.sort === key) return { ...f, order: f.order === 'desc' ? 'asc' : 'desc', offset: 0 };
  return { ...f, sort: key, order: 'desc', offset: 0 };
}

export function hasFilters(f: HistoryFilters): boolean {
  return Boolean(f.plan_id || f.status || f.tag || f.from || f.to || f.thresholds || f.outcome);
}

/** dayStart is local midnight of a YYYY-MM-DD day, as RFC 3339 UTC without milliseconds. */
export function dayStart(day: string, addDays = 0): string {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d + addDays).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** toRunQuery maps the view to GET /api/runs parameters; `to` is inclusive, so the API gets the next midnight. */
export function toRunQuery(f: HistoryFilters, limit = PAGE_SIZE): RunQuery {
  return {
    plan_id: f.plan_id || undefined,
    status: f.status || undefined,
    tag: f.tag || undefined,
    from: f.from ? dayStart(f.from) : undefined,
    to: f.to ? dayStart(f.to, 1) : undefined,
    thresholds: f.thresholds || undefined,
    outcome: f.outcome || undefined,
    sort: f.sort !== DEFAULT_FILTERS.sort || f.order !== DEFAULT_FILTERS.order ? f.sort : undefined,
    order: f.sort !== DEFAULT_FILTERS.sort || f.order !== DEFAULT_FILTERS.order ? f.order : undefined,
    limit,
    offset: f.offset || undefined,
  };
}

/** comparePath opens the compare page; ids go oldest first, and the oldest is the baseline unless one is given. */
export function comparePath(ids: Iterable<number>, baseline?: number): string {
  const list = [...new Set(ids)].sort((a, b) => a - b);
  const base = baseline !== undefined && list.includes(baseline) ? baseline : list[0];
  return `/compare?ids=${list.join(',')}${base !== undefined ? `&baseline=${base}` : ''}`;
}

/** parseTags splits what was typed into tags ("a, b c" → [a, b, c]), lower-cased. */
export function splitTags(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}
