// Package plan defines a Volley test plan — the requests to send, the load model (executor) and
// the HTTP options — together with its JSON form, defaults and validation.
//
// A plan is decoded with Parse, which fills defaults and returns every problem at once as a
// *ValidationError keyed by field path ("requests[0].url", "load.vus"). Parse also rejects
// unknown fields, naming each one. Compile turns a plan into the compiled form a run takes
// (Compiled: thresholds, think times, templates, checks, extraction rules and data rows worked
// out once).
//
// The executors are not defined here: each registers itself (RegisterExecutor, executor.go) from
// package engine's executor_NAME.go files, so a program that parses plans imports package engine
// (a blank import will do). The package imports only the standard library.
package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults and bounds.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultGrace     = 5 * time.Second
	DefaultRedirects = 10
	// MaxVUs bounds one plan's VUs; one generator holds tens of thousands of goroutines comfortably.
	MaxVUs = 100_000
)

// Response bodies a check or extraction reads are held in memory up to http.max_body bytes
// (DefaultMaxBody when the plan leaves it out; MinMaxBody–MaxMaxBody). Other bodies are never held:
// they are read and discarded whatever their size.
const (
	DefaultMaxBody = 1 << 20
	MinMaxBody     = 1 << 10
	MaxMaxBody     = 1 << 30
)

// Plan is one load test: what to request, how much load, how to talk HTTP, and pass/fail rules.
type Plan struct {
	Name     string    `json:"name"`
	Requests []Request `json:"requests"`
	// Flow is how an iteration uses the requests: "weighted" (default: one request picked by
	// weight, as Locust tasks) or "sequence" (every request in order, as a k6 default function).
	Flow string `json:"flow,omitempty"`
	// ThinkTime is a pause after each request: "1s", or a random range "500ms-2s".
	ThinkTime  ThinkTime   `json:"think_time,omitempty"`
	Data       *Data       `json:"data,omitempty"`
	Load       Load        `json:"load"`
	HTTP       HTTP        `json:"http"`
	Thresholds []Threshold `json:"thresholds"`
	// Secrets holds the values of the plan's {{secret.NAME}} references, filled by whoever starts
	// the run (the server from its secret store, `volley run` from the environment); never
	// encoded (json:"-"), and printed as "[redacted]".
	Secrets SecretValues `json:"-"`
	// Monitors are Prometheus endpoints scraped during the run (monitors.go).
	Monitors []Monitor `json:"monitors,omitempty"`
}

// Data is a CSV table whose columns become {{variables}}: the first row names the columns.
// Mode "per-iteration" (default) hands each iteration the next row, all VUs sharing one cursor;
// "per-vu" gives VU n row n for the whole run. Rows wrap around. File is read by `volley run`
// (relative to the plan file) into CSV; the API takes CSV text only.
type Data struct {
	CSV  string `json:"csv,omitempty"`
	File string `json:"file,omitempty"`
	Mode string `json:"mode,omitempty"`
}

// Request is one HTTP request of a plan. Weight picks requests in a weighted mix (default 1).
// URL, header values and Body may hold {{variables}} (see ParseTemplate).
type Request struct {
	Name      string            `json:"name"`
	Method    string            `json:"method"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers,omitempty"`
	Body      string            `json:"body"`
	Weight    int               `json:"weight"`
	ThinkTime ThinkTime         `json:"think_time,omitempty"` // overrides the plan's
	Checks    []Check           `json:"checks,omitempty"`
	Extract   []Extract         `json:"extract,omitempty"`
	// SecretHeaders names headers (case-insensitive) whose values are secret besides
	// AlwaysSecret: shown as Masked by the API and exports, kept by an update that sends Masked.
	SecretHeaders []string `json:"secret_headers,omitempty"`
	// WS is a WebSocket step's session (ws.go); only for a ws:// or wss:// URL.
	WS *WS `json:"ws,omitempty"`
}

// Check is a per-response assertion; a response that fails one is counted with error kind
// check_failed, and each check's passes and fails appear in the summary.
//
//	{"type":"status",  "op":"eq|ne|lt|le|gt|ge", "value":200}
//	{"type":"header",  "name":"Content-Type", "op":"contains|eq|exists", "value":"json"}
//	{"type":"body",    "op":"contains|not_contains", "value":"ok"}
//	{"type":"json",    "path":"data.status", "op":"eq|ne|exists|contains", "value":"active"}
//	{"type":"latency", "op":"lt|le", "value":"200ms"}
//
// A status check replaces the default rule that 4xx and 5xx responses are failures.
type Check struct {
	Type  string `json:"type"`
	Op    string `json:"op"`
	Value any    `json:"value,omitempty"`
	Name  string `json:"name,omitempty"`
	Path  string `json:"path,omitempty"`
}

// Extract takes a value from a response into a {{variable}} of the VU for later requests:
//
//	{"var":"token", "from":"json",   "path":"data.token"}   (gjson path syntax)
//	{"var":"sid",   "from":"header", "name":"X-Session"}
//	{"var":"id",    "from":"regex",  "pattern":"id=(\\d+)"} (the first group, else the match)
//	{"var":"sid",   "from":"cookie", "name":"SESSION"}      (the VU's jar, after the response)
//
// A value that is not found leaves the variable empty.
type Extract struct {
	Var     string `json:"var"`
	From    string `json:"from"`
	Path    string `json:"path,omitempty"`
	Name    string `json:"name,omitempty"`
	Pattern string `json:"pattern,omitempty"`
}

// HTTP holds client options. KeepAlive is a pointer so that an absent field means the default (true).
type HTTP struct {
	Timeout            Duration `json:"timeout"`
	ConnectTimeout     Duration `json:"connect_timeout,omitempty"`
	KeepAlive          *bool    `json:"keep_alive"`
	FollowRedirects    bool     `json:"follow_redirects"`
	MaxRedirects       int      `json:"max_redirects"`
	InsecureSkipVerify bool     `json:"insecure_skip_verify"`
	// MaxBody is the largest response body, in bytes, read into memory for a check or an
	// extraction (0: DefaultMaxBody); a larger one is error kind body_too_large.
	MaxBody int `json:"max_body,omitempty"`
	// Hosts overrides name resolution: "api.example.test" → "127.0.0.1:8443" (or an IP), or a
	// comma-separated list over which VUs are spread (VU i → address i mod n). A key may carry a
	// port ("api.example.test:8080"), which then applies to that port only and wins over the bare
	// name. The URL's host still goes into the Host header and TLS SNI.
	Hosts map[string]string `json:"hosts,omitempty"`
	// Version is the HTTP version requests use (h2.go: HTTPVersions): "1.1" (the default, also
	// when empty), "2" (https:// requests negotiate HTTP/2 with TLS ALPN; http:// ones stay
	// HTTP/1.1) or "h2c" (http:// requests speak HTTP/2 in cleartext with prior knowledge, RFC 9113
	// §3.3; https:// ones negotiate as with "2").
	Version string `json:"version,omitempty"`
	// H2Fallback, with Version "2", lets a connection whose ALPN did not settle on h2 carry
	// HTTP/1.1; without it such a connection is error kind h2_error.
	H2Fallback bool `json:"h2_fallback,omitempty"`
	// H2Connections is how many HTTP/2 connections the run opens per target address: 0 (the
	// default) gives each VU its own; N > 0 shares N connections among all VUs (VU i uses
	// connection i mod N), their requests multiplexed as concurrent streams. At most
	// MaxH2Connections.
	H2Connections int `json:"h2_connections,omitempty"`
	// Cookies is the cookie jar's scope (session.go): CookiesVU (""), CookiesIteration or CookiesOff.
	Cookies string `json:"cookies,omitempty"`
	// Compression lists the content codings asked for in Accept-Encoding (session.go:
	// Compressions); empty adds no Accept-Encoding.
	Compression []string `json:"compression,omitempty"`
	// MaxHeader is the largest response header, in bytes, a VU reads (0: DefaultMaxHeader); a
	// larger one is error kind header_too_large (h1edge.go).
	MaxHeader int `json:"max_header,omitempty"`
	// Proxy is an HTTP proxy every request goes through, "http://host:port" ("": direct). Proxy
	// environment variables (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) are never used.
	Proxy string `json:"proxy,omitempty"`
}

// MaxBodyOrDefault is MaxBody, or DefaultMaxBody when the plan leaves it out.
func (h HTTP) MaxBodyOrDefault() int {
	if h.MaxBody > 0 {
		return h.MaxBody
	}
	return DefaultMaxBody
}

// KeepAliveOn reports whether connections are reused (the default).
func (h HTTP) KeepAliveOn() bool { return h.KeepAlive == nil || *h.KeepAlive }

// Duration is a time.Duration written in JSON as a Go duration string ("30s", "1m30s").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a Go duration string; a bare number is rejected because its unit is ambiguous.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("must be a duration string such as \"30s\"")
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil && durationOverflows(s) {
		return fmt.Errorf("%q is out of range (a duration is at most about 2562047h)", s)
	}
	if err != nil {
		return fmt.Errorf("%q is not a duration (use forms like \"500ms\", \"30s\", \"2m\")", s)
	}
	*d = Duration(v)
	return nil
}

// durationSyntax is the syntax time.ParseDuration reads (a sign, then numbers with units).
var durationSyntax = regexp.MustCompile(`^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// durationOverflows reports whether s is written as a duration but time.ParseDuration refuses it:
// it is beyond ±2562047h47m (time.Duration's int64 nanoseconds).
func durationOverflows(s string) bool {
	if !durationSyntax.MatchString(s) {
		return false
	}
	_, err := time.ParseDuration(s)
	return err != nil
}

// ValidationError lists every problem of a plan, keyed by field path.
type ValidationError struct {
	Fields map[string]string
}

func (e *ValidationError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Fields[k]
	}
	return fmt.Sprintf("invalid plan (%d problem(s)): %s", len(keys), strings.Join(parts, "; "))
}

// Add records a problem of a field; a second problem of the same field is appended after "; ".
func (e *ValidationError) Add(field, msg string) { e.add(field, msg) }

func (e *ValidationError) add(field, msg string) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if old, ok := e.Fields[field]; ok {
		msg = old + "; " + msg
	}
	e.Fields[field] = msg
}

// Parse decodes a plan from JSON, fills defaults and validates it. On any problem it returns a
// *ValidationError naming every bad or unknown field (JSON syntax errors yield one "" field).
func Parse(data []byte) (*Plan, error) {
	verr := &ValidationError{}
	if len(data) > MaxPlanBytes {
		verr.add("", fmt.Sprintf("the plan is %d bytes; at most %d (8 MiB)", len(data), MaxPlanBytes))
		return nil, verr
	}
	if at, deep := checkDepth(data, MaxDepth); deep {
		verr.add("", fmt.Sprintf("the plan nests objects and arrays more than %d deep (at byte %d)", MaxDepth, at))
		return nil, verr
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		verr.add("", "not valid JSON: "+err.Error())
		return nil, verr
	}
	if dec.More() {
		verr.add("", "not valid JSON: unexpected data after the plan object")
		return nil, verr
	}
	if _, ok := raw.(map[string]any); !ok {
		verr.add("", "a plan must be a JSON object")
		return nil, verr
	}
	checkMonitorDurations(raw.(map[string]any), verr)
	checkShape(raw, planShape, "", verr)
	if h, ok := raw.(map[string]any)["http"].(map[string]any); ok {
		if s, ok := h["timeout"].(string); ok {
			if d, err := time.ParseDuration(s); err == nil && d <= 0 {
				verr.add("http.timeout", "must be positive (leave it out for the default 10s)")
			}
		}
	}
	if l, ok := raw.(map[string]any)["load"].(map[string]any); ok {
		if s, ok := l["graceful_stop"].(string); ok {
			if d, err := time.ParseDuration(s); err == nil && d == 0 {
				verr.add("load.graceful_stop", "must be positive: leave it out for the default 5s, or give e.g. 1ms to cut requests off at the end")
			}
		}
		// A zero here would read as "not given" and be replaced by the default without a word.
		for _, f := range []struct{ name, dflt string }{{"max_duration", "10m"}, {"time_unit", "1s"}, {"step_duration", "10s"}} {
			if s, ok := l[f.name].(string); ok {
				if d, err := time.ParseDuration(s); err == nil && d == 0 {
					verr.add("load."+f.name, "must be positive (leave it out for the default "+f.dflt+")")
				}
			}
		}
	}
	// Validate the values of what is well-shaped too, so one answer names every problem.
	clean, _ := json.Marshal(raw)
	var p Plan
	if err := json.Unmarshal(clean, &p); err != nil {
		verr.add("", err.Error())
		return nil, verr
	}
	p.Defaults()
	if err := p.Validate(); err != nil {
		for f, m := range err.(*ValidationError).Fields {
			if _, dup := verr.Fields[f]; !dup { // a shape problem already explains this field
				verr.add(f, m)
			}
		}
	}
	if len(verr.Fields) > 0 {
		return nil, verr
	}
	return &p, nil
}

// Defaults fills unset fields with their defaults. Parse calls it; call it on plans built in code.
func (p *Plan) Defaults() {
	for i := range p.Requests {
		r := &p.Requests[i]
		if r.Method == "" {
			r.Method = "GET"
		}
		r.Method = strings.ToUpper(r.Method)
		if r.Weight == 0 {
			r.Weight = 1
		}
		if r.Name == "" {
			r.Name = DefaultName(r.Method, r.URL)
		}
	}
	p.renameLegacyNames()
	p.Load.defaults()
	if p.HTTP.Timeout == 0 {
		p.HTTP.Timeout = Duration(DefaultTimeout)
	}
	if p.HTTP.KeepAlive == nil {
		t := true
		p.HTTP.KeepAlive = &t
	}
	if p.HTTP.MaxRedirects == 0 {
		p.HTTP.MaxRedirects = DefaultRedirects
	}
	if p.Thresholds == nil {
		p.Thresholds = []Threshold{}
	}
	if p.Flow == "" {
		p.Flow = FlowWeighted
	}
	if p.Data != nil && p.Data.Mode == "" {
		p.Data.Mode = DataPerIteration
	}
	p.defaultMonitors()
}

// Validate checks a plan whose defaults are filled and returns a *ValidationError with every problem.
func (p *Plan) Validate() error {
	v := &ValidationError{}
	if strings.TrimSpace(p.Name) == "" {
		v.add("name", "is required")
	} else if len(p.Name) > 200 {
		v.add("name", "must be at most 200 characters")
	}
	if len(p.Requests) == 0 {
		v.add("requests", "at least one request is required")
	}
	p.validateBounds(v)
	for i, r := range p.Requests {
		if i >= MaxRequests {
			break // validateBounds named the count
		}
		f := "requests[" + strconv.Itoa(i) + "]."
		if !slices.Contains(Methods, r.Method) {
			v.add(f+"method", fmt.Sprintf("%q is not one of %s", r.Method, oneOf(Methods)))
		}
		if msg := checkURL(r.URL); msg != "" {
			v.add(f+"url", msg)
		}
		for k := range r.Headers {
			if k == "" || strings.ContainsAny(k, " \t\r\n:") {
				v.add(f+"headers", fmt.Sprintf("%q is not a valid header name", k))
			}
		}
		for k, val := range r.Headers {
			if strings.ContainsAny(val, "\r\n") {
				v.add(f+"headers", fmt.Sprintf("value of %q must not contain line breaks", k))
			}
		}
		if r.Weight < 0 {
			v.add(f+"weight", fmt.Sprintf("must be 1–%d", MaxWeight))
		}
		for j, c := range r.Checks {
			validateCheck(f+"checks["+strconv.Itoa(j)+"]", c, v)
		}
		for j, x := range r.Extract {
			validateExtract(f+"extract["+strconv.Itoa(j)+"]", x, v)
		}
		if _, _, err := r.ThinkTime.Range(); err != nil {
			v.add(f+"think_time", err.Error())
		}
		validateWS(f, &r, v)
	}
	p.validateScenario(v)
	p.validateSecrets(v)
	p.Load.validate(v)
	p.validateMonitors(v)
	if p.HTTP.Timeout < 0 {
		v.add("http.timeout", "must be positive")
	} else if p.HTTP.Timeout > Duration(MaxTimeout) {
		v.add("http.timeout", "must be at most 1h")
	}
	if p.HTTP.MaxRedirects < 0 || p.HTTP.MaxRedirects > MaxRedirects {
		v.add("http.max_redirects", fmt.Sprintf("must be 0–%d (0: the default, %d)", MaxRedirects, DefaultRedirects))
	}
	if p.HTTP.ConnectTimeout < 0 {
		v.add("http.connect_timeout", "must not be negative")
	} else if p.HTTP.ConnectTimeout > Duration(MaxTimeout) {
		v.add("http.connect_timeout", "must be at most 1h")
	}
	if m := p.HTTP.MaxBody; m != 0 && (m < MinMaxBody || m > MaxMaxBody) {
		v.add("http.max_body", fmt.Sprintf("must be %d–%d bytes (default %d)", MinMaxBody, MaxMaxBody, DefaultMaxBody))
	}
	p.HTTP.validateVersion(v)
	p.HTTP.validateSession(v)
	validateH1(p, v)
	for name, addrs := range p.HTTP.Hosts {
		for _, addr := range strings.Split(addrs, ",") {
			addr = strings.TrimSpace(addr)
			if name == "" || addr == "" || strings.ContainsAny(name+addr, " /") {
				v.add("http.hosts", fmt.Sprintf("%q → %q is not a host → address[,address…] mapping", name, addrs))
				break
			}
		}
	}
	names := map[string]bool{}    // every request name
	ownStats := map[string]bool{} // the names with statistics of their own (the first MaxNames-1)
	for _, r := range p.Requests {
		if !names[r.Name] && len(ownStats) < MaxNames-1 {
			ownStats[r.Name] = true
		}
		names[r.Name] = true
	}
	for i, t := range p.Thresholds {
		if i >= MaxThresholds {
			break // validateBounds named the count
		}
		f := "thresholds[" + strconv.Itoa(i) + "]"
		if _, err := ParseThreshold(t.Expr); err != nil {
			v.add(f, err.Error())
		}
		if t.Request != "" && !names[t.Request] {
			v.add(f+".request", fmt.Sprintf("%q is not the name of a request of this plan", t.Request))
		} else if t.Request != "" && len(names) > 1 && !ownStats[t.Request] {
			v.add(f+".request", fmt.Sprintf("%q has no statistics of its own: only the first %d distinct request names do (the others share %q)", clip(t.Request), MaxNames-1, "(other)"))
		}
	}
	if len(v.Fields) > 0 {
		return v
	}
	return nil
}

func checkURL(raw string) string {
	if raw == "" {
		return "is required"
	}
	if IsWebSocketURL(raw) {
		return checkWSURL(raw)
	}
	u, err := parseURL(raw)
	if err != nil {
		return err.Error()
	}
	_ = u
	return ""
}

// Marshal encodes a plan as JSON without HTML escaping, so thresholds read "p(95)<200ms" in
// stored plans and API answers.
func Marshal(p *Plan) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
