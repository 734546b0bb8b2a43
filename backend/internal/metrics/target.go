package metrics

// Target-side figures: the values of a run's monitors (Prometheus endpoints scraped each second
// by package monitor) as they travel in samples and summaries (issue 15).

// Units of a MonitorSeries.
const (
	UnitPercent    = "percent"
	UnitBytes      = "bytes"
	UnitBytesPerS  = "bytes_per_s"
	UnitCount      = "count"
	UnitCustomNone = ""
)

// MonitorSeries describes one series a monitor produces (the run lists them once, in
// Summary.TargetSeries).
type MonitorSeries struct {
	// ID is "<monitor>/<metric>[/<label>]", e.g. "web1/cpu_percent", "nginx/rss_bytes",
	// "web1/cpu_percent/3" (core 3). It keys Sample.Target.
	ID      string `json:"id"`
	Monitor string `json:"monitor"` // the monitor's name
	Type    string `json:"type"`    // node | process | custom
	// Metric is cpu_percent | memory_used_bytes | load1 | net_in_bytes_per_s |
	// net_out_bytes_per_s | tcp_conns | rss_bytes, or the custom metric's name.
	Metric string `json:"metric"`
	Label  string `json:"label,omitempty"` // core, process name, custom label set
	Unit   string `json:"unit"`            // percent | bytes | bytes_per_s | count | "" (custom)
}

// MonitorError is a monitor's failure: its seconds are gaps, and the reason is shown once.
type MonitorError struct {
	Monitor string `json:"monitor"`
	// Message is e.g. "timeout after 800ms", "body over 4 MiB", "line 3: malformed exposition".
	Message string `json:"message"`
	T       int64  `json:"t"`       // unix ms of the first second with this error
	Seconds int    `json:"seconds"` // seconds it lasted (summary); 1 in a sample
}

// TargetStat is one series' figures over the run.
type TargetStat struct {
	MonitorSeries
	Avg     float64 `json:"avg"`
	Max     float64 `json:"max"`
	Seconds int     `json:"seconds"` // seconds with a value
	Gaps    int     `json:"gaps"`    // seconds without
}

// Values of Summary.SweepLimitedBy.
const (
	LimitedByTarget    = "target"
	LimitedByGenerator = "generator"
	LimitedByNone      = "none"
)
