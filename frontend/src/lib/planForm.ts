// The plan editor's form model and its conversion to and from the plan JSON. Inputs hold strings;
// the conversion types numbers, turns header rows into an object, drops empty optional values,
// sends only the load fields of the chosen executor (the server rejects the others with "does not
// apply to …"), and keeps every plan field the form does not show (hosts, unknown keys, …) untouched.
// Scenario fields (flow, think time, data, checks, extract, object thresholds) are written in the
// server's key order, so a stored plan opened and saved unchanged gives back the same JSON.
import {
  CHECK_OPS,
  CHECK_TYPES,
  COMPRESSIONS,
  COOKIE_MODES,
  DATA_MODES,
  DEFAULTS,
  EXECUTORS,
  EXECUTOR_INFO,
  EXTRACT_ARG,
  EXTRACT_FROM,
  FLOWS,
  METHODS,
  type Executor,
  type LoadFieldInfo,
  type LoadFieldName,
  type PlanThreshold,
} from './contract.gen';
import { t, type MessageKey } from './i18n.svelte';
import { en } from './locales/en';
import type { Loose, PlanInput, PlanRequest, PlanSpec, PlanStage } from './types';

// The plan's vocabularies, executors and defaults come from the generated contract (contract.gen.ts,
// `make contract`); they are re-exported under the names the components use.
export { CHECK_OPS, CHECK_TYPES, COMPRESSIONS, COOKIE_MODES, DATA_MODES, EXECUTORS, EXTRACT_ARG, EXTRACT_FROM, FLOWS, METHODS };
export type { Executor, PlanThreshold };

/** A load field the form edits (JSON name). graceful_stop applies to every executor. */
export type LoadField = LoadFieldName;

/** Which load fields each executor takes, in the order the form shows them. */
export const EXECUTOR_FIELDS = {} as Record<Executor, readonly LoadField[]>;
for (const ex of EXECUTORS) EXECUTOR_FIELDS[ex] = EXECUTOR_INFO[ex].fields.map((f) => f.name);

/** Every load field some executor takes. */
const LOAD_FIELDS: readonly LoadField[] = [...new Set(Object.values(EXECUTOR_FIELDS).flat())];
const LOAD_KEYS = ['executor', 'graceful_stop', ...LOAD_FIELDS];
const HTTP_KEYS = ['timeout', 'keep_alive', 'follow_redirects', 'max_redirects', 'connect_timeout', 'insecure_skip_verify', 'version', 'h2_fallback', 'h2_connections', 'cookies', 'compression', 'max_header', 'proxy'];

/** The values of http.version the form offers ('' leaves the field out: HTTP/1.1). */
export const HTTP_VERSIONS = ['', '1.1', '2', 'h2c'] as const;

export function isExecutor(ex: string): ex is Executor {
  return (EXECUTORS as readonly string[]).includes(ex);
}

/** isOpenModel: the contract gives the executor the open model (iterations on a schedule: dropped iterations, schedule lag). */
export function isOpenModel(ex: string | undefined): boolean {
  return ex !== undefined && isExecutor(ex) && EXECUTOR_INFO[ex].model === 'open';
}

/** The fields of an executor; null for one this form does not know. */
export function fieldsOf(ex: string): readonly LoadField[] | null {
  return isExecutor(ex) ? EXECUTOR_FIELDS[ex] : null;
}

/** The contract's description of each field of an executor (kind, required, default, help key); null for an unknown one. */
export function fieldInfosOf(ex: string): readonly LoadFieldInfo[] | null {
  return isExecutor(ex) ? EXECUTOR_INFO[ex].fields : null;
}

export const DEFAULT_LEVELS: number[] = [...DEFAULTS.sweep_levels];

/** The form property holding each load field's text (stages: the rows of form.stages). */
type LoadTextProp = 'vus' | 'duration' | 'iterations' | 'maxDuration' | 'startVUs' | 'rate' | 'startRate' | 'timeUnit' | 'preAllocatedVUs' | 'maxVUs' | 'levels' | 'stepDuration';

/** How the editor shows one load field besides its label (the contract's helpKey): where its text lives, a unit, a hint, an example. */
export interface LoadFieldUI {
  prop: LoadTextProp;
  unit?: MessageKey;
  hint?: MessageKey;
  /** Shown in the empty input when the server has no default of its own for the field. */
  example?: string;
}

/** The editor's layout of the load fields (the contract says which an executor takes, their kind, label and defaults). */
export const LOAD_FIELD_UI: Record<Exclude<LoadField, 'stages'>, LoadFieldUI> = {
  rate: { prop: 'rate', unit: 'editor.rateUnit' },
  start_rate: { prop: 'startRate', hint: 'editor.hint.startRate', example: '0' },
  time_unit: { prop: 'timeUnit', hint: 'editor.hint.timeUnit' },
  vus: { prop: 'vus' },
  start_vus: { prop: 'startVUs', example: '0' },
  iterations: { prop: 'iterations' },
  duration: { prop: 'duration', hint: 'editor.hint.duration', example: '30s' },
  max_duration: { prop: 'maxDuration', hint: 'editor.hint.maxDuration' },
  pre_allocated_vus: { prop: 'preAllocatedVUs', hint: 'editor.hint.preAllocated' },
  max_vus: { prop: 'maxVUs', hint: 'editor.hint.maxVus' },
  levels: { prop: 'levels', unit: 'editor.levelsUnit', hint: 'editor.hint.levels' },
  step_duration: { prop: 'stepDuration', hint: 'editor.hint.stepDuration' },
};

/** loadPlaceholder is what an empty load input shows: the server's default, else an example. */
export function loadPlaceholder(f: LoadFieldInfo): string {
  if (f.name === 'stages') return '';
  const d = f.default;
  if (Array.isArray(d)) return d.join(', ');
  return d === null ? (LOAD_FIELD_UI[f.name].example ?? '') : String(d);
}

/** Help of each flow and data mode, from the English dictionary (the editor shows the current language's). */
export const FLOW_HELP: Record<string, string> = Object.fromEntries(FLOWS.map((f) => [f, en[`editor.flowHelp.${f}` as const]]));
export const DATA_MODE_HELP: Record<string, string> = Object.fromEntries(DATA_MODES.map((m) => [m, en[`editor.dataModeHelp.${m}` as const]]));

export interface HeaderRow {
  key: string;
  value: string;
  /** Marked secret (the request's secret_headers); Authorization, Cookie and Proxy-Authorization always are. */
  secret?: boolean;
}

/** MASKED is the placeholder the server shows for a secret header value; sent back, it keeps the stored value. */
export const MASKED = '********';

/** ALWAYS_SECRET headers are secret in every request (compared case-insensitively). */
export const ALWAYS_SECRET = ['authorization', 'cookie', 'proxy-authorization'];

/** alwaysSecret reports whether a header name is secret whatever the request marks. */
export function alwaysSecret(key: string): boolean {
  return ALWAYS_SECRET.includes(key.trim().toLowerCase());
}

/** isSecretHeader reports whether a header row's value is secret (always, or marked). */
export function isSecretHeader(h: HeaderRow): boolean {
  return alwaysSecret(h.key) || h.secret === true;
}

export interface StageRow {
  duration: string;
  target: string;
}

/** How a comparison op reads in the op select; the word ops (contains, not_contains, exists) are translated (locale keys checks.opName.*). */
export const OP_LABELS: Record<string, string> = {
  eq: '=',
  ne: '≠',
  lt: '<',
  le: '≤',
  gt: '>',
  ge: '≥',
};
const CHECK_DEFAULT_OP: Record<string, string> = { status: 'eq', header: 'contains', body: 'contains', json: 'eq', latency: 'lt' };
const CHECK_DEFAULT_VALUE: Record<string, string> = { status: '200', latency: '200ms' };

/** The JSON type a json check's value is sent as. "json" only appears for a loaded object/array value. */
export const JSON_VALUE_TYPES = ['text', 'number', 'true', 'false', 'null'] as const;
export type JsonValueType = (typeof JSON_VALUE_TYPES)[number] | 'json';

export const EXTRACT_ARG_HINT: Record<string, string> = { json: 'data.token', header: 'X-Session', regex: 'id=(\\d+)', cookie: 'SESSION' };

/** Variables every plan has ({{random_int a b}} takes two whole numbers). */
export const BUILTIN_VARS = ['vu', 'iteration', 'uuid', 'random_int 1 100'] as const;

export interface CheckRow {
  type: string;
  op: string;
  /** The value as typed (status: a number; json: read according to valueType). */
  value: string;
  /** json checks: the JSON type the value is sent as. */
  valueType: JsonValueType;
  /** header checks: the header. */
  name: string;
  /** json checks: the gjson path. */
  path: string;
  /** Keys the row does not edit, sent back as they were. */
  extra: Record<string, unknown>;
}

export interface ExtractRow {
  var: string;
  from: string;
  /** path (json), name (header) or pattern (regex), per `from`. */
  arg: string;
  extra: Record<string, unknown>;
}

/** Options of one threshold line; a line with no request and no abort is sent as a plain string. */
export interface ThresholdOpt {
  request: string;
  abortOnFail: boolean;
  extra: Record<string, unknown>;
}

/** The monitor types (plan.MonitorTypes): node_exporter or windows_exporter, `volley monitor`, one metric of any exporter. */
export const MONITOR_TYPES = ['node', 'process', 'custom'] as const;

/** One monitor of the plan (plan.monitors[i]); metric and labels are sent for custom monitors only. */
export interface MonitorRow {
  name: string;
  type: string;
  url: string;
  /** Go durations as text; '' = left out (the server's default). */
  interval: string;
  timeout: string;
  metric: string;
  /** The label matchers as "k=v,k=v". */
  labels: string;
  /** The bearer token's secret reference ("{{secret.MON_TOKEN}}"); '' = none. */
  token: string;
  /** Monitor keys the row does not edit, sent back as they were. */
  extra: Record<string, unknown>;
}

export function emptyMonitor(): MonitorRow {
  return { name: '', type: 'node', url: 'http://127.0.0.1:9100/metrics', interval: '', timeout: '', metric: '', labels: '', token: '', extra: {} };
}

const MONITOR_KEYS = ['name', 'type', 'url', 'interval', 'timeout', 'metric', 'labels', 'token'];

/** labelsText writes a monitor's labels as "k=v,k=v" (in the object's order). */
export function labelsText(labels: unknown): string {
  return isObject(labels) ? Object.entries(labels).map(([k, v]) => `${k}=${str(v)}`).join(',') : '';
}

/**
 * parseLabels reads "k=v,k=v" into an object; a piece without "=" continues the previous value
 * (a value may hold commas: "path=/a,b" → {path: "/a,b"}), or is a label with an empty value when
 * it comes first. Keys and values are trimmed, blank pieces skipped; undefined when there is nothing.
 */
export function parseLabels(text: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  let last = '';
  for (const piece of text.split(',')) {
    const eq = piece.indexOf('=');
    if (piece.trim() === '') continue;
    if (eq < 0 && last !== '') {
      out[last] += `,${piece}`;
      continue;
    }
    const k = (eq < 0 ? piece : piece.slice(0, eq)).trim();
    if (k === '') continue;
    out[k] = eq < 0 ? '' : piece.slice(eq + 1).trim();
    last = k;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function monitorToRow(m: unknown): MonitorRow {
  const o = isObject(m) ? m : {};
  const extra = omit(o, MONITOR_KEYS);
  // Labels the row cannot show (not an object) are kept as they were.
  if (o.labels !== undefined && !isObject(o.labels)) extra.labels = o.labels;
  return { name: str(o.name), type: str(o.type), url: str(o.url), interval: str(o.interval), timeout: str(o.timeout), metric: str(o.metric), labels: labelsText(o.labels), token: str(o.token), extra };
}

function rowToMonitor(r: MonitorRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  setIf(out, 'name', r.name.trim());
  out.type = r.type;
  out.url = r.url.trim();
  setIf(out, 'interval', r.interval.trim());
  setIf(out, 'timeout', r.timeout.trim());
  if (r.type === 'custom') {
    setIf(out, 'metric', r.metric.trim());
    setIf(out, 'labels', parseLabels(r.labels));
  }
  setIf(out, 'token', r.token.trim());
  return withExtra(out, r.extra);
}

export interface RequestForm {
  name: string;
  method: string;
  url: string;
  headers: HeaderRow[];
  body: string;
  /** Whole number ≥ 1 as text; "" = left out (the server's default 1). Used by the weighted flow. */
  weight: string;
  /** Overrides the plan's think time ("1s", "500ms-2s"); "" = left out. */
  thinkTime: string;
  checks: CheckRow[];
  extract: ExtractRow[];
  /** Request fields the form does not edit, passed through unchanged. */
  extra: Record<string, unknown>;
}

export interface PlanForm {
  name: string;
  requests: RequestForm[];
  flow: string;
  /** The loaded plan had `flow`: sent back even when it is the default. */
  hadFlow: boolean;
  /** Plan think time ("1s", "500ms-2s"); "" = none. */
  thinkTime: string;
  /** Data CSV text, sent verbatim; blank = no data. */
  dataCsv: string;
  dataMode: string;
  /** The loaded plan had data.mode: sent back even when it is the default. */
  hadDataMode: boolean;
  /** Keys of `data` the form does not edit (file). */
  extraData: Record<string, unknown>;
  executor: string;
  vus: string;
  duration: string;
  iterations: string;
  maxDuration: string;
  stages: StageRow[];
  startVUs: string;
  rate: string;
  startRate: string;
  timeUnit: string;
  preAllocatedVUs: string;
  maxVUs: string;
  /** Comma-separated VU counts of a concurrency sweep. */
  levels: string;
  stepDuration: string;
  gracefulStop: string;
  timeout: string;
  keepAlive: boolean;
  followRedirects: boolean;
  maxRedirects: string;
  connectTimeout: string;
  insecureSkipVerify: boolean;
  /** http.version: '' (absent: 1.1), '1.1', '2', 'h2c', or what a loaded plan had. */
  httpVersion: string;
  /** http.h2_fallback (with version "2") and http.h2_connections ('' = one connection per VU). */
  h2Fallback: boolean;
  h2Connections: string;
  /** http.cookies: the cookie jar's scope (COOKIE_MODES; the first, "vu", is the default). */
  cookies: string;
  /** http.compression: the codings asked for, in the order they were ticked (or loaded). */
  compression: string[];
  /** http.max_header in bytes ('' = the default) and http.proxy ('' = direct). */
  maxHeader: string;
  proxy: string;
  /** One threshold per line; blank lines are ignored. */
  thresholds: string;
  /** Options of each non-blank threshold line, by index (missing = plain). */
  thresholdOpts: ThresholdOpt[];
  /** The plan's monitors (Prometheus endpoints scraped during the run). */
  monitors: MonitorRow[];
  /** Load fields of the loaded plan (sent back as they were when its executor is unknown to the form). */
  loadedLoad: Record<string, unknown>;
  /** HTTP keys the loaded plan had: sent back even when they hold the default. */
  loadedHttpKeys: string[];
  extraLoad: Record<string, unknown>;
  extraHttp: Record<string, unknown>;
  extraPlan: Record<string, unknown>;
}

export function emptyRequest(): RequestForm {
  return { name: '', method: 'GET', url: '', headers: [], body: '', weight: '', thinkTime: '', checks: [], extract: [], extra: {} };
}

/** emptyCheck is a new check row of the given type with its usual op and value. */
export function emptyCheck(type = 'status'): CheckRow {
  return { type, op: CHECK_DEFAULT_OP[type] ?? '', value: CHECK_DEFAULT_VALUE[type] ?? '', valueType: 'text', name: '', path: '', extra: {} };
}

/** retypeCheck changes a row's type: the op is kept when the new type has it, the value starts over. */
export function retypeCheck(row: CheckRow, type: string): void {
  if (row.type === type) return;
  row.type = type;
  const ops = CHECK_OPS[type];
  if (ops && !ops.includes(row.op)) row.op = CHECK_DEFAULT_OP[type];
  row.value = CHECK_DEFAULT_VALUE[type] ?? '';
  row.valueType = 'text';
}

export function emptyExtract(): ExtractRow {
  return { var: '', from: 'json', arg: '', extra: {} };
}

export function plainThreshold(): ThresholdOpt {
  return { request: '', abortOnFail: false, extra: {} };
}

export function defaultStages(): StageRow[] {
  return [
    { duration: '30s', target: '20' },
    { duration: '1m', target: '20' },
    { duration: '30s', target: '0' },
  ];
}

export function emptyForm(): PlanForm {
  return {
    name: '',
    requests: [{ ...emptyRequest(), url: 'http://127.0.0.1:8090/' }],
    flow: DEFAULTS.flow,
    hadFlow: false,
    thinkTime: '',
    dataCsv: '',
    dataMode: DEFAULTS.data_mode,
    hadDataMode: false,
    extraData: {},
    executor: DEFAULTS.executor,
    vus: '10',
    duration: '30s',
    iterations: '100',
    maxDuration: '',
    stages: defaultStages(),
    startVUs: '',
    rate: '100',
    startRate: '',
    timeUnit: '',
    preAllocatedVUs: '10',
    maxVUs: '',
    levels: DEFAULT_LEVELS.join(', '),
    stepDuration: '10s',
    gracefulStop: '',
    timeout: '10s',
    keepAlive: true,
    followRedirects: false,
    maxRedirects: '',
    connectTimeout: '',
    insecureSkipVerify: false,
    httpVersion: '',
    h2Fallback: false,
    h2Connections: '',
    cookies: COOKIE_MODES[0],
    compression: [],
    maxHeader: '',
    proxy: '',
    thresholds: '',
    thresholdOpts: [],
    monitors: [],
    loadedLoad: {},
    loadedHttpKeys: [],
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

/** pick keeps the given keys of obj, in obj's order. */
function pick(obj: Record<string, unknown> | undefined | null, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!obj) return out;
  for (const [k, v] of Object.entries(obj)) if (keys.includes(k)) out[k] = v;
  return out;
}

function str(v: unknown): string {
  return v === undefined || v === null ? '' : String(v);
}

/** Text of a field from the plan, or the new-plan default when the plan does not have it. */
function orDefault(v: unknown, dflt: string): string {
  return v === undefined || v === null ? dflt : String(v);
}

/** planToForm fills the form from a stored plan. Fields the executor does not use keep new-plan defaults. */
export function planToForm(spec: Loose<PlanSpec>): PlanForm {
  const d = emptyForm();
  const load = spec.load ?? {};
  const http = spec.http ?? {};
  const stages = Array.isArray(load.stages)
    ? load.stages.map((s: Partial<PlanStage>) => ({ duration: str(s?.duration), target: str(s?.target) }))
    : d.stages;
  const data = isObject(spec.data) ? spec.data : null;
  const thresholds = Array.isArray(spec.thresholds) ? (spec.thresholds as unknown[]) : [];
  return {
    name: str(spec.name),
    requests: (spec.requests ?? []).map(requestToForm),
    flow: str(spec.flow || DEFAULTS.flow),
    hadFlow: 'flow' in spec,
    thinkTime: str(spec.think_time),
    dataCsv: data ? str(data.csv) : '',
    dataMode: data ? str(data.mode || DEFAULTS.data_mode) : DEFAULTS.data_mode,
    hadDataMode: data ? 'mode' in data : false,
    extraData: omit(data, ['csv', 'mode']),
    executor: str(load.executor || DEFAULTS.executor),
    vus: orDefault(load.vus, d.vus),
    duration: orDefault(load.duration, d.duration),
    iterations: orDefault(load.iterations, d.iterations),
    maxDuration: str(load.max_duration),
    stages,
    startVUs: str(load.start_vus),
    rate: orDefault(load.rate, d.rate),
    startRate: str(load.start_rate),
    timeUnit: str(load.time_unit),
    preAllocatedVUs: orDefault(load.pre_allocated_vus, d.preAllocatedVUs),
    maxVUs: str(load.max_vus),
    levels: Array.isArray(load.levels) ? load.levels.join(', ') : d.levels,
    stepDuration: orDefault(load.step_duration, d.stepDuration),
    gracefulStop: str(load.graceful_stop),
    timeout: str(http.timeout),
    keepAlive: http.keep_alive !== false,
    followRedirects: http.follow_redirects === true,
    maxRedirects: str(http.max_redirects),
    connectTimeout: str(http.connect_timeout),
    insecureSkipVerify: http.insecure_skip_verify === true,
    httpVersion: str(http.version),
    h2Fallback: http.h2_fallback === true,
    h2Connections: str(http.h2_connections),
    cookies: typeof http.cookies === 'string' && http.cookies !== '' ? http.cookies : COOKIE_MODES[0],
    compression: Array.isArray(http.compression) ? http.compression.map(String) : [],
    maxHeader: str(http.max_header),
    proxy: str(http.proxy),
    thresholds: thresholds.map((t) => (isObject(t) ? str(t.expr) : str(t))).join('\n'),
    thresholdOpts: thresholds.map((t) =>
      isObject(t)
        ? { request: str(t.request), abortOnFail: t.abort_on_fail === true, extra: omit(t, ['expr', 'request', 'abort_on_fail']) }
        : plainThreshold(),
    ),
    monitors: Array.isArray(spec.monitors) ? (spec.monitors as unknown[]).map(monitorToRow) : [],
    loadedLoad: pick(load, LOAD_FIELDS),
    loadedHttpKeys: Object.keys(http).filter((k) => HTTP_KEYS.includes(k)),
    extraLoad: omit(load, LOAD_KEYS),
    extraHttp: omit(http, HTTP_KEYS),
    // monitors that are not a list stay as they were.
    extraPlan: omit(spec, ['name', 'requests', 'flow', 'think_time', 'data', 'load', 'http', 'thresholds', ...(Array.isArray(spec.monitors) ? ['monitors'] : [])]),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const REQUEST_KEYS = ['name', 'method', 'url', 'headers', 'body', 'weight', 'think_time', 'checks', 'extract', 'secret_headers'];

function requestToForm(r: Loose<PlanRequest>): RequestForm {
  const checks = Array.isArray(r.checks) ? (r.checks as unknown[]) : null;
  const extract = Array.isArray(r.extract) ? (r.extract as unknown[]) : null;
  const extra = omit(r, REQUEST_KEYS);
  // Malformed lists are kept as they were rather than lost.
  if (r.checks !== undefined && !checks) extra.checks = r.checks;
  if (r.extract !== undefined && !extract) extra.extract = r.extract;
  return {
    name: str(r.name),
    method: str(r.method || 'GET').toUpperCase(),
    url: str(r.url),
    headers: Object.entries(r.headers ?? {}).map(([key, value]) => headerRow(key, str(value), r.secret_headers)),
    body: str(r.body),
    weight: str(r.weight),
    thinkTime: str(r.think_time),
    checks: (checks ?? []).map(checkToRow),
    extract: (extract ?? []).map(extractToRow),
    extra,
  };
}

function headerRow(key: string, value: string, secretHeaders: unknown): HeaderRow {
  const marked = Array.isArray(secretHeaders) && secretHeaders.some((s) => typeof s === 'string' && s.toLowerCase() === key.toLowerCase());
  return marked && !alwaysSecret(key) ? { key, value, secret: true } : { key, value };
}

/** checkToRow reads one check; keys its type does not use stay in extra and are sent back. */
export function checkToRow(c: unknown): CheckRow {
  const o = isObject(c) ? c : {};
  const type = str(o.type);
  const row: CheckRow = { type, op: str(o.op), value: '', valueType: 'text', name: '', path: '', extra: {} };
  const used = ['type', 'op', 'value'];
  if (type === 'header') {
    row.name = str(o.name);
    used.push('name');
  }
  if (type === 'json') {
    row.path = str(o.path);
    used.push('path');
    const v = o.value;
    if (typeof v === 'number') row.valueType = 'number';
    else if (v === true) row.valueType = 'true';
    else if (v === false) row.valueType = 'false';
    else if (v === null) row.valueType = 'null';
    else if (typeof v === 'object') row.valueType = 'json';
    row.value = typeof v === 'object' && v !== null ? JSON.stringify(v) : typeof v === 'boolean' ? '' : str(v);
  } else if (o.value !== undefined && (o.value === null || typeof o.value === 'object')) {
    used.pop(); // a value this row cannot show: kept as it was
  } else {
    row.value = str(o.value);
  }
  row.extra = omit(o, used);
  return row;
}

export function extractToRow(x: unknown): ExtractRow {
  const o = isObject(x) ? x : {};
  const from = str(o.from);
  const key = EXTRACT_ARG[from];
  return { var: str(o.var), from, arg: key ? str(o[key]) : '', extra: omit(o, ['var', 'from', ...(key ? [key] : [])]) };
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

/**
 * parseLevels reads the comma-separated VU levels of a sweep ("10, 50,100" → [10, 50, 100]). Blank
 * entries are skipped; anything that is not a whole number is kept as text so that the server names
 * it (`load.levels[1]`). Returns undefined when nothing was entered (the server's default applies).
 */
export function parseLevels(text: string): (number | string)[] | undefined {
  const out = text
    .split(/[,;\s]+/)
    .map((t) => t.trim())
    .filter((t) => t !== '')
    .map((t) => typedInt(t) as number | string);
  return out.length > 0 ? out : undefined;
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

/** loadField returns the JSON value of one load field from the form, by its kind (undefined = leave it out). */
function loadField(form: PlanForm, f: LoadFieldInfo): unknown {
  if (f.name === 'stages') {
    // Every row is sent, blank ones too, so that stages[i] in an answer is row i of the table.
    return form.stages.length === 0 ? undefined : form.stages.map((s) => ({ duration: s.duration.trim(), target: typedInt(s.target) ?? '' }));
  }
  const text = form[LOAD_FIELD_UI[f.name].prop];
  switch (f.kind) {
    case 'levels':
      return parseLevels(text);
    case 'duration':
      return text.trim();
    default:
      return typedInt(text);
  }
}

/**
 * typedNumber: "" → undefined, a decimal number → number, anything else → the text (for the server
 * to name).
 */
export function typedNumber(text: string): number | string | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) return Number(t);
  return t;
}

/** Copy the keys of extra that out does not have (after out's own, so the server's order is kept). */
function withExtra(out: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(extra)) if (!(k in out)) out[k] = v;
  return out;
}

/** jsonCheckValue is the JSON value of a json check's input; undefined = leave it out. */
function jsonCheckValue(row: CheckRow): unknown {
  switch (row.valueType) {
    case 'number':
      return typedNumber(row.value) ?? '';
    case 'true':
      return true;
    case 'false':
      return false;
    case 'null':
      return null;
    case 'json':
      try {
        return JSON.parse(row.value);
      } catch {
        return row.value;
      }
    default:
      return row.value;
  }
}

/** checkValueIssue: a problem with a check's value the form can see before the server does ("" = none). */
export function checkValueIssue(row: CheckRow): string {
  if (row.type === 'json' && row.valueType === 'number' && row.op !== 'exists' && typeof typedNumber(row.value) !== 'number') {
    return t('editor.check.notNumber');
  }
  if (row.type === 'json' && row.valueType === 'json' && row.op !== 'exists') {
    try {
      JSON.parse(row.value);
    } catch {
      return t('editor.check.notJson');
    }
  }
  return '';
}

/** rowToCheck writes one check in the server's key order (type, op, value, name, path). */
export function rowToCheck(row: CheckRow): Record<string, unknown> {
  const out: Record<string, unknown> = { type: row.type, op: row.op };
  const exists = row.op === 'exists';
  switch (row.type) {
    case 'status':
      setIf(out, 'value', typedNumber(row.value));
      break;
    case 'header':
      if (!exists || row.value !== '') out.value = row.value;
      out.name = row.name.trim();
      break;
    case 'body':
      out.value = row.value;
      break;
    case 'json':
      if (!exists || row.value !== '' || row.valueType !== 'text') out.value = jsonCheckValue(row);
      out.path = row.path.trim();
      break;
    case 'latency':
      out.value = row.value.trim();
      break;
    default:
      setIf(out, 'value', row.value);
  }
  return withExtra(out, row.extra);
}

/** rowToExtract writes one extract rule (var, from, then path / name / pattern). */
export function rowToExtract(row: ExtractRow): Record<string, unknown> {
  const out: Record<string, unknown> = { var: row.var.trim(), from: row.from };
  const key = EXTRACT_ARG[row.from];
  if (key) out[key] = key === 'pattern' ? row.arg : row.arg.trim();
  return withExtra(out, row.extra);
}

/** thresholdEntries pairs each threshold line with its options: plain lines as strings, others as objects. */
export function thresholdEntries(form: Pick<PlanForm, 'thresholds' | 'thresholdOpts'>): PlanThreshold[] {
  return thresholdLines(form.thresholds).map((expr, i) => {
    const o = form.thresholdOpts[i];
    if (!o || (o.request === '' && !o.abortOnFail && Object.keys(o.extra).length === 0)) return expr;
    const out: Record<string, unknown> = { expr };
    if (o.request !== '') out.request = o.request;
    if (o.abortOnFail) out.abort_on_fail = true;
    return withExtra(out, o.extra) as PlanThreshold;
  });
}

/**
 * reconcileThresholdOpts keeps each line's options with its line when the thresholds text changes.
 * Lines are matched by a longest-common-subsequence diff; between two matched lines, changed lines
 * pair up in order (an edited line keeps its options), extra new lines are plain, and options of
 * removed lines are dropped.
 */
export function reconcileThresholdOpts(oldText: string, oldOpts: ThresholdOpt[], newText: string): ThresholdOpt[] {
  const a = thresholdLines(oldText);
  const b = thresholdLines(newText);
  // lcs[i][j] = length of the LCS of a[i:] and b[j:]
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out: ThresholdOpt[] = [];
  const opt = (i: number) => oldOpts[i] ?? plainThreshold();
  let i = 0;
  let j = 0;
  let gapOld: number[] = [];
  const flushGap = (upTo: number) => {
    // new lines out.length..upTo-1 are unmatched: pair them with the gap's old lines in order
    let k = 0;
    while (out.length < upTo) out.push(k < gapOld.length ? opt(gapOld[k++]) : plainThreshold());
    gapOld = [];
  };
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      flushGap(j);
      out.push(opt(i));
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      gapOld.push(i++);
    } else {
      j++;
    }
  }
  while (i < a.length) gapOld.push(i++);
  flushGap(b.length);
  return out;
}

/** nameURL is a URL as it goes into a default request name: without its query string, fragment and user:password@. */
export function nameURL(url: string): string {
  let u = url;
  const q = u.search(/[?#]/);
  if (q >= 0) u = u.slice(0, q);
  const i = u.indexOf('://');
  if (i >= 0) {
    const rest = u.slice(i + 3);
    const slash = rest.indexOf('/');
    const authority = slash >= 0 ? rest.slice(0, slash) : rest;
    const at = authority.lastIndexOf('@');
    if (at >= 0) u = u.slice(0, i + 3) + rest.slice(at + 1);
  }
  return u;
}

/** requestName is the name the server gives a request (its name, else "METHOD URL" without the query string). */
export function requestName(r: RequestForm): string {
  return r.name.trim() || `${r.method} ${nameURL(r.url.trim())}`;
}

/** requestNames lists the distinct request names, in order (the targets of a threshold). */
export function requestNames(form: PlanForm): string[] {
  return [...new Set(form.requests.map(requestName))];
}

export interface CsvPreview {
  columns: string[];
  rows: number;
  /** A problem the server would report ("" = none). */
  problem: string;
}

/**
 * parseCsv reads CSV the way the server does (Go encoding/csv with TrimLeadingSpace): quoted fields
 * may hold commas, quotes ("") and line breaks; blank lines are skipped; every row must have as
 * many fields as the header.
 */
export function parseCsv(text: string): { records: string[][]; problem: string } {
  const records: string[][] = [];
  let rec: string[] = [];
  let field = '';
  let quoted = false;
  let fieldStart = true;
  let line = 1;
  let recLine = 1;
  const endField = () => {
    rec.push(field);
    field = '';
    fieldStart = true;
  };
  const endRecord = () => {
    endField();
    if (!(rec.length === 1 && rec[0] === '')) records.push(rec);
    rec = [];
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          quoted = false;
          const next = text[i + 1];
          if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') {
            return { records, problem: t('editor.csv.extraQuote', { line }) };
          }
        }
      } else {
        if (ch === '\n') line++;
        field += ch;
      }
      continue;
    }
    if (fieldStart && (ch === ' ' || ch === '\t')) continue;
    if (ch === '"' && fieldStart) {
      quoted = true;
      fieldStart = false;
    } else if (ch === ',') {
      endField();
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      endRecord();
      line++;
      recLine = line;
    } else if (ch === '"') {
      return { records, problem: t('editor.csv.bareQuote', { line }) };
    } else {
      field += ch;
      fieldStart = false;
    }
  }
  if (quoted) return { records, problem: t('editor.csv.unclosed', { line: recLine }) };
  if (field !== '' || rec.length > 0) endRecord();
  return { records, problem: '' };
}

/** csvPreview describes the data table: its columns (the variable names), row count and first problem. */
export function csvPreview(text: string): CsvPreview {
  const { records, problem } = parseCsv(text);
  const columns = records[0] ?? [];
  const rows = Math.max(0, records.length - 1);
  if (problem) return { columns, rows, problem };
  if (records.length < 2) return { columns, rows, problem: t('editor.csv.noRows') };
  const bad = records.findIndex((r) => r.length !== columns.length);
  if (bad > 0) return { columns, rows, problem: t('editor.csv.rowFields', { row: bad, n: records[bad].length, cols: columns.length }) };
  const badName = columns.find((c) => !VAR_NAME.test(c));
  if (badName !== undefined) return { columns, rows, problem: t('editor.csv.badColumn', { name: badName }) };
  return { columns, rows, problem: '' };
}

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** isVarName: letters, digits and _, not starting with a digit (what {{name}} accepts). */
export function isVarName(s: string): boolean {
  return VAR_NAME.test(s);
}

/** Variables a plan's requests may use: built-ins, data columns, extracted vars. */
export function availableVars(form: PlanForm): { builtins: string[]; columns: string[]; extracted: string[] } {
  const columns = form.dataCsv.trim() === '' ? [] : (parseCsv(form.dataCsv).records[0] ?? []).filter(isVarName);
  const extracted = [...new Set(form.requests.flatMap((r) => r.extract.map((x) => x.var.trim()).filter(isVarName)))];
  return { builtins: [...BUILTIN_VARS], columns, extracted };
}

/** weightShares: each request's share of iterations in the weighted flow (null when a weight is not a whole number ≥ 1). */
export function weightShares(form: PlanForm): (number | null)[] {
  const ws = form.requests.map((r) => {
    const v = typedInt(r.weight);
    return v === undefined ? 1 : typeof v === 'number' && v >= 1 ? v : null;
  });
  const total = ws.reduce<number>((a, w) => a + (w ?? 0), 0);
  return ws.map((w) => (w === null || total === 0 ? null : w / total));
}

function requestToPlan(r: RequestForm): PlanRequestInput {
  const out: Record<string, unknown> = {};
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
  setIf(out, 'weight', typedInt(r.weight));
  setIf(out, 'think_time', r.thinkTime.trim());
  if (r.checks.length > 0) out.checks = r.checks.map(rowToCheck);
  if (r.extract.length > 0) out.extract = r.extract.map(rowToExtract);
  const marked = rows.filter((h) => h.secret && !alwaysSecret(h.key) && h.key.trim() !== '').map((h) => h.key.trim());
  if (marked.length > 0) out.secret_headers = marked;
  return withExtra(out, r.extra) as PlanRequestInput;
}

type PlanRequestInput = PlanInput['requests'][number];

/** A plan as formToPlan writes it: load, http and thresholds are always there. */
export type FormPlan = PlanInput & Required<Pick<PlanInput, 'load' | 'http' | 'thresholds'>>;

/** formToPlan builds the plan JSON sent to POST/PUT /api/plans. */
export function formToPlan(form: PlanForm): FormPlan {
  const requests = form.requests.map(requestToPlan);

  const load: Record<string, unknown> = { ...form.extraLoad, executor: form.executor };
  const fields = fieldInfosOf(form.executor);
  if (fields) {
    for (const f of fields) setIf(load, f.name, loadField(form, f));
  } else {
    // An executor this form does not know: send its fields back as they were loaded.
    Object.assign(load, form.loadedLoad);
  }
  setIf(load, 'graceful_stop', form.gracefulStop.trim());

  const had = (k: string) => form.loadedHttpKeys.includes(k);
  const http: Record<string, unknown> = {};
  setIf(http, 'timeout', form.timeout.trim());
  setIf(http, 'connect_timeout', form.connectTimeout.trim());
  http.keep_alive = form.keepAlive;
  if (form.followRedirects || had('follow_redirects')) http.follow_redirects = form.followRedirects;
  setIf(http, 'max_redirects', typedInt(form.maxRedirects));
  if (form.insecureSkipVerify || had('insecure_skip_verify')) http.insecure_skip_verify = form.insecureSkipVerify;
  setIf(http, 'version', form.httpVersion);
  if (form.h2Fallback || had('h2_fallback')) http.h2_fallback = form.h2Fallback;
  setIf(http, 'h2_connections', typedInt(form.h2Connections));
  setIf(http, 'max_header', typedInt(form.maxHeader));
  setIf(http, 'proxy', form.proxy.trim());
  withExtra(http, form.extraHttp);
  if (form.cookies !== COOKIE_MODES[0] || had('cookies')) http.cookies = form.cookies;
  if (form.compression.length > 0 || had('compression')) http.compression = [...form.compression];

  const out: Record<string, unknown> = { name: form.name.trim(), requests };
  if (form.flow !== DEFAULTS.flow || form.hadFlow) out.flow = form.flow;
  setIf(out, 'think_time', form.thinkTime.trim());
  if (form.dataCsv.trim() !== '' || Object.keys(form.extraData).length > 0) {
    const data: Record<string, unknown> = {};
    if (form.dataCsv.trim() !== '') data.csv = form.dataCsv;
    Object.assign(data, form.extraData);
    if (form.dataMode !== DEFAULTS.data_mode || form.hadDataMode) data.mode = form.dataMode;
    out.data = data;
  }
  out.load = load;
  out.http = http;
  // The server takes strings and objects; types.ts's PlanSpec (shared) still declares string[].
  out.thresholds = thresholdEntries(form);
  if (form.monitors.length > 0) out.monitors = form.monitors.map(rowToMonitor);
  return withExtra(out, form.extraPlan) as FormPlan;
}

/** toggleCompression ticks (on) or unticks a coding of http.compression; a ticked coding goes last. */
export function toggleCompression(form: Pick<PlanForm, 'compression'>, coding: string, on: boolean): void {
  const rest = form.compression.filter((c) => c !== coding);
  form.compression = on ? [...rest, coding] : rest;
}

/** formSlots lists the field paths that have an input in the form as it is currently shown. */
export function formSlots(form: PlanForm): string[] {
  const slots = ['name', 'flow', 'think_time', 'data', 'data.csv', 'data.mode'];
  form.requests.forEach((r, i) => {
    const p = `requests[${i}]`;
    for (const f of ['name', 'method', 'url', 'headers', 'body', 'think_time', 'checks', 'extract']) slots.push(`${p}.${f}`);
    if (form.flow === 'weighted') slots.push(`${p}.weight`);
    r.checks.forEach((c, j) => {
      const q = `${p}.checks[${j}]`;
      slots.push(q, `${q}.type`, `${q}.op`);
      if (c.op !== 'exists') slots.push(`${q}.value`);
      if (c.type === 'header') slots.push(`${q}.name`);
      if (c.type === 'json') slots.push(`${q}.path`);
    });
    r.extract.forEach((x, j) => {
      const q = `${p}.extract[${j}]`;
      slots.push(q, `${q}.var`, `${q}.from`);
      const key = EXTRACT_ARG[x.from];
      if (key) slots.push(`${q}.${key}`);
    });
  });
  slots.push('load.executor');
  for (const f of fieldsOf(form.executor) ?? []) {
    slots.push(`load.${f}`);
    if (f === 'stages') {
      form.stages.forEach((_, i) => slots.push(`load.stages[${i}].duration`, `load.stages[${i}].target`));
    }
  }
  slots.push('load.graceful_stop');
  slots.push(
    'http.timeout',
    'http.keep_alive',
    'http.follow_redirects',
    'http.max_redirects',
    'http.connect_timeout',
    'http.insecure_skip_verify',
    'http.version',
    'http.h2_fallback',
    'http.h2_connections',
    'http.cookies',
    'http.compression',
    'http.max_header',
    'http.proxy',
    'thresholds',
  );
  thresholdLines(form.thresholds).forEach((_, i) => slots.push(`thresholds[${i}].request`, `thresholds[${i}].abort_on_fail`));
  slots.push('monitors');
  form.monitors.forEach((m, i) => {
    const q = `monitors[${i}]`;
    slots.push(q, `${q}.name`, `${q}.type`, `${q}.url`, `${q}.interval`, `${q}.timeout`, `${q}.token`);
    if (m.type === 'custom') slots.push(`${q}.metric`, `${q}.labels`);
  });
  return slots;
}

/** levelLabel names one entry of the levels input for an error next to it ("level 2 (abc)"). */
export function levelLabel(form: PlanForm, path: string): string {
  const m = /^load\.levels\[(\d+)\]$/.exec(path);
  if (!m) return '';
  const i = Number(m[1]);
  const entry = parseLevels(form.levels)?.[i];
  return `level ${i + 1}${entry !== undefined ? ` (${entry})` : ''}: `;
}

/** parseGoDuration reads a Go duration string ("1m30s", "500ms", "2h") as seconds; null when it is not one. */
export function parseGoDuration(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const t = text.trim();
  if (t === '' || t === '0') return t === '0' ? 0 : null;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  const unit: Record<string, number> = { ns: 1e-9, us: 1e-6, 'µs': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = re.exec(t)) !== null) {
    total += Number(m[1]) * unit[m[2]];
    end = re.lastIndex;
  }
  return end === t.length ? total : null;
}

/** fmtSpan prints seconds the way people write durations: "45s", "2m", "1m30s", "1h5m". */
export function fmtSpan(s: number): string {
  if (!Number.isFinite(s)) return '—';
  if (s < 1) return `${Math.round(s * 1000)}ms`;
  const t = Math.round(s);
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = t % 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${sec || (!h && !m) ? `${sec}s` : ''}`;
}

/** A Go duration as stored ("10m0s") in its short form ("10m"); other text unchanged. */
function span(text: unknown): string {
  const s = parseGoDuration(text);
  return s === null ? String(text ?? '') : fmtSpan(s);
}

/** loadSummary describes a plan's load model in a few words ("10 VUs · 30s", "200 it/s · 8s · 5–50 VUs"). */
export function loadSummary(load: Loose<PlanSpec['load']> | undefined | null): string {
  if (!load) return '—';
  const ex = String(load.executor || DEFAULTS.executor);
  const per = (unit: unknown) => {
    const u = span(unit || '1s');
    return u === '1s' ? '/s' : ` per ${u}`;
  };
  const vusRange = () => {
    const pre = load.pre_allocated_vus;
    const max = load.max_vus;
    return max !== undefined && String(max) !== String(pre) ? `${pre ?? '?'}–${max} VUs` : `${pre ?? '?'} VUs`;
  };
  const stages = Array.isArray(load.stages) ? load.stages : [];
  const stagesLen = stages.reduce((a, s) => a + (parseGoDuration(s?.duration) ?? 0), 0);
  const targets = stages.map((s) => String(s?.target ?? '?'));
  switch (ex) {
    case 'constant-vus':
      return `${load.vus ?? '?'} VUs · ${span(load.duration)}`;
    case 'ramping-vus':
      return `${[String(load.start_vus ?? 0), ...targets].join('→')} VUs · ${fmtSpan(stagesLen)}`;
    case 'per-vu-iterations':
      return `${load.vus ?? '?'} VUs × ${load.iterations ?? '?'} iterations`;
    case 'shared-iterations':
      return `${load.iterations ?? '?'} iterations shared by ${load.vus ?? '?'} VUs`;
    case 'constant-arrival-rate':
      return `${load.rate ?? '?'} it${per(load.time_unit)} · ${span(load.duration)} · ${vusRange()}`;
    case 'ramping-arrival-rate':
      return `${[String(load.start_rate ?? 0), ...targets].join('→')} it${per(load.time_unit)} · ${fmtSpan(stagesLen)} · ${vusRange()}`;
    case 'concurrency-sweep': {
      const levels = Array.isArray(load.levels) ? load.levels : DEFAULT_LEVELS;
      return `${levels.join(', ')} VUs × ${span(load.step_duration || '10s')}`;
    }
    default:
      return [load.vus !== undefined ? `${load.vus} VUs` : '', load.duration ? span(load.duration) : ''].filter(Boolean).join(' · ') || '—';
  }
}
