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

/** One segment of a ramp: the value (VUs, or iterations per time_unit) moves linearly to target. */
export interface PlanStage {
  duration: string;
  target: number | string;
}

/** The load model; which fields apply depends on the executor (see planForm.EXECUTOR_FIELDS). */
export interface PlanLoad {
  executor?: string;
  vus?: number | string;
  duration?: string;
  iterations?: number | string;
  max_duration?: string;
  stages?: PlanStage[];
  start_vus?: number | string;
  rate?: number | string;
  start_rate?: number | string;
  time_unit?: string;
  pre_allocated_vus?: number | string;
  max_vus?: number | string;
  levels?: (number | string)[];
  step_duration?: string;
  graceful_stop?: string;
  [extra: string]: unknown;
}

export interface PlanHTTP {
  timeout?: string;
  connect_timeout?: string;
  keep_alive?: boolean;
  follow_redirects?: boolean;
  max_redirects?: number;
  insecure_skip_verify?: boolean;
  hosts?: Record<string, string>;
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

export interface ClientSample {
  /** Of one core: 200 means two cores busy. */
  cpu_percent?: number;
  rss_bytes?: number;
  goroutines?: number;
  open_conns?: number;
  gc_pause_ms?: number;
  /** p99 of how late iterations started against their schedule in this second (open models; 0 otherwise). */
  schedule_lag_p99_ms?: number;
}

export interface Sample {
  t: number;
  elapsed_s: number;
  interval_s?: number;
  requests: number;
  rps: number;
  successes?: number;
  errors: number;
  latency_ms?: Partial<Latency> | null;
  active_vus: number;
  dropped_iterations?: number;
  interrupted?: number;
  bytes_in?: number;
  bytes_out?: number;
  status_codes?: Record<string, number>;
  error_kinds?: Record<string, number>;
  client?: ClientSample;
  generator_bound?: boolean;
}

export interface ThresholdResult {
  expr: string;
  /** Observed value: ms for latencies, a fraction for error_rate, req/s for rps; null = no data. */
  value: number | null;
  ok: boolean;
}

/** One level of a concurrency sweep (a row of the capacity table). */
export interface SweepRow {
  vus: number;
  duration_s: number;
  requests: number;
  rps: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  error_rate: number;
  cpu_percent: number;
  rss_bytes: number;
  knee: boolean;
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
  error_rate?: number;
  latency_ms?: Partial<Latency>;
  latency_ms_success?: Partial<Latency>;
  service_time_ms?: Partial<Latency>;
  /** How late iterations started against their schedule (arrival-rate executors). */
  schedule_lag_ms?: Partial<Latency>;
  status_codes?: Record<string, number>;
  error_kinds?: Record<string, number>;
  bytes_in?: number;
  body_bytes_in?: number;
  bytes_out?: number;
  client?: { cpu_percent_avg?: number; cpu_percent_max?: number; rss_bytes_max?: number };
  thresholds?: ThresholdResult[];
  by_name?: Record<string, { requests: number; errors: number; latency_ms?: Partial<Latency> }>;
  /** Capacity table of a concurrency-sweep run. */
  sweep?: SweepRow[];
  executor?: string;
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
  /** Whether every threshold passed; null when the plan had none (or the run has not ended); may be absent. */
  thresholds_ok?: boolean | null;
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
