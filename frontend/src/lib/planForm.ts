// The plan editor's form model and its conversion to and from the plan JSON. Inputs hold strings;
// the conversion types numbers, turns header rows into an object, drops empty optional values,
// sends only the load fields of the chosen executor (the server rejects the others with "does not
// apply to …"), and keeps every plan field the form does not show (checks, weight, hosts, …) untouched.
import type { PlanSpec, PlanStage } from './types';

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

/** The executors, in the order the server lists them (backend/internal/plan/load.go). */
export const EXECUTORS = [
  'constant-vus',
  'ramping-vus',
  'per-vu-iterations',
  'shared-iterations',
  'constant-arrival-rate',
  'ramping-arrival-rate',
  'concurrency-sweep',
] as const;
export type Executor = (typeof EXECUTORS)[number];

/** A load field the form edits (JSON name). graceful_stop applies to every executor. */
export type LoadField =
  | 'vus'
  | 'duration'
  | 'iterations'
  | 'max_duration'
  | 'stages'
  | 'start_vus'
  | 'rate'
  | 'start_rate'
  | 'time_unit'
  | 'pre_allocated_vus'
  | 'max_vus'
  | 'levels'
  | 'step_duration';

/** Which load fields each executor takes, in the order the form shows them. */
export const EXECUTOR_FIELDS: Record<Executor, readonly LoadField[]> = {
  'constant-vus': ['vus', 'duration'],
  'ramping-vus': ['start_vus', 'stages'],
  'per-vu-iterations': ['vus', 'iterations', 'max_duration'],
  'shared-iterations': ['vus', 'iterations', 'max_duration'],
  'constant-arrival-rate': ['rate', 'time_unit', 'duration', 'pre_allocated_vus', 'max_vus'],
  'ramping-arrival-rate': ['start_rate', 'time_unit', 'stages', 'pre_allocated_vus', 'max_vus'],
  'concurrency-sweep': ['levels', 'step_duration'],
};

const LOAD_FIELDS: readonly LoadField[] = [
  'vus',
  'duration',
  'iterations',
  'max_duration',
  'stages',
  'start_vus',
  'rate',
  'start_rate',
  'time_unit',
  'pre_allocated_vus',
  'max_vus',
  'levels',
  'step_duration',
];
const LOAD_KEYS = ['executor', 'graceful_stop', ...LOAD_FIELDS];
const HTTP_KEYS = ['timeout', 'keep_alive', 'follow_redirects', 'max_redirects', 'connect_timeout', 'insecure_skip_verify'];

/** What the closed and open models mean (the tooltip of the model tag). */
export const MODEL_HELP = {
  closed:
    'Closed model: each VU sends its next iteration only when the previous one has finished, so a slower target receives less load.',
  open: 'Open model: iterations start on schedule whatever the target does; arrivals finding no free VU are counted as dropped iterations.',
} as const;

/** One line per executor: what it does (shown after its closed/open model tag). */
export const EXECUTOR_HELP: Record<Executor, string> = {
  'constant-vus': 'A fixed number of VUs loop over the requests for the whole duration.',
  'ramping-vus': 'The number of VUs moves linearly from the start VUs to each stage’s target in turn.',
  'per-vu-iterations': 'Each VU runs the requests a fixed number of times, then stops (bounded by max duration).',
  'shared-iterations': 'The VUs share a fixed total of iterations — faster VUs take more — until all are done (bounded by max duration).',
  'constant-arrival-rate':
    'Iterations start at a fixed rate per time unit whatever the target does; arrivals finding no free VU are counted as dropped iterations.',
  'ramping-arrival-rate':
    'The rate moves linearly from the start rate to each stage’s target; iterations start on schedule whatever the target does, arrivals finding no free VU are counted as dropped iterations.',
  'concurrency-sweep':
    'Runs each VU level for one step duration and reports a capacity table: throughput and latency per level, and the knee where more concurrency stops adding throughput.',
};

export function isExecutor(ex: string): ex is Executor {
  return (EXECUTORS as readonly string[]).includes(ex);
}

/** isOpenModel: arrival-rate executors start iterations on a schedule (dropped iterations, schedule lag). */
export function isOpenModel(ex: string | undefined): boolean {
  return ex === 'constant-arrival-rate' || ex === 'ramping-arrival-rate';
}

/** The fields of an executor; null for one this form does not know. */
export function fieldsOf(ex: string): readonly LoadField[] | null {
  return isExecutor(ex) ? EXECUTOR_FIELDS[ex] : null;
}

export const DEFAULT_LEVELS = [10, 50, 100, 500, 1000];

export interface HeaderRow {
  key: string;
  value: string;
}

export interface StageRow {
  duration: string;
  target: string;
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
  /** One threshold per line; blank lines are ignored. */
  thresholds: string;
  /** Load fields of the loaded plan (sent back as they were when its executor is unknown to the form). */
  loadedLoad: Record<string, unknown>;
  /** HTTP keys the loaded plan had: sent back even when they hold the default. */
  loadedHttpKeys: string[];
  extraLoad: Record<string, unknown>;
  extraHttp: Record<string, unknown>;
  extraPlan: Record<string, unknown>;
}

export function emptyRequest(): RequestForm {
  return { name: '', method: 'GET', url: '', headers: [], body: '', extra: {} };
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
    executor: 'constant-vus',
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
    thresholds: '',
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

function pick(obj: Record<string, unknown> | undefined | null, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!obj) return out;
  for (const k of keys) if (k in obj) out[k] = obj[k];
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
export function planToForm(spec: PlanSpec): PlanForm {
  const d = emptyForm();
  const load = spec.load ?? {};
  const http = spec.http ?? {};
  const stages = Array.isArray(load.stages)
    ? load.stages.map((s: Partial<PlanStage>) => ({ duration: str(s?.duration), target: str(s?.target) }))
    : d.stages;
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
    thresholds: (spec.thresholds ?? []).join('\n'),
    loadedLoad: pick(load, LOAD_FIELDS),
    loadedHttpKeys: Object.keys(http).filter((k) => HTTP_KEYS.includes(k)),
    extraLoad: omit(load, LOAD_KEYS),
    extraHttp: omit(http, HTTP_KEYS),
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

/** loadField returns the JSON value of one load field from the form (undefined = leave it out). */
function loadField(form: PlanForm, f: LoadField): unknown {
  switch (f) {
    case 'vus':
      return typedInt(form.vus);
    case 'duration':
      return form.duration.trim();
    case 'iterations':
      return typedInt(form.iterations);
    case 'max_duration':
      return form.maxDuration.trim();
    case 'stages':
      // Every row is sent, blank ones too, so that stages[i] in an answer is row i of the table.
      return form.stages.length === 0
        ? undefined
        : form.stages.map((s) => ({ duration: s.duration.trim(), target: typedInt(s.target) ?? '' }));
    case 'start_vus':
      return typedInt(form.startVUs);
    case 'rate':
      return typedInt(form.rate);
    case 'start_rate':
      return typedInt(form.startRate);
    case 'time_unit':
      return form.timeUnit.trim();
    case 'pre_allocated_vus':
      return typedInt(form.preAllocatedVUs);
    case 'max_vus':
      return typedInt(form.maxVUs);
    case 'levels':
      return parseLevels(form.levels);
    case 'step_duration':
      return form.stepDuration.trim();
  }
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
  const fields = fieldsOf(form.executor);
  if (fields) {
    for (const f of fields) setIf(load, f, loadField(form, f));
  } else {
    // An executor this form does not know: send its fields back as they were loaded.
    Object.assign(load, form.loadedLoad);
  }
  setIf(load, 'graceful_stop', form.gracefulStop.trim());

  const had = (k: string) => form.loadedHttpKeys.includes(k);
  const http: Record<string, unknown> = { ...form.extraHttp };
  setIf(http, 'timeout', form.timeout.trim());
  setIf(http, 'connect_timeout', form.connectTimeout.trim());
  http.keep_alive = form.keepAlive;
  if (form.followRedirects || had('follow_redirects')) http.follow_redirects = form.followRedirects;
  setIf(http, 'max_redirects', typedInt(form.maxRedirects));
  if (form.insecureSkipVerify || had('insecure_skip_verify')) http.insecure_skip_verify = form.insecureSkipVerify;

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
    'thresholds',
  );
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
export function loadSummary(load: PlanSpec['load'] | undefined | null): string {
  if (!load) return '—';
  const ex = String(load.executor || 'constant-vus');
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
