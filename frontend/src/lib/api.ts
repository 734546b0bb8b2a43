// The API client. Every failure — network, HTTP error, malformed body — becomes an ApiError with a
// human-readable message, so pages can always show something instead of a blank screen.
import type { StartBody } from './agents';
import { t } from './i18n.svelte';
import type {
  AgentsResponse,
  CompareResponse,
  DistributionResponse,
  ImportResult,
  ListResponse,
  Plan,
  PlanInput,
  Run,
  RunEvent,
  SamplesResponse,
  Secret,
  SendResult,
  TrendPoint,
} from './types';

export class ApiError extends Error {
  /** HTTP status; 0 when the server could not be reached. */
  readonly status: number;
  /** The contract's error code (`invalid_plan`, `not_found`, `run_in_progress`, …) or a client-side one (`network`, `bad_response`, `http_<status>`). */
  readonly code: string;
  /** Validation problems by field path (`requests[0].url`), only for validation errors. */
  readonly fields: Record<string, string>;

  constructor(status: number, code: string, message: string, fields: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.fields = fields;
  }
}

/** errorMessage turns anything thrown into a line of text for the UI. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** fieldsMessage is errorMessage, or, when the answer names fields, `field: message; …`. */
export function fieldsMessage(err: unknown): string {
  if (err instanceof ApiError && Object.keys(err.fields).length > 0) {
    return Object.entries(err.fields)
      .map(([f, m]) => `${f}: ${m}`)
      .join('; ');
  }
  return errorMessage(err);
}

function statusText(status: number): string {
  if (status === 404) return 'not found';
  if (status >= 500) return 'server error';
  return 'request failed';
}

/** parseError builds an ApiError from a non-2xx response, whatever its body holds. */
async function parseError(res: Response, method: string, path: string): Promise<ApiError> {
  let text = '';
  try {
    text = await res.text();
  } catch {
    /* body unreadable: fall through */
  }
  try {
    const body = JSON.parse(text) as unknown;
    const e = (body as { error?: unknown })?.error;
    if (e && typeof e === 'object') {
      const { code, message, fields } = e as { code?: unknown; message?: unknown; fields?: unknown };
      const f: Record<string, string> = {};
      if (fields && typeof fields === 'object') {
        for (const [k, v] of Object.entries(fields as Record<string, unknown>)) f[k] = String(v);
      }
      return new ApiError(
        res.status,
        typeof code === 'string' && code ? code : `http_${res.status}`,
        typeof message === 'string' && message ? message : `${method} ${path}: ${res.status} ${statusText(res.status)}`,
        f,
      );
    }
  } catch {
    /* not JSON */
  }
  const snippet = text.trim().slice(0, 200);
  return new ApiError(
    res.status,
    `http_${res.status}`,
    `${method} ${path}: ${res.status} ${statusText(res.status)}${snippet ? ` — ${snippet}` : ''}`,
  );
}

/** request performs one API call and decodes the JSON answer (undefined for 204). */
/** An answer index.html started fetching before the app loaded, used once for its exact URL. */
function takePrefetched(method: string, path: string, body: unknown): Promise<Response> | undefined {
  const pre = (globalThis as { __volleyPrefetch?: Record<string, Promise<Response>> }).__volleyPrefetch;
  if (!pre || method !== 'GET' || body !== undefined || !(path in pre)) return undefined;
  const p = pre[path];
  delete pre[path];
  return p;
}

/** Called on any 401 answer but the login's own (the session ended: the app shows the login page). */
let onUnauthorized: (() => void) | null = null;
export function setUnauthorizedHandler(fn: (() => void) | null): void {
  onUnauthorized = fn;
}

export async function request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const init: RequestInit = { method, headers: { Accept: 'application/json' }, signal };
  // Every state change carries Content-Type: application/json, body or not: the server refuses
  // other state changes (415), which keeps plain HTML forms of other sites out.
  if (body !== undefined || (method !== 'GET' && method !== 'HEAD')) {
    init.headers = { ...init.headers, 'Content-Type': 'application/json' };
  }
  if (body !== undefined) init.body = JSON.stringify(body);
  let res: Response;
  try {
    res = await (takePrefetched(method, path, body) ?? fetch(path, init));
  } catch (err) {
    if ((err as Error)?.name === 'AbortError') throw err;
    throw new ApiError(0, 'network', t('api.unreachable', { request: `${method} ${path}`, error: errorMessage(err) }));
  }
  if (!res.ok) {
    if (res.status === 401 && path !== '/api/auth/login') onUnauthorized?.();
    throw await parseError(res, method, path);
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  if (text === '') return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError(res.status, 'bad_response', t('api.notJson', { request: `${method} ${path}` }));
  }
}

function qs(params: Record<string, string | number | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

export interface RunQuery {
  plan_id?: number | string;
  status?: string;
  tag?: string;
  /** RFC 3339: started_at ≥ from. */
  from?: string;
  /** RFC 3339: started_at < to. */
  to?: string;
  thresholds?: 'passed' | 'failed' | '';
  /** Outcomes, one or a comma list (passed, finished_with_errors, failed). */
  outcome?: string;
  sort?: string;
  order?: 'asc' | 'desc' | '';
  limit?: number;
  offset?: number;
}

export type ReportFormat = 'json' | 'csv' | 'html';

/**
 * reportURL is the download address of a run's report (Content-Disposition: attachment); lang, for
 * the HTML page, is the language it is written in (the UI's: en or zh-CN).
 */
export function reportURL(id: number | string, format: ReportFormat, lang?: string): string {
  const l = format === 'html' && lang ? `&lang=${encodeURIComponent(lang)}` : '';
  return `/api/runs/${id}/report?format=${format}${l}`;
}

export type Role = 'admin' | 'tester' | 'viewer';
export const ROLES: readonly Role[] = ['viewer', 'tester', 'admin'];

/** GET /api/auth/me: who is logged in; auth_enabled false means no users exist (the local admin). */
export interface Me {
  user: string;
  role: Role;
  auth_enabled: boolean;
  via?: 'session' | 'token' | 'local';
}
export interface User {
  name: string;
  role: Role;
  created_at: string;
  updated_at: string;
}
export interface ApiToken {
  id: number;
  user: string;
  role: Role;
  label: string;
  created_at: string;
  last_used_at: string | null;
  /** Only in the answer that created it: shown once. */
  token?: string;
}
export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  action: string;
  target: string;
  detail: Record<string, unknown>;
  addr: string;
}

export const authApi = {
  me: () => request<Me>('GET', '/api/auth/me'),
  login: (username: string, password: string) => request<Me>('POST', '/api/auth/login', { username, password }),
  logout: () => request<void>('POST', '/api/auth/logout'),
  listUsers: () => request<ListResponse<User>>('GET', '/api/users'),
  createUser: (u: { name: string; role: Role; password: string }) => request<User>('POST', '/api/users', u),
  updateUser: (name: string, patch: { role?: Role; password?: string }) =>
    request<User>('PATCH', `/api/users/${encodeURIComponent(name)}`, patch),
  deleteUser: (name: string) => request<void>('DELETE', `/api/users/${encodeURIComponent(name)}`),
  listTokens: () => request<ListResponse<ApiToken>>('GET', '/api/tokens'),
  createToken: (label: string, user?: string) => request<ApiToken>('POST', '/api/tokens', user ? { label, user } : { label }),
  revokeToken: (id: number) => request<void>('DELETE', `/api/tokens/${id}`),
  audit: (limit: number, offset: number) => request<ListResponse<AuditEntry>>('GET', `/api/audit${qs({ limit, offset })}`),
};

export const api = {
  listPlans: (signal?: AbortSignal) => request<ListResponse<Plan>>('GET', '/api/plans', undefined, signal),
  getPlan: (id: number | string, signal?: AbortSignal) => request<Plan>('GET', `/api/plans/${id}`, undefined, signal),
  createPlan: (spec: PlanInput) => request<Plan>('POST', '/api/plans', spec),
  updatePlan: (id: number | string, spec: PlanInput) => request<Plan>('PUT', `/api/plans/${id}`, spec),
  deletePlan: (id: number | string) => request<void>('DELETE', `/api/plans/${id}`),
  /** Starts a run; body picks agents as generators (docs/api.md "Runs over agents"), none: this server. */
  startRun: (planId: number | string, body?: StartBody) => request<Run>('POST', `/api/plans/${planId}/runs`, body),
  listRuns: (q: RunQuery = {}, signal?: AbortSignal) =>
    request<ListResponse<Run>>('GET', `/api/runs${qs({ ...q })}`, undefined, signal),
  getRun: (id: number | string, signal?: AbortSignal) => request<Run>('GET', `/api/runs/${id}`, undefined, signal),
  stopRun: (id: number | string) => request<Run>('POST', `/api/runs/${id}/stop`),
  /** Live control: hold `vus` VUs, or start `rate` iterations per time_unit, from now on (exactly one). */
  controlRun: (id: number | string, change: { vus: number } | { rate: number }) => request<RunEvent>('POST', `/api/runs/${id}/control`, change),
  deleteRun: (id: number | string) => request<void>('DELETE', `/api/runs/${id}`),
  /** Samples in time order; with `points`, at most that many (the server downsamples with LTTB). */
  samples: (id: number | string, points?: number, signal?: AbortSignal) =>
    request<SamplesResponse>('GET', `/api/runs/${id}/samples${qs({ points })}`, undefined, signal),
  patchRun: (id: number | string, patch: { notes?: string; tags?: string[] }) => request<Run>('PATCH', `/api/runs/${id}`, patch),
  previousRun: (id: number | string) => request<Run>('GET', `/api/runs/${id}/previous`),
  distribution: (id: number | string, signal?: AbortSignal) =>
    request<DistributionResponse>('GET', `/api/runs/${id}/distribution`, undefined, signal),
  planTrend: (planId: number | string, limit = 50, signal?: AbortSignal) =>
    request<{ items: TrendPoint[] }>('GET', `/api/plans/${planId}/trend${qs({ limit })}`, undefined, signal),
  /** One test request of a plan as edited (request: its 0-based index); planId lets masked secret values be the stored plan's. */
  sendRequest: (plan: PlanInput, requestIndex: number, planId?: number) =>
    request<SendResult>('POST', '/api/plans/send', planId ? { plan, request: requestIndex, plan_id: planId } : { plan, request: requestIndex }),
  /** The secret store: names and times only; values are write-only. */
  importPlan: (input: string, format: string, keepAssets = false) =>
    request<ImportResult>('POST', `/api/import${format && format !== 'detect' ? `?format=${encodeURIComponent(format)}` : ''}`, { input, keep_assets: keepAssets }),
  /** Remote agents (scale-out); the join token is an admin's (409 without --agents-listen). */
  listAgents: (signal?: AbortSignal) => request<AgentsResponse>('GET', '/api/agents', undefined, signal),
  agentToken: (signal?: AbortSignal) => request<{ token: string; url: string }>('GET', '/api/agents/token', undefined, signal),
  listSecrets: (signal?: AbortSignal) => request<ListResponse<Secret>>('GET', '/api/secrets', undefined, signal),
  putSecret: (name: string, value: string) => request<Secret>('PUT', `/api/secrets/${encodeURIComponent(name)}`, { value }),
  deleteSecret: (name: string) => request<void>('DELETE', `/api/secrets/${encodeURIComponent(name)}`),
  /** threshold: the practical threshold of TPS and latency, in % of the baseline (server default 5). */
  compare: (ids: readonly (number | string)[], baseline?: number | string, points?: number, signal?: AbortSignal, threshold?: number) =>
    request<CompareResponse>('GET', `/api/compare?ids=${ids.map((x) => encodeURIComponent(String(x))).join(',')}${qs({ baseline, points, threshold }).replace('?', '&')}`, undefined, signal),
};

/** activeRun returns the run currently running, if any (used to link to it after a 409). */
export async function activeRun(): Promise<Run | null> {
  try {
    const r = await api.listRuns({ status: 'running', limit: 1 });
    return r.items?.[0] ?? null;
  } catch {
    return null;
  }
}

/** liveURL is the websocket address of a run's live stream, on the page's own host. */
export function liveURL(id: number | string, loc: Pick<Location, 'protocol' | 'host'> = location): string {
  const proto = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${loc.host}/api/runs/${id}/live`;
}
