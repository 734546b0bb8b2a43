package plan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Rule is a parsed threshold expression: a pass/fail rule on a whole run, written as in k6: `p(95)<200ms`, `p(99.9)<1s`,
// `avg<100ms`, `max<2s`, `error_rate<1%`, `rps>1000`.
//
// Latency values are kept in milliseconds, error_rate as a fraction (1% → 0.01), rps per second.
type Rule struct {
	Expr       string
	Metric     string  // "p", "avg", "min", "max", "med", "error_rate", "rps"
	Percentile float64 // for Metric "p"
	Op         string  // "<", "<=", ">", ">=", "=="
	Value      float64
}

var thresholdRE = regexp.MustCompile(`^\s*(p\(\s*([0-9]+(?:\.[0-9]+)?)\s*\)|avg|min|max|med|error_rate|rps)\s*(<=|>=|==|<|>)\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|us|µs|m|%)?\s*$`)

// ParseThreshold parses one threshold expression; the error says what is wrong in words.
func ParseThreshold(expr string) (Rule, error) {
	m := thresholdRE.FindStringSubmatch(expr)
	if m == nil {
		return Rule{}, fmt.Errorf("%q is not a threshold; write e.g. p(95)<200ms, avg<100ms, error_rate<1%%, rps>1000", expr)
	}
	t := Rule{Expr: strings.TrimSpace(expr), Metric: m[1], Op: m[3]}
	if strings.HasPrefix(m[1], "p(") {
		t.Metric = "p"
		t.Percentile, _ = strconv.ParseFloat(m[2], 64)
		if t.Percentile <= 0 || t.Percentile > 100 {
			return Rule{}, fmt.Errorf("percentile in %q must be in (0, 100]", expr)
		}
	}
	val, _ := strconv.ParseFloat(m[4], 64)
	unit := m[5]
	switch t.Metric {
	case "p", "avg", "min", "max", "med":
		switch unit {
		case "", "ms":
		case "s":
			val *= 1000
		case "us", "µs":
			val /= 1000
		case "m":
			val *= float64(time.Minute / time.Millisecond)
		default:
			return Rule{}, fmt.Errorf("%q: a latency needs a time unit (ms, s)", expr)
		}
	case "error_rate":
		switch unit {
		case "%":
			val /= 100
		case "":
		default:
			return Rule{}, fmt.Errorf("%q: error_rate takes a percentage (1%%) or a fraction (0.01)", expr)
		}
	case "rps":
		if unit != "" {
			return Rule{}, fmt.Errorf("%q: rps takes a plain number", expr)
		}
	}
	t.Value = val
	return t, nil
}

// Pass reports whether an observed value satisfies the threshold.
func (t Rule) Pass(observed float64) bool {
	switch t.Op {
	case "<":
		return observed < t.Value
	case "<=":
		return observed <= t.Value
	case ">":
		return observed > t.Value
	case ">=":
		return observed >= t.Value
	default:
		return observed == t.Value
	}
}
