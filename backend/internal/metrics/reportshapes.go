package metrics

// The wire shapes agreed for issue 12 (failures, timing breakdown, live-control events). Other
// branches define the same types; the integrator keeps one copy.

// RunEvent is one live-control change of a running test.
type RunEvent struct {
	T        int64   `json:"t"`         // unix ms
	ElapsedS float64 `json:"elapsed_s"` // since the run's start
	Kind     string  `json:"kind"`      // "vus" | "rate"
	From     float64 `json:"from"`
	To       float64 `json:"to"`
	By       string  `json:"by"` // user name, or "api token <name>", or "cli"
}
