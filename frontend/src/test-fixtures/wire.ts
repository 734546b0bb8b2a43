// Complete wire values for tests (the generated contract's types have every field the server
// sends): each builder starts from zeros and takes the fields a test cares about.
import type { ClientSample, Latency, NameStats, PlanLoad, PlanRequest, PlanSpec, Run, Sample, Summary, SweepRow, Timing } from '../lib/types';

export function latency(over: Partial<Latency> = {}): Latency {
  return { min: 0, mean: 0, p50: 0, p75: 0, p90: 0, p95: 0, p99: 0, p99_9: 0, max: 0, ...over };
}

export function timing(over: Partial<Record<keyof Timing, Partial<Latency>>> = {}): Timing {
  return {
    connect_ms: latency(over.connect_ms),
    tls_ms: latency(over.tls_ms),
    wait_ms: latency(over.wait_ms),
    receive_ms: latency(over.receive_ms),
  };
}

export function nameStats(over: Partial<NameStats> = {}): NameStats {
  return { requests: 0, errors: 0, latency_ms: latency(), timing: timing(), checks_passed: 0, checks_failed: 0, rps: 0, ...over };
}

type SampleOver = Partial<Omit<Sample, 'latency_ms' | 'client'>> & { latency_ms?: Partial<Latency>; client?: Partial<ClientSample> };

export function sample(over: SampleOver = {}): Sample {
  const { latency_ms, client, ...rest } = over;
  return {
    t: 0,
    elapsed_s: 0,
    interval_s: 1,
    requests: 0,
    rps: 0,
    successes: 0,
    errors: 0,
    interrupted: 0,
    latency_ms: latency(latency_ms),
    active_vus: 0,
    dropped_iterations: 0,
    bytes_in: 0,
    bytes_out: 0,
    status_codes: {},
    error_kinds: {},
    client: { cpu_percent: 0, rss_bytes: 0, goroutines: 0, open_conns: 0, gc_pause_ms: 0, schedule_lag_p99_ms: 0, ...client },
    generator_bound: false,
    ...rest,
  };
}

type SummaryOver = Partial<Omit<Summary, 'client'>> & { client?: Partial<Summary['client']> };

export function summary(over: SummaryOver = {}): Summary {
  const { client, ...rest } = over;
  return {
    requests: 0,
    successes: 0,
    errors: 0,
    interrupted: 0,
    dropped_iterations: 0,
    duration_s: 0,
    rps: 0,
    send_rate: 0,
    error_rate: 0,
    latency_ms: latency(),
    latency_ms_success: latency(),
    service_time_ms: latency(),
    schedule_lag_ms: latency(),
    status_codes: {},
    error_kinds: {},
    bytes_in: 0,
    body_bytes_in: 0,
    bytes_out: 0,
    client: { cpu_percent_avg: 0, cpu_percent_max: 0, rss_bytes_max: 0, heap_allocs_per_request: 0, ...client },
    thresholds: [],
    by_name: {},
    checks: [],
    executor: 'constant-vus',
    seconds: 0,
    generator_bound_seconds: 0,
    failures: [],
    timing: timing(),
    events: [],
    body_bytes_decoded: 0,
    ...rest,
  };
}

export function sweepRow(over: Partial<SweepRow> = {}): SweepRow {
  const zero = { vus: 0, duration_s: 0, requests: 0, rps: 0, p50_ms: 0, p90_ms: 0, p99_ms: 0, error_rate: 0, cpu_percent: 0, rss_bytes: 0 };
  return { ...zero, knee: false, generator_bound_seconds: 0, client_cpu_us_per_request: 0, ...over };
}

type PlanOver = Partial<Omit<PlanSpec, 'requests' | 'load'>> & { requests?: Partial<PlanRequest>[]; load?: Partial<PlanLoad> };

/** plan is a plan as the server writes it (defaults filled) with the given fields. */
export function plan(over: PlanOver = {}): PlanSpec {
  const { requests, load, ...rest } = over;
  return {
    name: 'p',
    requests: (requests ?? [{}]).map((r) => ({ name: '', method: 'GET', url: 'http://127.0.0.1:1/', body: '', weight: 1, ...r })),
    load: { executor: 'constant-vus', graceful_stop: '5s', ...load },
    http: { timeout: '10s', keep_alive: true, follow_redirects: false, max_redirects: 10, insecure_skip_verify: false },
    thresholds: [],
    ...rest,
  };
}

export function run(over: Partial<Run> = {}): Run {
  return {
    id: 1,
    plan_id: 1,
    plan_name: 'p',
    status: 'running',
    started_at: '2026-11-29T10:00:00Z',
    ended_at: null,
    duration_s: 0,
    requests: 0,
    rps: 0,
    p95_ms: 0,
    error_rate: 0,
    error: '',
    thresholds_ok: null,
    outcome: '',
    notes: '',
    tags: [],
    server_cpu_max: null,
    agents: 0,
    degraded: false,
    ...over,
  };
}
