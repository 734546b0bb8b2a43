// Types of the Volley HTTP/websocket contract (docs/api.md). Fields may gain siblings, so every
// type here is a subset; optional markers are used where the server may omit a field.

export interface Check {
  type: string;
  op: string;
  value: number;
}

export interface PlanRequest {
  name?: string;
  method?: string;
  url: string;
  headers?: Record<string, string>;
  body?: string;
  weight?: number;
  checks?: Check[];
  [extra: string]: unknown;
}

export interface PlanLoad {
  executor?: string;
  vus?: number | string;
  duration?: string;
  iterations?: number | string;
  max_duration?: string;
  graceful_stop?: string;
  [extra: string]: unknown;
}

export interface PlanHTTP {
  timeout?: string;
  keep_alive?: boolean;
  follow_redirects?: boolean;
  max_redirects?: number;
  insecure_skip_verify?: boolean;
  [extra: string]: unknown;
}

/** The plan JSON (DESIGN §3): the body of POST/PUT /api/plans. */
export interface PlanSpec {
  name: string;
  requests: PlanRequest[];
  load: PlanLoad;
  http?: PlanHTTP;
  thresholds?: string[];
  [extra: string]: unknown;
}

/** A stored plan as returned by /api/plans. */
export interface Plan {
  id: number;
  name: string;
  plan: PlanSpec;
  created_at: string;
  updated_at: string;
}

export interface Latency {
  min: number;
  mean: number;
  p50: number;
  p75: number;
  p90: number;
  p95: number;
  p99: number;
  p99_9: number;
  max: number;
}

export interface Sample {
  t: number;
  elapsed_s: number;
  requests: number;
  rps: number;
  errors: number;
  latency_ms?: Partial<Latency> | null;
  active_vus: number;
  dropped_iterations?: number;
  interrupted?: number;
  bytes_in?: number;
  bytes_out?: number;
  status_codes?: Record<string, number>;
  error_kinds?: Record<string, number>;
  client?: { cpu_percent?: number; rss_bytes?: number; goroutines?: number; open_conns?: number };
  generator_bound?: boolean;
}

export interface ThresholdResult {
  expr: string;
  value: number;
  ok: boolean;
}

export interface Summary {
  requests: number;
  successes: number;
  errors: number;
  interrupted: number;
  dropped_iterations?: number;
  duration_s: number;
  rps: number;
  send_rate?: number;
  latency_ms?: Partial<Latency>;
  latency_ms_success?: Partial<Latency>;
  service_time_ms?: Partial<Latency>;
  status_codes?: Record<string, number>;
  error_kinds?: Record<string, number>;
  bytes_in?: number;
  body_bytes_in?: number;
  bytes_out?: number;
  client?: { cpu_percent_avg?: number; cpu_percent_max?: number; rss_bytes_max?: number };
  thresholds?: ThresholdResult[];
  by_name?: Record<string, { requests: number; errors: number; latency_ms?: Partial<Latency> }>;
  generator_bound_seconds?: number;
  seconds?: number;
}

export type RunStatus = 'running' | 'finished' | 'stopped' | 'failed' | 'interrupted';

export interface Run {
  id: number;
  plan_id: number;
  plan_name?: string;
  status: RunStatus | string;
  started_at: string;
  ended_at?: string | null;
  duration_s?: number;
  requests?: number;
  rps?: number;
  p95_ms?: number;
  /** Fraction of requests that failed (0.01 = 1 %). */
  error_rate?: number;
  error?: string;
  summary?: Summary | null;
  plan?: PlanSpec;
}

export interface ListResponse<T> {
  items: T[];
  total: number;
}

export type LiveMessage =
  | { type: 'sample'; data: Sample }
  | { type: 'summary'; data: Summary; run?: Run };
