package metrics

import (
	"strings"

	"github.com/volley-load/volley/backend/internal/plan"
)

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

// The server monitor rule (issue 15, docs/api.md "Monitors"): the target server's CPU and memory
// — the sweep's server columns, History's server_cpu_max — come from the first process monitor
// (its processes summed), else the first node monitor (the host's CPU of all its cores).

// ServerMonitor returns the name of the server monitor among mons (in their order; only Name and
// Type are read) and whether it is a node monitor; "" when none is a process or node monitor.
func ServerMonitor(mons []plan.Monitor) (name string, node bool) {
	for _, typ := range []string{plan.MonitorProcess, plan.MonitorNode} {
		for _, m := range mons {
			if m.Type == typ {
				return m.Name, typ == plan.MonitorNode
			}
		}
	}
	return "", false
}

// Parts of the server monitor's figures (ServerPart). A second's server figure is the sum of the
// values of its series of that part: a node has one CPU and one memory series, a process monitor
// one of each per process.
const (
	ServerOther  = iota // not a server figure
	ServerCPU           // CPU %: a node's host total (of all cores), or one process's (of one core)
	ServerCore          // one core of a node: the count of these is the cores a node's CPU % is of
	ServerMemory        // bytes: a node's memory used, or one process's RSS
)

// ServerPart is the part of the server figures that a series of the server monitor (a node one
// when node) is, by the series ID without its "<monitor>/" prefix (MonitorSeries.ID).
func ServerPart(rest string, node bool) int {
	switch {
	case node && rest == "cpu_percent", !node && strings.HasPrefix(rest, "cpu_percent/"):
		return ServerCPU
	case node && strings.HasPrefix(rest, "cpu_percent/"):
		return ServerCore
	case node && rest == "memory_used_bytes", !node && strings.HasPrefix(rest, "rss_bytes/"):
		return ServerMemory
	}
	return ServerOther
}
