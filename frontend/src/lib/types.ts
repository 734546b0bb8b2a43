// Types of the Volley HTTP/websocket contract (docs/api.md). The plan, samples, summaries, runs and
// trend points come from contract.gen.ts, generated from the Go structs (`make contract`); the rest
// are written here by hand from docs/api.md.
import type { PlanRequest, PlanSpec, RunDetail, RunListItem, Sample, StoredPlan, Summary } from './contract.gen';

export type {
  Check,
  CheckResult,
  ClientSample,
  ClientSummary,
  Extract,
  FailureGroup,
  FailureSample,
  Latency,
  MonitorError,
  MonitorSeries,
  NameSample,
  NameStats,
  PlanData,
  PlanHTTP,
  PlanLoad,
  PlanRequest,
  PlanSpec,
  PlanStage,
  PlanThreshold,
  RunDetail,
  RunEvent,
  RunListItem,
  RunStatus,
  Sample,
  SendResult,
  Summary,
  SweepRow,
  TargetStat,
  ThresholdResult,
  Timing,
  TrendPoint,
} from './contract.gen';

/** Every field optional, at every depth (arrays keep their element type, loosened). */
export type Loose<T> = T extends readonly (infer E)[] ? Loose<E>[] : T extends object ? { [K in keyof T]?: Loose<T[K]> } : T;

/**
 * A plan as POST/PUT /api/plans take it and as the editor handles it: any field may be left out (the
 * server fills its defaults and names a missing required one) but the name, the requests and their URLs.
 * PlanSpec is the plan as the server writes it.
 */
export type PlanInput = Loose<PlanSpec> & { name: string; requests: (Loose<PlanRequest> & { url: string })[] };

/** A stored plan as returned by /api/plans. */
export type Plan = StoredPlan;

/** A run as GET /api/runs lists it; GET /api/runs/:id and the live stream's summary add summary and plan. */
export type Run = RunListItem & Partial<Pick<RunDetail, 'summary' | 'plan'>>;

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
  decide_code?: 'longer_run' | 'near_threshold' | 'too_noisy' | 'repeat_runs' | 'per_second_data' | string;
  decide_seconds?: number;
  /** Why a server row's value has no verdict: "no_monitor" or "monitor_gaps". */
  reason_code?: 'no_monitor' | 'monitor_gaps' | string;
  /** Server rows: usable seconds without a monitor value, left out of the figure and the test. */
  gaps?: number;
}

export interface CompareMetric {
  /** "tps" (the contract draft said "rps"), "p50" … "max", "error_rate", "cpu_percent", "rss_bytes", and with a server
   * monitor "server_cpu_percent", "server_cpu_us_per_request", "server_memory_bytes". */
  metric: string;
  /** "req/s", "ms", "fraction", "% of one core", "bytes", "percent", "µs/request". */
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
  /** Seconds of a run over agents in which an agent's share was missing (left out). */
  missing_share?: number;
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

/** A remote load generator (volley agent) as GET /api/agents lists it. */
export interface Agent {
  id: string;
  host: string;
  cores: number;
  version: string;
  labels: Record<string, string>;
  /** Share in a weighted split; 0: its cores. */
  weight: number;
  state: string;
  current_run?: number;
  /** Of one core (200 = two cores busy), over the last second. */
  cpu_percent: number;
  rss_bytes: number;
  last_seen: string;
}

/** GET /api/agents: listening is false when volley serve runs without --agents-listen. */
export interface AgentsResponse {
  listening: boolean;
  agents: Agent[];
}

/** A stored secret as GET /api/secrets lists it: never its value. */
export interface Secret {
  name: string;
  created_at: string;
  updated_at: string;
}

/** POST /api/import: another tool's test as plan JSON, with what was left out and why. */
export interface ImportResult {
  plan: PlanInput;
  /** note: true marks a remark on something that IS in the plan (credentials to add, a suggestion). */
  skipped: { element: string; reason: string; note?: boolean }[];
  format: string;
}
