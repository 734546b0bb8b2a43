// The plan editor's form model and its conversion to and from the plan JSON. Inputs hold strings;
// the conversion types numbers, turns header rows into an object, drops empty optional values, and
// keeps every plan field the form does not show (checks, weight, graceful_stop, …) untouched.
import type { PlanSpec } from './types';

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
export const EXECUTORS = ['constant-vus', 'per-vu-iterations'] as const;

export interface HeaderRow {
  key: string;
  value: string;
}

export interface RequestForm {
  name: string;
  method: string;
  url: string;
  headers: HeaderRow[];
  body: string;
  /** Request fields the form does not edit (weight, checks, …), passed through unchanged. */
  extra: Record<string, unknown>;
}

export interface PlanForm {
  name: string;
  requests: RequestForm[];
  executor: string;
  vus: string;
  duration: string;
  iterations: string;
  maxDuration: string;
  timeout: string;
  keepAlive: boolean;
  /** One threshold per line; blank lines are ignored. */
  thresholds: string;
  extraLoad: Record<string, unknown>;
  extraHttp: Record<string, unknown>;
  extraPlan: Record<string, unknown>;
}

export function emptyRequest(): RequestForm {
  return { name: '', method: 'GET', url: '', headers: [], body: '', extra: {} };
}

export function emptyForm(): PlanForm {
  return {
    name: '',
    requests: [{ ...emptyRequest(), url: 'http://127.0.0.1:8090/' }],
    executor: 'constant-vus',
    vus: '10',
    duration: '30s',
    iterations: '100',
    maxDuration: '',
    timeout: '10s',
    keepAlive: true,
    thresholds: '',
    extraLoad: {},
    extraHttp: {},
    extraPlan: {},
  };
}

function omit(obj: Record<string, unknown> | undefined | null, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!obj) return out;
  for (const [k, v] of Object.entries(obj)) if (!keys.includes(k)) out[k] = v;
  return out;
}

function str(v: unknown): string {
  return v === undefined || v === null ? '' : String(v);
}

/** planToForm fills the form from a stored plan. */
export function planToForm(spec: PlanSpec): PlanForm {
  const load = spec.load ?? {};
  const http = spec.http ?? {};
  return {
    name: str(spec.name),
    requests: (spec.requests ?? []).map((r) => ({
      name: str(r.name),
      method: str(r.method || 'GET').toUpperCase(),
      url: str(r.url),
      headers: Object.entries(r.headers ?? {}).map(([key, value]) => ({ key, value: str(value) })),
      body: str(r.body),
      extra: omit(r, ['name', 'method', 'url', 'headers', 'body']),
    })),
    executor: str(load.executor || 'constant-vus'),
    vus: str(load.vus),
    duration: str(load.duration),
    iterations: str(load.iterations),
    maxDuration: str(load.max_duration),
    timeout: str(http.timeout),
    keepAlive: http.keep_alive !== false,
    thresholds: (spec.thresholds ?? []).join('\n'),
    extraLoad: omit(load, ['executor', 'vus', 'duration', 'iterations', 'max_duration']),
    extraHttp: omit(http, ['timeout', 'keep_alive']),
    extraPlan: omit(spec, ['name', 'requests', 'load', 'http', 'thresholds']),
  };
}

/**
 * typedInt turns an input's text into a JSON value: "" → undefined (left out), a whole number →
 * number, anything else → the text itself, so that the server names the field ("must be a whole number").
 */
export function typedInt(text: string): number | string | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  if (/^[+-]?\d+$/.test(t)) return Number(t);
  return t;
}

function setIf(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value === 'string' && value === '') return;
  obj[key] = value;
}

/** thresholdLines returns the non-blank threshold lines, trimmed, in order (index = thresholds[i]). */
export function thresholdLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** formToPlan builds the plan JSON sent to POST/PUT /api/plans. */
export function formToPlan(form: PlanForm): PlanSpec {
  const requests = form.requests.map((r) => {
    const out: Record<string, unknown> = { ...r.extra };
    setIf(out, 'name', r.name.trim());
    out.method = r.method;
    out.url = r.url.trim();
    const rows = r.headers.filter((h) => h.key.trim() !== '' || h.value !== '');
    if (rows.length > 0) {
      const headers: Record<string, string> = {};
      for (const h of rows) headers[h.key.trim()] = h.value;
      out.headers = headers;
    }
    out.body = r.body;
    return out as PlanSpec['requests'][number];
  });

  const load: Record<string, unknown> = { ...form.extraLoad, executor: form.executor };
  setIf(load, 'vus', typedInt(form.vus));
  if (form.executor === 'constant-vus') {
    setIf(load, 'duration', form.duration.trim());
  } else if (form.executor === 'per-vu-iterations') {
    setIf(load, 'iterations', typedInt(form.iterations));
    setIf(load, 'max_duration', form.maxDuration.trim());
  } else {
    // An executor this form does not know: keep whatever the fields hold.
    setIf(load, 'duration', form.duration.trim());
    setIf(load, 'iterations', typedInt(form.iterations));
    setIf(load, 'max_duration', form.maxDuration.trim());
  }

  const http: Record<string, unknown> = { ...form.extraHttp };
  setIf(http, 'timeout', form.timeout.trim());
  http.keep_alive = form.keepAlive;

  return {
    ...form.extraPlan,
    name: form.name.trim(),
    requests,
    load,
    http,
    thresholds: thresholdLines(form.thresholds),
  };
}

/** formSlots lists the field paths that have an input in the form as it is currently shown. */
export function formSlots(form: PlanForm): string[] {
  const slots = ['name'];
  form.requests.forEach((_, i) => {
    for (const f of ['name', 'method', 'url', 'headers', 'body']) slots.push(`requests[${i}].${f}`);
  });
  slots.push('load.executor', 'load.vus');
  if (form.executor === 'per-vu-iterations') slots.push('load.iterations', 'load.max_duration');
  else slots.push('load.duration');
  slots.push('http.timeout', 'http.keep_alive', 'thresholds');
  return slots;
}
