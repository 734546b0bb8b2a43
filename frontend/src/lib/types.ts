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
  /** Headers whose values are secret besides Authorization, Cookie, Proxy-Authorization (shown as ********). */
  secret_headers?: string[];
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

/** The plan JSON (README, docs/api.md): the body of POST/PUT /api/plans. */
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
  /** One row per (request, check): how often the check passed and failed. */
  checks?: CheckResult[] | null;
  /** Why the run ended early (a threshold with abort_on_fail); empty otherwise. */
  aborted?: string;
  /** Capacity table of a concurrency-sweep run. */
  sweep?: SweepRow[];
  /** What limited the sweep at its knee (or last level): "generator" or "target". */
  sweep_limited_by?: string;
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
  /** Free text kept with the run (PATCH /api/runs/:id). */
  notes?: string;
  /** Sorted labels, 1–40 characters of a-z 0-9 . _ - (at most 20). */
  tags?: string[];
}

export interface CheckResult {
  request: string;
  check: string;
  passes: number;
  fails: number;
}

/** GET /api/runs/:id/samples?points=N: the server picks at most N seconds (LTTB) when there are more. */
export interface SamplesResponse {
  items: Sample[];
  downsampled?: boolean;
  /** Seconds stored (when downsampled, more than items.length). */
  total?: number;
}

/** One point of the latency-by-percentile curve; percentile 100 is the maximum. */
export interface DistributionPoint {
  percentile: number;
  value_ms: number;
}

export interface DistributionResponse {
  items: DistributionPoint[];
  count?: number;
  source?: string;
}

/** One run of a plan's trend (GET /api/plans/:id/trend), oldest first. */
export interface TrendPoint {
  run_id: number;
  started_at: string;
  duration_s?: number;
  rps: number;
  p95_ms: number;
  error_rate: number;
  status: string;
  thresholds_ok?: boolean | null;
}

/** 'none': shown without a verdict (a metric that follows the load, or the max). */
export type Verdict = 'regression' | 'improvement' | 'no_change' | 'inconclusive' | 'baseline' | 'none';

export interface CompareValue {
  run_id: number;
  label?: string;
  value: number | null;
  delta?: number | null;
  delta_pct?: number | null;
  verdict: Verdict | string;
  p_value?: number;
  /** Confidence interval (level: CompareResponse.confidence) of the difference (run − baseline), in the metric's unit. */
  ci?: [number, number];
  /** The difference from the baseline in the metric's effect_kind (relative: run/baseline − 1) and its interval. */
  effect?: number;
  ci_low?: number;
  ci_high?: number;
  /** Usable seconds behind the test. */
  n?: number;
  reason?: string;
  /** For inconclusive: what would decide it; decide_code "longer_run" comes with decide_seconds. */
  decide_hint?: string;
  decide_code?: 'longer_run' | 'near_threshold' | 'too_noisy' | 'per_second_data' | string;
  decide_seconds?: number;
}

export interface CompareMetric {
  /** "tps" (the contract draft said "rps"), "p50" … "max", "error_rate", "cpu_percent", "rss_bytes". */
  metric: string;
  /** "req/s", "ms", "fraction", "% of one core", "bytes". */
  unit: string;
  higher_is_better: boolean;
  test?: string;
  floor_pct?: number;
  floor_abs?: number;
  /** "relative" (effect is a fraction of the baseline) or "absolute" (in the metric's unit). */
  effect_kind?: 'relative' | 'absolute' | string;
  /** The practical threshold, in effect_kind's terms. */
  threshold?: number;
  /** Moves with the throughput (generator CPU, memory): no verdict. */
  follows_load?: boolean;
  values: CompareValue[];
}

/** A warning: the server sends {code, run_id, message}; plain strings are accepted too. */
export type CompareWarning = string | { code?: string; run_id?: number; load?: boolean; message: string };

export interface CompareSeconds {
  run_id: number;
  stored: number;
  usable: number;
  generator_bound: number;
}

export interface CompareResponse {
  runs: Run[];
  baseline: number;
  /** Practical thresholds used: TPS and latency (fraction of the baseline), error rate (absolute). */
  threshold?: number;
  error_threshold?: number;
  /** Level of the confidence intervals (0.95). */
  confidence?: number;
  metrics: CompareMetric[];
  warnings?: CompareWarning[] | null;
  seconds?: CompareSeconds[];
  /** Per run id (as a string key), its (downsampled) samples in time order. */
  series?: Record<string, Sample[]>;
}

export interface ListResponse<T> {
  items: T[];
  total: number;
}

export type LiveMessage =
  | { type: 'sample'; data: Sample }
  | { type: 'summary'; data: Summary; run?: Run }
  /** The server is failing the run (e.g. its seconds cannot be stored); the summary, status failed, follows. */
  | { type: 'error'; data: { error: string } };

/** A stored secret as GET /api/secrets lists it: never its value. */
export interface Secret {
  name: string;
  created_at: string;
  updated_at: string;
}
