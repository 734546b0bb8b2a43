package plan

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Flows and data modes.
const (
	FlowWeighted     = "weighted"
	FlowSequence     = "sequence"
	DataPerIteration = "per-iteration"
	DataPerVU        = "per-vu"
)

// Threshold is one entry of a plan's thresholds: a string such as "p(95)<200ms", or an object
// {"expr": "p(95)<200ms", "request": "login", "abort_on_fail": true} to judge one request name or
// to stop the run as soon as the threshold fails.
type Threshold struct {
	Expr        string `json:"expr"`
	Request     string `json:"request,omitempty"`
	AbortOnFail bool   `json:"abort_on_fail,omitempty"`
}

// Label is how the threshold is shown: its expression, prefixed by the request name if any.
func (t Threshold) Label() string {
	if t.Request == "" {
		return t.Expr
	}
	return t.Request + ": " + t.Expr
}

// MarshalJSON writes a plain threshold as a string, others as objects.
func (t Threshold) MarshalJSON() ([]byte, error) {
	if t.Request == "" && !t.AbortOnFail {
		return json.Marshal(t.Expr)
	}
	type obj Threshold
	return json.Marshal(obj(t))
}

// UnmarshalJSON accepts the string or the object form.
func (t *Threshold) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*t = Threshold{}
		return json.Unmarshal(b, &t.Expr)
	}
	type obj Threshold
	var o obj
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*t = Threshold(o)
	return nil
}

// ThinkTime is a pause: a duration ("1s") or a uniform random range ("500ms-2s").
type ThinkTime string

// Range returns the bounds (equal for a fixed pause; zero when unset).
func (t ThinkTime) Range() (lo, hi time.Duration, err error) {
	s := strings.TrimSpace(string(t))
	if s == "" {
		return 0, 0, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = time.ParseDuration(strings.TrimSpace(a)); err != nil {
		return 0, 0, fmt.Errorf("%q is not a think time; write \"1s\" or \"500ms-2s\"", s)
	}
	hi = lo
	if isRange {
		if hi, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
			return 0, 0, fmt.Errorf("%q is not a think time; write \"1s\" or \"500ms-2s\"", s)
		}
	}
	if lo < 0 || hi < lo || hi > MaxTimeout {
		return 0, 0, fmt.Errorf("%q must be a range from 0 to at most 1h, low first", s)
	}
	return lo, hi, nil
}

func validateCheck(f string, c Check, v *ValidationError) {
	ops, ok := checkOps(c.Type)
	if !ok {
		v.add(f+".type", fmt.Sprintf("%q is not a check type (%s)", c.Type, oneOf(checkTypeNames())))
		return
	}
	okOp := false
	for _, o := range ops {
		okOp = okOp || o == c.Op
	}
	if !okOp {
		v.add(f+".op", fmt.Sprintf("%q is not an op of a %s check (%s)", c.Op, c.Type, strings.Join(ops, ", ")))
	}
	needsValue := c.Op != "exists"
	switch c.Type {
	case "status":
		if _, ok := c.Value.(float64); !ok {
			if _, ok := c.Value.(json.Number); !ok {
				v.add(f+".value", "must be a status code number")
			}
		}
	case "header":
		if c.Name == "" {
			v.add(f+".name", "the header to check is required")
		}
		if _, ok := c.Value.(string); needsValue && !ok {
			v.add(f+".value", "must be a string")
		}
	case "body":
		if s, ok := c.Value.(string); !ok || s == "" {
			v.add(f+".value", "must be a non-empty string")
		}
	case "json":
		if c.Path == "" {
			v.add(f+".path", "a JSON path (e.g. data.items.0.id) is required")
		}
		// A missing value means JSON null: {"op":"eq"} checks that the path holds null.
	case "latency":
		s, _ := c.Value.(string)
		if d, err := time.ParseDuration(s); err != nil || d <= 0 {
			v.add(f+".value", `must be a duration such as "200ms"`)
		}
	}
}

func validateExtract(f string, x Extract, v *ValidationError) {
	if !varName.MatchString(x.Var) {
		v.add(f+".var", fmt.Sprintf("%q is not a variable name (letters, digits, _)", x.Var))
	} else if builtins[x.Var] {
		v.add(f+".var", fmt.Sprintf("%q is a built-in variable", x.Var))
	}
	switch x.From {
	case "json":
		if x.Path == "" {
			v.add(f+".path", "a JSON path is required")
		}
	case "header":
		if x.Name == "" {
			v.add(f+".name", "the header name is required")
		}
	case "cookie":
		if !validCookieName(x.Name) {
			v.add(f+".name", "the cookie name is required (a token: no spaces, separators or controls)")
		}
	case "regex":
		if _, err := regexp.Compile(x.Pattern); err != nil || x.Pattern == "" {
			v.add(f+".pattern", "must be a regular expression (RE2 syntax)")
		}
	default:
		v.add(f+".from", fmt.Sprintf("%q is not one of %s", x.From, oneOf(extractFroms())))
	}
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// builtins are the variables every plan has: {{vu}} (1-based VU number), {{iteration}} (the VU's
// iteration, from 0), {{uuid}} (a random UUID v4), {{random_int a b}} (uniform in [a, b]).
var builtins = map[string]bool{"vu": true, "iteration": true, "uuid": true, "random_int": true}

// isSecretRef reports whether a template variable is a {{secret.NAME}} reference (resolved when
// a run starts, from the server's secret store or the environment).
func isSecretRef(v string) bool {
	name, ok := strings.CutPrefix(v, SecretPrefix)
	return ok && ValidSecretName(name)
}

// Part is one piece of a template: literal text, or a variable with its arguments.
type Part struct {
	Lit  string
	Var  string
	Args []int64
}

var tmplRE = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// ParseTemplate splits s into literal text and {{variables}}. It returns one literal part when s
// has no variables. random_int takes two integers: {{random_int 1 100}}.
func ParseTemplate(s string) ([]Part, error) {
	var parts []Part
	last := 0
	for _, m := range tmplRE.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > last {
			parts = append(parts, Part{Lit: s[last:m[0]]})
		}
		fields := strings.Fields(s[m[2]:m[3]])
		if len(fields) == 0 || !varName.MatchString(fields[0]) && !isSecretRef(fields[0]) {
			return nil, fmt.Errorf("%q is not a variable", s[m[0]:m[1]])
		}
		p := Part{Var: fields[0]}
		for _, a := range fields[1:] {
			n, err := strconv.ParseInt(a, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: arguments must be whole numbers", s[m[0]:m[1]])
			}
			p.Args = append(p.Args, n)
		}
		switch {
		case p.Var == "random_int" && (len(p.Args) != 2 || p.Args[0] > p.Args[1]):
			return nil, fmt.Errorf("%q: write {{random_int LOW HIGH}} with LOW ≤ HIGH", s[m[0]:m[1]])
		case p.Var == "random_int" && (p.Args[0] < -MaxRandomInt || p.Args[1] > MaxRandomInt):
			return nil, fmt.Errorf("%q: LOW and HIGH must be within ±%d (10^18)", s[m[0]:m[1]], int64(MaxRandomInt))
		case p.Var != "random_int" && len(p.Args) > 0:
			return nil, fmt.Errorf("%q takes no arguments", s[m[0]:m[1]])
		}
		parts = append(parts, p)
		last = m[1]
	}
	if last < len(s) || len(parts) == 0 {
		parts = append(parts, Part{Lit: s[last:]})
	}
	return parts, nil
}

// Columns parses the data CSV and returns its header and rows.
func (d *Data) Columns() (header []string, rows [][]string, err error) {
	r := csv.NewReader(strings.NewReader(d.CSV))
	r.TrimLeadingSpace = true
	all, err := r.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("is not valid CSV: %v", err)
	}
	if len(all) < 2 {
		return nil, nil, fmt.Errorf("needs a header row and at least one data row")
	}
	if len(all)-1 > MaxCSVRows {
		return nil, nil, fmt.Errorf("has %d data rows; at most %d", len(all)-1, MaxCSVRows)
	}
	if len(all[0]) > MaxCSVColumns {
		return nil, nil, fmt.Errorf("has %d columns; at most %d", len(all[0]), MaxCSVColumns)
	}
	return all[0], all[1:], nil
}

// validateScenario checks the flow, the data table and that every {{variable}} is defined.
func (p *Plan) validateScenario(v *ValidationError) {
	if !slices.Contains(Flows, p.Flow) {
		v.add("flow", fmt.Sprintf("%q is not one of %s", p.Flow, oneOf(Flows)))
	}
	if _, _, err := p.ThinkTime.Range(); err != nil {
		v.add("think_time", err.Error())
	}
	known := map[string]bool{}
	for k := range builtins {
		known[k] = true
	}
	if d := p.Data; d != nil {
		switch {
		case d.File != "":
			v.add("data.file", "files are read by `volley run`; through the API put the CSV text in data.csv")
		case d.CSV == "":
			v.add("data.csv", "the CSV text is required (first row: column names)")
		default:
			header, _, err := d.Columns()
			if err != nil {
				v.add("data.csv", err.Error())
			}
			for _, h := range header {
				if !varName.MatchString(h) {
					v.add("data.csv", fmt.Sprintf("column %q is not a variable name (letters, digits, _)", h))
				}
				known[h] = true
			}
		}
		if !slices.Contains(DataModes, d.Mode) {
			v.add("data.mode", fmt.Sprintf("%q is not one of %s", d.Mode, oneOf(DataModes)))
		}
	}
	for _, r := range p.Requests {
		for _, x := range r.Extract {
			known[x.Var] = true
		}
	}
	for i, r := range p.Requests {
		if i >= MaxRequests {
			break // validateBounds named the count
		}
		f := "requests[" + strconv.Itoa(i) + "]."
		fields := map[string]string{"url": r.URL, "body": r.Body}
		for k, val := range r.Headers {
			fields["headers"] += val + "\x00" + k
		}
		for _, t := range wsTemplates(&r) {
			fields[t[0]] = t[1]
		}
		for name, s := range fields {
			parts, err := ParseTemplate(s)
			if err != nil {
				v.add(f+name, err.Error())
				continue
			}
			for _, part := range parts {
				if part.Var != "" && !known[part.Var] && !isSecretRef(part.Var) {
					v.add(f+name, fmt.Sprintf("{{%s}} is not defined (built-ins: vu, iteration, uuid, random_int; or a data column or an extracted var)", part.Var))
				}
			}
		}
	}
}

// ParseFile reads a plan file for `volley run`: data.file is read relative to the plan's folder
// and inlined as data.csv before the plan is parsed.
func ParseFile(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) == nil {
		var d map[string]any
		if json.Unmarshal(raw["data"], &d) == nil {
			if f, ok := d["file"].(string); ok && f != "" {
				if !filepath.IsAbs(f) {
					f = filepath.Join(filepath.Dir(path), f)
				}
				csvText, err := os.ReadFile(f)
				if err != nil {
					return nil, &ValidationError{Fields: map[string]string{"data.file": err.Error()}}
				}
				delete(d, "file")
				d["csv"] = string(csvText)
				raw["data"], _ = json.Marshal(d)
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				_ = enc.Encode(raw)
				b = buf.Bytes()
			}
		}
	}
	return Parse(b)
}
