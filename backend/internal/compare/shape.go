package compare

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/volley-load/volley/backend/internal/plan"
)

// warnings lists why the runs may not be comparable with the baseline, and what the tests could
// not use.
func warnings(runs []*Run, baseline int) []Warning {
	out := []Warning{}
	base := runs[baseline]
	for i, r := range runs {
		if i != baseline {
			out = append(out, shapeWarnings(base, r)...)
		}
	}
	for _, r := range runs {
		switch {
		case r.added == 0:
			out = append(out, Warning{Code: "summary_only", RunID: r.ID,
				Message: fmt.Sprintf("%s has no per-second data: its verdicts are inconclusive", r.Name())})
		case len(r.usable) < MinSeconds:
			out = append(out, Warning{Code: "few_seconds", RunID: r.ID,
				Message: fmt.Sprintf("%s has %d usable seconds (of %d), fewer than %d: its verdicts are inconclusive",
					r.Name(), len(r.usable), r.added, MinSeconds)})
		}
		if r.bound > 0 {
			out = append(out, Warning{Code: "generator_bound", RunID: r.ID,
				Message: fmt.Sprintf("%s: %d of %d seconds were generator-bound (load generator CPU saturated) and were left out",
					r.Name(), r.bound, r.added)})
		}
	}
	return out
}

func executorOf(r *Run) string {
	if r.Plan != nil && r.Plan.Load.Executor != "" {
		return r.Plan.Load.Executor
	}
	if r.Summary != nil {
		return r.Summary.Executor
	}
	return ""
}

func durationOf(r *Run) float64 {
	if r.Summary != nil && r.Summary.DurationS > 0 {
		return r.Summary.DurationS
	}
	if r.Plan != nil {
		return r.Plan.Load.Length().Seconds()
	}
	return 0
}

func shapeWarnings(base, r *Run) []Warning {
	var out []Warning
	add := func(code, format string, args ...any) {
		out = append(out, Warning{Code: code, RunID: r.ID, Message: fmt.Sprintf(format, args...)})
	}
	be, re := executorOf(base), executorOf(r)
	if be != "" && re != "" && be != re {
		add("executor_differs", "%s uses executor %s, the baseline %s %s", r.Name(), re, base.Name(), be)
	} else if base.Plan != nil && r.Plan != nil {
		if diff := loadDiff(base.Plan.Load, r.Plan.Load); len(diff) > 0 {
			add("load_differs", "%s applies a different load than the baseline %s: %s", r.Name(), base.Name(), strings.Join(diff, "; "))
		}
	}
	if bd, rd := durationOf(base), durationOf(r); bd > 0 && rd > 0 && math.Abs(rd-bd)/bd > DurationTolerance {
		add("duration_differs", "%s lasted %.1fs, the baseline %s %.1fs (%+.0f%%)", r.Name(), rd, base.Name(), bd, (rd-bd)/bd*100)
	}
	if bs, rs, what := requestSets(base, r); bs != nil && rs != nil && !slices.Equal(bs, rs) {
		only := func(a, b []string) []string {
			var o []string
			for _, x := range a {
				if !slices.Contains(b, x) {
					o = append(o, x)
				}
			}
			return o
		}
		msg := fmt.Sprintf("%s sends different requests than the baseline %s (%s)", r.Name(), base.Name(), what)
		if o := only(rs, bs); len(o) > 0 {
			msg += "; only in " + r.Name() + ": " + clip(o)
		}
		if o := only(bs, rs); len(o) > 0 {
			msg += "; only in " + base.Name() + ": " + clip(o)
		}
		out = append(out, Warning{Code: "requests_differ", RunID: r.ID, Message: msg})
	}
	return out
}

func clip(v []string) string {
	if len(v) > 5 {
		return strings.Join(v[:5], ", ") + fmt.Sprintf(" and %d more", len(v)-5)
	}
	return strings.Join(v, ", ")
}

// loadDiff lists the load fields (besides the executor and graceful_stop) that differ.
func loadDiff(a, b plan.Load) []string {
	ma, mb := loadFields(a), loadFields(b)
	keys := slices.Sorted(maps.Keys(ma))
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		if ma[k] != mb[k] {
			out = append(out, fmt.Sprintf("%s %s (baseline %s)", k, orNone(mb[k]), orNone(ma[k])))
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func loadFields(l plan.Load) map[string]string {
	b, _ := json.Marshal(l)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	out := map[string]string{}
	for k, v := range m {
		if k == "executor" || k == "graceful_stop" {
			continue
		}
		out[k] = string(v)
	}
	return out
}

// requestSets returns the sorted request sets of both runs when both are known: "METHOD URL"
// from the plans, else the request names of the summaries.
func requestSets(a, b *Run) (sa, sb []string, what string) {
	if a.Plan != nil && b.Plan != nil {
		return planRequests(a.Plan), planRequests(b.Plan), "method and URL"
	}
	if a.Summary != nil && b.Summary != nil && len(a.Summary.ByName) > 0 && len(b.Summary.ByName) > 0 {
		return slices.Sorted(maps.Keys(a.Summary.ByName)), slices.Sorted(maps.Keys(b.Summary.ByName)), "request names"
	}
	return nil, nil, ""
}

func planRequests(p *plan.Plan) []string {
	out := make([]string, 0, len(p.Requests))
	for _, r := range p.Requests {
		m := r.Method
		if m == "" {
			m = "GET"
		}
		out = append(out, strings.ToUpper(m)+" "+r.URL)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
