package plan

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Compiled is a valid plan with everything a run needs worked out once: thresholds parsed,
// think-time ranges, templates, checks and extraction rules compiled, the data table split into
// rows and the extracted variables numbered. Compile makes it; engine.New takes it as it is,
// without validating or parsing anything again.
//
// It holds no secret value: a {{secret.NAME}} is a PartSecret naming NAME, bound to Plan.Secrets
// by the engine when a run starts. Requests, Thresholds and the plan's slices are shared with Plan,
// which must not change while a Compiled made from it is in use.
type Compiled struct {
	Plan       *Plan
	Requests   []CompiledRequest // one per Plan.Requests, in order
	Thresholds []Rule            // one per Plan.Thresholds, in order
	// Rows is the data table (Plan.Data) without its header row: one value per column. Nil
	// without data.
	Rows [][][]byte
	// ExtractSlots is the number of distinct extracted variables; ExtractRule.Slot and the
	// PartExtract parts of templates index them (0 ≤ slot < ExtractSlots).
	ExtractSlots int
}

// CompiledRequest is one request of a compiled plan.
type CompiledRequest struct {
	// The URL's parts (url.Parse of the URL as written, variables included).
	Scheme   string // "http" or "https"
	HostPort string // host[:port]
	Host     string // the host name (url.URL.Hostname: no port, no brackets), for TLS SNI
	// URL and Body are nil when the text has no variables (use the plan's text).
	URL, Body Template
	Headers   []HeaderTemplate // every header of the request, in no particular order
	Checks    []CompiledCheck
	Extracts  []ExtractRule
	// KeepBody: a body check or an extraction from the body reads the response body.
	KeepBody bool
	// ThinkLo and ThinkHi bound the pause after the request (the request's think_time, else the
	// plan's); both 0 for none.
	ThinkLo, ThinkHi time.Duration
	// WS is a WebSocket step's session, nil for an HTTP request; Scheme is then the handshake's
	// ("http" for ws://, "https" for wss://).
	WS *CompiledWS
}

// HeaderTemplate is one header of a request.
type HeaderTemplate struct {
	Name  string
	Value Template // nil when the value has no variables
	// Secret: the value is secret (AlwaysSecret, secret_headers) or uses a {{secret.NAME}}; a
	// redirect to another origin drops the header.
	Secret bool
}

// PartKind is the kind of a template part.
type PartKind uint8

const (
	PartLit       PartKind = iota // Lit
	PartVU                        // {{vu}}: the VU's number, from 1
	PartIteration                 // {{iteration}}: the VU's iteration, from 0
	PartUUID                      // {{uuid}}: a random UUID v4
	PartRandInt                   // {{random_int A B}}: uniform in [A, B]
	PartData                      // a data column: Index
	PartExtract                   // an extracted variable: Index is its slot
	PartSecret                    // {{secret.NAME}}: Lit holds NAME (never the value)
)

// TemplatePart is one part of a compiled template.
type TemplatePart struct {
	Kind  PartKind
	Lit   []byte // PartLit: the text; PartSecret: the secret's name
	Index int    // PartData: the column; PartExtract: the slot
	A, B  int64  // PartRandInt: the bounds
}

// Template is a compiled template: text with {{variables}}, as parts. Nil means the text has no
// variables.
type Template []TemplatePart

// CompileTemplate compiles s; data maps column names and extract the extracted variables to their
// index. Every variable must be a built-in, a data column, an extracted variable or a secret.
func CompileTemplate(s string, data, extract map[string]int) (Template, error) {
	parts, err := ParseTemplate(s)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && parts[0].Var == "" {
		return nil, nil
	}
	t := make(Template, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Var == "":
			t = append(t, TemplatePart{Kind: PartLit, Lit: []byte(p.Lit)})
		case p.Var == "vu":
			t = append(t, TemplatePart{Kind: PartVU})
		case p.Var == "iteration":
			t = append(t, TemplatePart{Kind: PartIteration})
		case p.Var == "uuid":
			t = append(t, TemplatePart{Kind: PartUUID})
		case p.Var == "random_int":
			t = append(t, TemplatePart{Kind: PartRandInt, A: p.Args[0], B: p.Args[1]})
		case strings.HasPrefix(p.Var, SecretPrefix):
			t = append(t, TemplatePart{Kind: PartSecret, Lit: []byte(strings.TrimPrefix(p.Var, SecretPrefix))})
		default:
			if i, ok := data[p.Var]; ok {
				t = append(t, TemplatePart{Kind: PartData, Index: i})
			} else if i, ok := extract[p.Var]; ok {
				t = append(t, TemplatePart{Kind: PartExtract, Index: i})
			} else {
				return nil, fmt.Errorf("{{%s}} is not defined", p.Var)
			}
		}
	}
	return t, nil
}

// HasSecret reports whether the template uses a {{secret.NAME}}.
func (t Template) HasSecret() bool {
	for i := range t {
		if t[i].Kind == PartSecret {
			return true
		}
	}
	return false
}

// CheckOp is a compiled check operator.
type CheckOp uint8

const (
	OpEq CheckOp = iota
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpContains
	OpNotContains
	OpExists
)

var opCodes = map[string]CheckOp{"eq": OpEq, "ne": OpNe, "lt": OpLt, "le": OpLe, "gt": OpGt, "ge": OpGe,
	"contains": OpContains, "not_contains": OpNotContains, "exists": OpExists}

// CompiledCheck is a check with its operator and value in the forms a response is compared with.
type CompiledCheck struct {
	Type  string // "status", "header", "body", "json", "latency"
	Op    CheckOp
	Num   float64       // a number value
	Str   []byte        // a string value
	Name  []byte        // header checks: the header
	Path  string        // json checks: the gjson path
	Lat   time.Duration // latency checks: the bound
	Value any           // the value as decoded (json checks compare by JSON type)
	Desc  string        // how the summary names the check: "status eq 200"
}

func compileCheck(c Check) CompiledCheck {
	k := CompiledCheck{Type: c.Type, Op: opCodes[c.Op], Name: []byte(c.Name), Path: c.Path, Value: c.Value, Desc: describeCheck(c)}
	switch v := c.Value.(type) {
	case float64:
		k.Num = v
	case string:
		k.Str = []byte(v)
		if c.Type == "latency" {
			k.Lat, _ = time.ParseDuration(v)
		}
	}
	return k
}

func describeCheck(c Check) string {
	var b strings.Builder
	b.WriteString(c.Type)
	if c.Name != "" {
		b.WriteString(" " + c.Name)
	}
	if c.Path != "" {
		b.WriteString(" " + c.Path)
	}
	b.WriteString(" " + c.Op)
	if c.Value != nil {
		fmt.Fprintf(&b, " %v", c.Value)
	}
	return b.String()
}

// ExtractRule is a compiled extraction.
type ExtractRule struct {
	From string // "json", "header", "regex" or "cookie"
	Path string
	Name []byte
	Re   *regexp.Regexp // regex: the compiled pattern
	Slot int            // the variable's slot (Compiled.ExtractSlots)
}

// Compile validates p (a plan whose defaults are filled, as Parse returns it) and compiles it. A
// problem is returned as Validate returns it: a *ValidationError naming every bad field. Secret
// values are not needed (nor read): the engine binds them when the run starts.
func Compile(p *Plan) (*Compiled, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return compile(p)
}

// ParseCompiled is Parse and Compile in one, validating once: the server's path from a stored
// plan to a run. The compiled plan's Plan is the parsed plan; only its Secrets may be set after
// this (the engine binds them when the run starts). Errors are those of Parse.
func ParseCompiled(data []byte) (*Compiled, error) {
	p, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return compile(p)
}

// compile compiles p, which Validate has accepted.
func compile(p *Plan) (*Compiled, error) {
	c := &Compiled{Plan: p}
	data, extract := map[string]int{}, map[string]int{}
	if d := p.Data; d != nil {
		header, rows, err := d.Columns()
		if err != nil {
			return nil, fmt.Errorf("data: %w", err) // Validate has accepted it
		}
		for i, h := range header {
			data[h] = i
		}
		c.Rows = make([][][]byte, len(rows))
		for j, row := range rows {
			r := make([][]byte, len(header))
			for i := range r {
				if i < len(row) {
					r[i] = []byte(row[i])
				}
			}
			c.Rows[j] = r
		}
	}
	for _, r := range p.Requests {
		for _, x := range r.Extract {
			if _, ok := extract[x.Var]; !ok {
				extract[x.Var] = len(extract)
			}
		}
	}
	c.ExtractSlots = len(extract)
	c.Requests = make([]CompiledRequest, len(p.Requests))
	for i := range p.Requests {
		if err := c.compileRequest(&c.Requests[i], &p.Requests[i], data, extract); err != nil {
			return nil, fmt.Errorf("request %q: %w", p.Requests[i].Name, err)
		}
	}
	c.Thresholds = make([]Rule, len(p.Thresholds))
	for i, t := range p.Thresholds {
		rule, err := ParseThreshold(t.Expr)
		if err != nil {
			return nil, err
		}
		c.Thresholds[i] = rule
	}
	return c, nil
}

// compileRequest compiles one request's URL, templates, checks, extraction rules and think time.
func (c *Compiled) compileRequest(cr *CompiledRequest, r *Request, data, extract map[string]int) error {
	u, err := url.Parse(r.URL)
	if err != nil {
		return err
	}
	cr.Scheme, cr.HostPort, cr.Host = u.Scheme, u.Host, u.Hostname()
	if r.IsWebSocket() {
		cr.Scheme = wsHTTPScheme(u)
		if cr.WS, err = compileWS(r, data, extract); err != nil {
			return err
		}
	}
	if cr.URL, err = CompileTemplate(r.URL, data, extract); err != nil {
		return err
	}
	if cr.Body, err = CompileTemplate(r.Body, data, extract); err != nil {
		return err
	}
	// In the plan's order: a stored plan's headers object is written in name order (Marshal), so
	// they are sent in that order, the same on every run and test request (a map has none).
	for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
		val := r.Headers[k]
		t, err := CompileTemplate(val, data, extract)
		if err != nil {
			return err
		}
		cr.Headers = append(cr.Headers, HeaderTemplate{Name: k, Value: t, Secret: r.IsSecretHeader(k) || t.HasSecret()})
	}
	for _, k := range r.Checks {
		cr.Checks = append(cr.Checks, compileCheck(k))
		if k.Type == "body" || k.Type == "json" {
			cr.KeepBody = true
		}
	}
	for _, x := range r.Extract {
		k := ExtractRule{From: x.From, Path: x.Path, Name: []byte(x.Name), Slot: extract[x.Var]}
		if x.From == "regex" {
			if k.Re, err = regexp.Compile(x.Pattern); err != nil {
				return err
			}
		}
		if x.From != "header" && x.From != "cookie" {
			cr.KeepBody = true
		}
		cr.Extracts = append(cr.Extracts, k)
	}
	think := r.ThinkTime
	if think == "" {
		think = c.Plan.ThinkTime
	}
	cr.ThinkLo, cr.ThinkHi, err = think.Range()
	return err
}
