package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// tmpl is a template compiled by package plan (plan.Template) whose {{secret.NAME}} parts are
// bound to their values (bind); nil means the text has no variables.
type tmpl plan.Template

// bind resolves t's {{secret.NAME}} parts to the run's values, in a copy: the compiled plan keeps
// names only. A secret without a value is an error (New has checked there is none).
func bind(t plan.Template, secrets plan.SecretValues) (tmpl, error) {
	if !t.HasSecret() {
		return tmpl(t), nil
	}
	out := make(tmpl, len(t))
	for i, p := range t {
		if p.Kind == plan.PartSecret {
			val, ok := secrets[string(p.Lit)]
			if !ok {
				return nil, fmt.Errorf("{{%s%s}} has no value", plan.SecretPrefix, p.Lit)
			}
			p = plan.TemplatePart{Kind: plan.PartLit, Lit: []byte(val)}
		}
		out[i] = p
	}
	return out, nil
}

// literal returns the text of a template whose parts are all literal (a template of secrets and
// text only), so the request can stay static; ok is false when a part varies per iteration.
func (t tmpl) literal() (string, bool) {
	var b strings.Builder
	for i := range t {
		if t[i].Kind != plan.PartLit {
			return "", false
		}
		b.Write(t[i].Lit)
	}
	return b.String(), true
}

// render appends the template's text for VU v to dst. It does not allocate once dst has grown.
func (t tmpl) render(dst []byte, v *vu) []byte {
	for i := range t {
		p := &t[i]
		switch p.Kind {
		case plan.PartLit:
			dst = append(dst, p.Lit...)
		case plan.PartVU:
			dst = strconv.AppendInt(dst, int64(v.gid+1), 10)
		case plan.PartIteration:
			dst = strconv.AppendInt(dst, v.iter, 10)
		case plan.PartUUID:
			dst = appendUUID(dst, v.rand())
		case plan.PartRandInt:
			// in uint64 arithmetic: b − a + 1 cannot overflow (it wraps to 0 for the whole int64 range)
			span := uint64(p.B) - uint64(p.A) + 1
			var x uint64
			if span == 0 {
				x = v.rand().Uint64()
			} else {
				x = v.rand().Uint64N(span)
			}
			dst = strconv.AppendInt(dst, int64(uint64(p.A)+x), 10)
		case plan.PartData:
			if v.row != nil {
				dst = append(dst, v.row[p.Index]...)
			}
		case plan.PartExtract:
			dst = append(dst, v.vars[p.Index]...)
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

// check is a compiled check (plan.CompiledCheck) with its place in Engine.checks.
type check struct {
	plan.CompiledCheck
	index int
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

// pass evaluates the check on a response.
func (c *check) pass(v *vu, status int, latency time.Duration) bool {
	switch c.Type {
	case "status":
		return cmpNum(float64(status), c.Op, c.Num)
	case "latency":
		if c.Op == plan.OpLe {
			return latency <= c.Lat
		}
		return latency < c.Lat
	case "header":
		h := v.resp.Header.PeekBytes(c.Name)
		switch c.Op {
		case plan.OpExists:
			return h != nil
		case plan.OpContains:
			return bytes.Contains(h, c.Str)
		case plan.OpNe:
			return !bytes.Equal(h, c.Str)
		}
		return bytes.Equal(h, c.Str)
	case "body":
		found := bytes.Contains(v.body(), c.Str)
		return found == (c.Op == plan.OpContains)
	case "json":
		r := gjson.GetBytes(v.body(), c.Path)
		switch c.Op {
		case plan.OpExists:
			return r.Exists()
		case plan.OpContains:
			return strings.Contains(r.String(), string(c.Str))
		case plan.OpLt, plan.OpGt:
			return r.Exists() && cmpNum(r.Float(), c.Op, c.Num)
		}
		eq := r.Exists() && jsonEqual(r, c.Value)
		return eq == (c.Op == plan.OpEq)
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

func cmpNum(a float64, op plan.CheckOp, b float64) bool {
	switch op {
	case plan.OpEq:
		return a == b
	case plan.OpNe:
		return a != b
	case plan.OpLt:
		return a < b
	case plan.OpLe:
		return a <= b
	case plan.OpGt:
		return a > b
	case plan.OpGe:
		return a >= b
	}
	return false
}

// extract is a compiled extraction rule.
type extract plan.ExtractRule

// apply sets the VU's variable from the response (empty when not found).
func (x *extract) apply(v *vu) {
	dst := v.vars[x.Slot][:0]
	switch x.From {
	case "json":
		if r := gjson.GetBytes(v.body(), x.Path); r.Exists() {
			dst = append(dst, r.String()...)
		}
	case "header":
		dst = append(dst, v.resp.Header.PeekBytes(x.Name)...)
	case "cookie":
		dst = append(dst, v.cookieValue(x.Name)...) // cookies.go
	case "regex":
		if m := x.Re.FindSubmatch(v.body()); m != nil {
			if len(m) > 1 {
				dst = append(dst, m[1]...)
			} else {
				dst = append(dst, m[0]...)
			}
		}
	}
	v.vars[x.Slot] = dst
}

// thresholdRule is a compiled plan threshold.
type thresholdRule struct {
	rule  plan.Rule
	label string
	name  int // request-name index in Engine.names, or -1 for the whole run
	abort bool
}

// judgeChecks runs every check of the request and returns the outcome's kind (the checks'
// outcomes are kept in v.passed, counted by countChecks once the request is):
// without a status check, 4xx and 5xx are failures (as k6's default expected statuses 200–399);
// a status check replaces that rule; any failed check makes the request check_failed.
// A 4xx/5xx judged by the default rule is reported as status_4xx/status_5xx even when another
// check failed too: the status is the more basic failure.
func (v *vu) judgeChecks(r *vuReq, status int, latency time.Duration) metrics.ErrorKind {
	kind := metrics.KindNone
	statusChecked := false
	v.passed = v.passed[:0]
	for i := range r.spec.checks {
		c := &r.spec.checks[i]
		if c.Type == "status" {
			statusChecked = true
		}
		pass := c.pass(v, status, latency)
		v.passed = append(v.passed, pass) // grows to the plan's most checks once, then reused
		if !pass {
			if kind != metrics.CheckFailed {
				v.fails.check = c.index // the group's message (failures.go)
			}
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

// countChecks counts the outcomes judgeChecks kept for r's checks. The VU calls it after
// recording the request, and the collector reads the check counters before the request
// counters, so a second never shows more checks than its requests made
// (TestChecksNeverAheadOfRequests).
func (v *vu) countChecks(r *vuReq) {
	counts := v.checkCounts
	for i, pass := range v.passed {
		if c := &counts[r.spec.checks[i].index]; pass {
			c.pass.Add(1)
		} else {
			c.fail.Add(1)
		}
	}
	v.passed = v.passed[:0]
}
