package metrics

// ClientSample is the load generator's own state during one second.
type ClientSample struct {
	CPUPercent float64 `json:"cpu_percent"` // of one core: 200 means two cores busy
	RSSBytes   uint64  `json:"rss_bytes"`
	Goroutines int     `json:"goroutines"`
	OpenConns  int64   `json:"open_conns"`
	GCPauseMs  float64 `json:"gc_pause_ms"` // stop-the-world pause time in this second
	// ScheduleLagP99Ms is the 99th percentile of how late iterations started against their
	// schedule in this second (open models; 0 otherwise).
	ScheduleLagP99Ms float64 `json:"schedule_lag_p99_ms"`
}

// Sample is one second of a run: the unit of the live stream, the stored series and the charts.
type Sample struct {
	T                 int64            `json:"t"`          // end of the second, unix milliseconds
	ElapsedS          int              `json:"elapsed_s"`  // 1 for the first second
	IntervalS         float64          `json:"interval_s"` // the time the counts cover (s); 0: none of its own (docs/api.md)
	Requests          int64            `json:"requests"`
	RPS               float64          `json:"rps"`
	Successes         int64            `json:"successes"`
	Errors            int64            `json:"errors"`
	Interrupted       int64            `json:"interrupted"`
	Latency           Latency          `json:"latency_ms"`
	ActiveVUs         int64            `json:"active_vus"`
	DroppedIterations int64            `json:"dropped_iterations"` // open models: by due second, as StartedIterations
	BytesIn           int64            `json:"bytes_in"`
	BytesOut          int64            `json:"bytes_out"`
	StatusCodes       map[string]int64 `json:"status_codes"`
	ErrorKinds        map[string]int64 `json:"error_kinds"`
	Client            ClientSample     `json:"client"`
	GeneratorBound    bool             `json:"generator_bound"`
	// ByName has each request name's figures in this second, for every plan (one entry for a plan
	// with one request name).
	ByName map[string]NameSample `json:"by_name,omitempty"`
	// Hist is this second's latency histogram (HdrHistogram V2, base64), kept for exact merges.
	// It travels to storage, not to browsers.
	Hist string `json:"-"`
	// P95SoFarMs is the run's p95 latency in ms from its start to the end of this second: the
	// percentile of every second's histogram merged, which the collector reads from its
	// cumulative counts so that storage (the run's list columns while it runs) need not decode
	// and merge the seconds' histograms again. Not in the JSON; 0 before the first response.
	P95SoFarMs float64 `json:"-"`
	// Failures is the failure groups that changed in this second (a count grew, or the sample
	// arrived), each with its count since the run's start, most frequent first; none in a second
	// without a change. The table so far is every second's groups merged, the latest count of each
	// (Summary.Failures at the end). A group's Sample is sent once, in the first second that has
	// it; later seconds leave it out.
	Failures []FailureGroup `json:"failures,omitempty"`
	// Events are the load changes (live control) made in this second.
	Events []RunEvent `json:"events,omitempty"`
	// Target is each monitor series' value in this second, by MonitorSeries.ID; an absent ID is a
	// gap (the monitor failed or had no value yet).
	Target map[string]float64 `json:"target,omitempty"`
	// TargetErrors are the monitor errors that started or changed in this second (Seconds = 1).
	TargetErrors []MonitorError `json:"target_errors,omitempty"`
	// Protocols counts this second's responses by the protocol they came over ("http/1.1", "h2");
	// present only for plans with http.version "2" or "h2c" (Counts.ProtocolMap).
	Protocols map[string]int64 `json:"protocols,omitempty"`
	// BodyBytesDecoded is the decoded size of the compressed bodies decoded in this second for a
	// check or an extraction (BytesIn stays the bytes on the wire).
	BodyBytesDecoded int64 `json:"body_bytes_decoded,omitempty"`
	// WS is this second's WebSocket figures; only in runs with WebSocket steps (ws.go).
	WS *WSStats `json:"ws,omitempty"`
	// MissingShare is the share of the run's work (0–1, by the agents' weights) whose agents
	// delivered nothing for this second: the second's counts cover only 1 − MissingShare of the
	// load (docs/scale-out.md). 0 on a single machine and while every agent reports.
	MissingShare float64 `json:"missing_share,omitempty"`
	// MissingAgents names the agents whose share is missing in this second.
	MissingAgents []string `json:"missing_agents,omitempty"`
	// Agents is each agent's own generator figures in this second (runs over agents only).
	Agents map[string]ClientSample `json:"agents,omitempty"`
	// LatencySumUs is the exact sum (µs) of this second's latencies (Latency.Mean's numerator),
	// for exact merges; not in the JSON.
	LatencySumUs uint64 `json:"-"`
	// NameHists is each request name's latency histogram of this second (Hist's format), for the
	// exact merge of the names' percentiles so far (cluster.Merger); set only by an engine that
	// runs a segment of a plan with several request names, for the names whose histogram changed.
	// Not in the JSON.
	NameHists map[string]string `json:"-"`
	// StartedIterations is, for open models, the iterations due in this sample's seconds that
	// started, counted by their scheduled (due) time, not by when they ran or finished: a sample
	// covers the iterations due in [(k−1)·interval, k·interval) for its ElapsedS k (up to the
	// run's stop in the last sample; a stalled collector emits every second it passed, each with
	// its own). StartedIterations + DroppedIterations is then exactly the schedule's count for
	// those seconds, on one machine and summed over agents. 0 (absent) for closed models.
	StartedIterations int64 `json:"started_iterations,omitempty"`
}

// ClientSummary is the load generator's own cost over a run.
type ClientSummary struct {
	CPUPercentAvg float64 `json:"cpu_percent_avg"`
	CPUPercentMax float64 `json:"cpu_percent_max"`
	RSSBytesMax   uint64  `json:"rss_bytes_max"`
	// HeapAllocsPerRequest is the process's heap allocations over the run divided by requests
	// (runtime.MemStats.Mallocs): the hot path's allocation rate, start-up included.
	HeapAllocsPerRequest float64 `json:"heap_allocs_per_request"`
}

// ThresholdResult is one evaluated threshold. Value is nil when the run produced no data for it
// (a latency threshold when no response arrived): such a threshold fails.
type ThresholdResult struct {
	Expr  string   `json:"expr"`
	Value *float64 `json:"value"`
	OK    bool     `json:"ok"`
}

// NameStats are the figures of one request name.
type NameStats struct {
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Latency  Latency `json:"latency_ms"`
	// Timing splits the name's requests into connect, TLS, wait and receive (Timing).
	Timing Timing `json:"timing"`
	// ChecksPassed and ChecksFailed sum the outcomes of the name's checks over the run.
	ChecksPassed int64 `json:"checks_passed"`
	ChecksFailed int64 `json:"checks_failed"`
	// RPS is the name's requests per second over the run's duration.
	RPS float64 `json:"rps"`
}

// Summary is the whole run, computed from the merged histograms.
type Summary struct {
	Requests          int64                `json:"requests"`
	Successes         int64                `json:"successes"`
	Errors            int64                `json:"errors"`
	Interrupted       int64                `json:"interrupted"`
	DroppedIterations int64                `json:"dropped_iterations"`
	DurationS         float64              `json:"duration_s"`
	RPS               float64              `json:"rps"`
	SendRate          float64              `json:"send_rate"`
	ErrorRate         float64              `json:"error_rate"`
	Latency           Latency              `json:"latency_ms"`
	LatencySuccess    Latency              `json:"latency_ms_success"`
	ServiceTime       Latency              `json:"service_time_ms"`
	ScheduleLag       Latency              `json:"schedule_lag_ms"`
	StatusCodes       map[string]int64     `json:"status_codes"`
	ErrorKinds        map[string]int64     `json:"error_kinds"`
	BytesIn           int64                `json:"bytes_in"`
	BodyBytesIn       int64                `json:"body_bytes_in"`
	BytesOut          int64                `json:"bytes_out"`
	Client            ClientSummary        `json:"client"`
	Thresholds        []ThresholdResult    `json:"thresholds"`
	ByName            map[string]NameStats `json:"by_name"`
	Sweep             []SweepRow           `json:"sweep,omitempty"`
	// SweepLimitedBy says what limited a concurrency sweep's throughput at its knee (or at its last
	// level when there is none): "generator" when the load generator was saturated there, else
	// "target". Empty for other executors. With a server monitor (ServerCPUPercent) the note comes
	// from measured columns and may be "none" (see engine's limitedBy for the rule).
	SweepLimitedBy string        `json:"sweep_limited_by,omitempty"`
	Checks         []CheckResult `json:"checks"`
	// Aborted says why the run ended early (a threshold with abort_on_fail); empty otherwise.
	Aborted               string `json:"aborted,omitempty"`
	Executor              string `json:"executor"`
	Seconds               int    `json:"seconds"`
	GeneratorBoundSeconds int    `json:"generator_bound_seconds"`
	// Hist is the run's merged latency histogram (HdrHistogram V2, base64), stored with the run.
	Hist string `json:"-"`
	// Failures: failed requests grouped by request name, error kind, HTTP status and message,
	// most frequent first; at most MaxFailureGroups groups, further ones counted in one group
	// whose Message is OtherFailures. The counts add up to Errors.
	Failures []FailureGroup `json:"failures"`
	// Timing is the whole run's split of exchanges into connect, TLS, wait and receive.
	Timing Timing `json:"timing"`
	// Events are the run's load changes (live control), in order; empty when there were none
	// (absent from runs older than live control).
	Events []RunEvent `json:"events"`
	// TargetSeries lists the series the run's monitors produced (none without monitors).
	TargetSeries []MonitorSeries `json:"target_series,omitempty"`
	// Target has each series' average and maximum over the seconds it had a value.
	Target []TargetStat `json:"target,omitempty"`
	// MonitorErrors are the monitors' errors, each with its first second and how long it lasted.
	MonitorErrors []MonitorError `json:"monitor_errors,omitempty"`
	// Protocols counts the run's responses by the protocol they came over ("http/1.1", "h2"; a
	// redirect chain counts its last answer); present only for plans with http.version "2" or
	// "h2c" (Counts.ProtocolMap).
	Protocols map[string]int64 `json:"protocols,omitempty"`
	// BodyBytesDecoded is the decoded size of the compressed response bodies that were decoded
	// for a check or an extraction (engine/decode.go); BytesIn and BodyBytesIn stay wire bytes.
	BodyBytesDecoded int64 `json:"body_bytes_decoded"`
	// WS is the run's WebSocket figures; only in runs with WebSocket steps (ws.go).
	WS *WSStats `json:"ws,omitempty"`
	// Agents is how many agents generated the load (0 or absent: the controller's own engine).
	Agents int `json:"agents,omitempty"`
	// Degraded says an agent was lost during the run: the seconds after its loss carry its
	// MissingShare, and LostAgents names it.
	Degraded   bool     `json:"degraded,omitempty"`
	LostAgents []string `json:"lost_agents,omitempty"`
	// StartSkewMs is the spread of the agents' actual starts (latest − earliest, ms, on the
	// controller's clock); nil on a single machine.
	StartSkewMs *float64 `json:"start_skew_ms,omitempty"`
}

// RunEvent is a change made to a running test's load (live control: engine.SetVUs, SetRate).
type RunEvent struct {
	T        int64   `json:"t"`         // unix ms
	ElapsedS float64 `json:"elapsed_s"` // seconds since the run's start
	Kind     string  `json:"kind"`      // "vus" | "rate"
	From     float64 `json:"from"`      // VUs, or iterations per the plan's time_unit
	To       float64 `json:"to"`
	By       string  `json:"by"` // user name, or "api token <name>", or "cli"
}

// CheckResult is one check's tally over the run.
type CheckResult struct {
	Request string `json:"request"`
	Check   string `json:"check"`
	Passes  int64  `json:"passes"`
	Fails   int64  `json:"fails"`
}

// SweepRow is one level of a concurrency sweep: the capacity table of the published comparisons.
type SweepRow struct {
	VUs        int     `json:"vus"`
	DurationS  float64 `json:"duration_s"`
	Requests   int64   `json:"requests"`
	RPS        float64 `json:"rps"`
	P50        float64 `json:"p50_ms"`
	P90        float64 `json:"p90_ms"`
	P99        float64 `json:"p99_ms"`
	ErrorRate  float64 `json:"error_rate"`
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   uint64  `json:"rss_bytes"`
	Knee       bool    `json:"knee"`
	// GeneratorBoundSeconds counts this level's seconds in which the load generator was saturated.
	GeneratorBoundSeconds int `json:"generator_bound_seconds"`
	// ServerCPUPercent is the target's CPU % averaged over the level's seconds: the first process
	// monitor's process CPU summed over its processes (of one core: 200 = two cores busy) when
	// there is one, else the first node monitor's host CPU (of all its cores: 0..100). Nil without
	// such a monitor or without a value in the level.
	ServerCPUPercent *float64 `json:"server_cpu_percent,omitempty"`
	// ServerMemoryBytes is the same monitor's RSS (process) or memory used (node), averaged.
	ServerMemoryBytes *float64 `json:"server_memory_bytes,omitempty"`
	// ClientCPUUsPerRequest is the generator's CPU time per request in µs:
	// CPUPercent/100 core-seconds per second ÷ RPS × 10⁶ = CPUPercent × 10⁴ / RPS.
	ClientCPUUsPerRequest float64 `json:"client_cpu_us_per_request"`
	// ServerCPUUsPerRequest is the target's CPU time per request in µs, the same formula with the
	// server's CPU in core units (a node monitor's percent times its core count). Nil when
	// ServerCPUPercent is.
	ServerCPUUsPerRequest *float64 `json:"server_cpu_us_per_request,omitempty"`
}

// ThresholdsOK reports whether every threshold passed (true when there are none).
func (s *Summary) ThresholdsOK() bool {
	for _, t := range s.Thresholds {
		if !t.OK {
			return false
		}
	}
	return true
}
