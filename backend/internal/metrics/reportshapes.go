package metrics

// The wire shapes agreed for issue 12 (failures, timing breakdown, live-control events). Other
// branches define the same types; the integrator keeps one copy.

// FailureGroup is one group of failed requests: same request name, error kind, HTTP status and
// message.
type FailureGroup struct {
	Request string         `json:"request"` // request name
	Kind    string         `json:"kind"`    // error kind (metrics.ErrorKind String)
	Status  int            `json:"status"`  // HTTP status, 0 when no response arrived
	Message string         `json:"message"` // e.g. "HTTP 503 Service Unavailable", "dial tcp …: connection refused", a failed check's name
	Count   int64          `json:"count"`
	Sample  *FailureSample `json:"sample,omitempty"` // the first response of this group, if one arrived
}

// FailureSample is the first response of a FailureGroup.
type FailureSample struct {
	Status        int         `json:"status"`
	Headers       [][2]string `json:"headers"` // as received, at most 64, each value ≤ 256 bytes
	Body          string      `json:"body"`    // first 1 KiB, valid UTF-8 (invalid bytes replaced)
	BodyTruncated bool        `json:"body_truncated"`
}

// RunEvent is one live-control change of a running test.
type RunEvent struct {
	T        int64   `json:"t"`         // unix ms
	ElapsedS float64 `json:"elapsed_s"` // since the run's start
	Kind     string  `json:"kind"`      // "vus" | "rate"
	From     float64 `json:"from"`
	To       float64 `json:"to"`
	By       string  `json:"by"` // user name, or "api token <name>", or "cli"
}
