package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Template parts, compiled once per plan; rendering appends into a VU's reused buffer.
const (
	partLit uint8 = iota
	partVU
	partIteration
	partUUID
	partRandInt
	partData    // idx: data column
	partExtract // idx: extract slot
)

type tpart struct {
	kind uint8
	lit  []byte
	idx  int
	a, b int64
}

// tmpl is a compiled template; nil means the text has no variables.
type tmpl []tpart

// vars maps variable names to data columns and extract slots, and {{secret.NAME}} to values.
type vars struct {
	data    map[string]int
	extract map[string]int
	secrets plan.SecretValues
}

// literal returns the text of a template whose parts are all literal (a template of secrets and
// text only), so the request can stay static; ok is false when a part varies per iteration.
func (t tmpl) literal() (string, bool) {
	var b strings.Builder
	for i := range t {
		if t[i].kind != partLit {
			return "", false
		}
		b.Write(t[i].lit)
	}
	return b.String(), true
}

func (vs *vars) compile(s string) (tmpl, error) {
	parts, err := plan.ParseTemplate(s)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && parts[0].Var == "" {
		return nil, nil
	}
	t := make(tmpl, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Var == "":
			t = append(t, tpart{kind: partLit, lit: []byte(p.Lit)})
		case p.Var == "vu":
			t = append(t, tpart{kind: partVU})
		case p.Var == "iteration":
			t = append(t, tpart{kind: partIteration})
		case p.Var == "uuid":
			t = append(t, tpart{kind: partUUID})
		case p.Var == "random_int":
			t = append(t, tpart{kind: partRandInt, a: p.Args[0], b: p.Args[1]})
		case strings.HasPrefix(p.Var, plan.SecretPrefix):
			val, ok := vs.secrets[strings.TrimPrefix(p.Var, plan.SecretPrefix)]
			if !ok {
				return nil, fmt.Errorf("{{%s}} has no value", p.Var)
			}
			t = append(t, tpart{kind: partLit, lit: []byte(val)})
		default:
			if i, ok := vs.data[p.Var]; ok {
				t = append(t, tpart{kind: partData, idx: i})
			} else if i, ok := vs.extract[p.Var]; ok {
				t = append(t, tpart{kind: partExtract, idx: i})
			} else {
				return nil, fmt.Errorf("{{%s}} is not defined", p.Var)
			}
		}
	}
	return t, nil
}

// refersToSecret reports whether template s uses a {{secret.NAME}}.
func refersToSecret(s string) bool {
	parts, err := plan.ParseTemplate(s)
	if err != nil {
		return false
	}
	for _, p := range parts {
		if strings.HasPrefix(p.Var, plan.SecretPrefix) {
			return true
		}
	}
	return false
}

// render appends the template's text for VU v to dst. It does not allocate once dst has grown.
func (t tmpl) render(dst []byte, v *vu) []byte {
	for i := range t {
		p := &t[i]
		switch p.kind {
		case partLit:
			dst = append(dst, p.lit...)
		case partVU:
			dst = strconv.AppendInt(dst, int64(v.id+1), 10)
		case partIteration:
			dst = strconv.AppendInt(dst, v.iter, 10)
		case partUUID:
			dst = appendUUID(dst, v.rand())
		case partRandInt:
			// in uint64 arithmetic: b − a + 1 cannot overflow (it wraps to 0 for the whole int64 range)
			span := uint64(p.b) - uint64(p.a) + 1
			var x uint64
			if span == 0 {
				x = v.rand().Uint64()
			} else {
				x = v.rand().Uint64N(span)
			}
			dst = strconv.AppendInt(dst, int64(uint64(p.a)+x), 10)
		case partData:
			if v.row != nil {
				dst = append(dst, v.row[p.idx]...)
			}
		case partExtract:
			dst = append(dst, v.vars[p.idx]...)
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendUUID appends a random (version 4, RFC 9562) UUID drawn from the VU's generator.
func appendUUID(dst []byte, r *rand.Rand) []byte {
	var b [16]byte
	hi, lo := r.Uint64(), r.Uint64()
	for i := 0; i < 8; i++ {
		b[i], b[8+i] = byte(hi>>(8*i)), byte(lo>>(8*i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// Compiled checks.
const (
	opEq uint8 = iota
	opNe
	opLt
	opLe
	opGt
	opGe
	opContains
	opNotContains
	opExists
)

var opCodes = map[string]uint8{"eq": opEq, "ne": opNe, "lt": opLt, "le": opLe, "gt": opGt, "ge": opGe,
	"contains": opContains, "not_contains": opNotContains, "exists": opExists}

type check struct {
	typ   string
	op    uint8
	num   float64
	str   []byte
	name  []byte
	path  string
	lat   time.Duration
	value any
	index int // position in Engine.checks
}

type checkInfo struct {
	request string
	desc    string
}

// checkCount is one check's tally in one shard.
type checkCount struct {
	pass, fail atomic.Uint64
	_          [48]byte
}

func compileCheck(c plan.Check) check {
	k := check{typ: c.Type, op: opCodes[c.Op], name: []byte(c.Name), path: c.Path, value: c.Value}
	switch v := c.Value.(type) {
	case float64:
		k.num = v
	case string:
		k.str = []byte(v)
		if c.Type == "latency" {
			k.lat, _ = time.ParseDuration(v)
		}
	}
	return k
}

func describe(c plan.Check) string {
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

// pass evaluates the check on a response.
func (c *check) pass(v *vu, status int, latency time.Duration) bool {
	switch c.typ {
	case "status":
		return cmpNum(float64(status), c.op, c.num)
	case "latency":
		if c.op == opLe {
			return latency <= c.lat
		}
		return latency < c.lat
	case "header":
		h := v.resp.Header.PeekBytes(c.name)
		switch c.op {
		case opExists:
			return h != nil
		case opContains:
			return bytes.Contains(h, c.str)
		case opNe:
			return !bytes.Equal(h, c.str)
		}
		return bytes.Equal(h, c.str)
	case "body":
		found := bytes.Contains(v.resp.Body(), c.str)
		return found == (c.op == opContains)
	case "json":
		r := gjson.GetBytes(v.resp.Body(), c.path)
		switch c.op {
		case opExists:
			return r.Exists()
		case opContains:
			return strings.Contains(r.String(), string(c.str))
		case opLt, opGt:
			return r.Exists() && cmpNum(r.Float(), c.op, c.num)
		}
		eq := r.Exists() && jsonEqual(r, c.value)
		return eq == (c.op == opEq)
	}
	return false
}

func jsonEqual(r gjson.Result, want any) bool {
	switch w := want.(type) {
	case float64:
		return r.Type == gjson.Number && r.Float() == w
	case string:
		return r.Type == gjson.String && r.Str == w
	case bool:
		return (r.Type == gjson.True) == w && (r.Type == gjson.True || r.Type == gjson.False)
	case nil:
		return r.Type == gjson.Null
	}
	return false
}

func cmpNum(a float64, op uint8, b float64) bool {
	switch op {
	case opEq:
		return a == b
	case opNe:
		return a != b
	case opLt:
		return a < b
	case opLe:
		return a <= b
	case opGt:
		return a > b
	case opGe:
		return a >= b
	}
	return false
}

// Compiled extraction rules.
type extract struct {
	from string
	path string
	name []byte
	re   *regexp.Regexp
	slot int
}

// apply sets the VU's variable from the response (empty when not found).
func (x *extract) apply(v *vu) {
	dst := v.vars[x.slot][:0]
	switch x.from {
	case "json":
		if r := gjson.GetBytes(v.resp.Body(), x.path); r.Exists() {
			dst = append(dst, r.String()...)
		}
	case "header":
		dst = append(dst, v.resp.Header.PeekBytes(x.name)...)
	case "regex":
		if m := x.re.FindSubmatch(v.resp.Body()); m != nil {
			if len(m) > 1 {
				dst = append(dst, m[1]...)
			} else {
				dst = append(dst, m[0]...)
			}
		}
	}
	v.vars[x.slot] = dst
}

// thresholdRule is a compiled plan threshold.
type thresholdRule struct {
	rule  plan.Rule
	label string
	name  int // request-name index in Engine.names, or -1 for the whole run
	abort bool
}

// judgeChecks runs every check of the request (each is counted) and returns the outcome's kind:
// without a status check, 4xx and 5xx are failures (as k6's default expected statuses 200–399);
// a status check replaces that rule; any failed check makes the request check_failed.
// A 4xx/5xx judged by the default rule is reported as status_4xx/status_5xx even when another
// check failed too: the status is the more basic failure.
func (v *vu) judgeChecks(r *vuReq, status int, latency time.Duration) metrics.ErrorKind {
	kind := metrics.KindNone
	statusChecked := false
	counts := v.checkCounts
	for i := range r.spec.checks {
		c := &r.spec.checks[i]
		if c.typ == "status" {
			statusChecked = true
		}
		if c.pass(v, status, latency) {
			counts[c.index].pass.Add(1)
		} else {
			counts[c.index].fail.Add(1)
			kind = metrics.CheckFailed
		}
	}
	if !statusChecked {
		switch {
		case status >= 500:
			return metrics.Status5xx
		case status >= 400:
			return metrics.Status4xx
		}
	}
	return kind
}
