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
		if r.NoSuccess() {
			out = append(out, Warning{Code: "no_success", RunID: r.ID,
				Message: fmt.Sprintf("%s had no successful response: its latency is unknown and its TPS 0", r.Name())})
		}
		if r.missing > 0 || r.Summary != nil && r.Summary.Degraded {
			out = append(out, Warning{Code: "missing_share", RunID: r.ID,
				Message: fmt.Sprintf("%s lost load generators (agents %s): %d of %d seconds missed an agent's share of the load and were left out",
					r.Name(), lostAgents(r), r.missing, r.added)})
		}
		if r.bound > 0 {
			out = append(out, Warning{Code: "generator_bound", RunID: r.ID,
				Message: fmt.Sprintf("%s: %d of %d seconds were generator-bound (load generator CPU saturated) and were left out",
					r.Name(), r.bound, r.added)})
		}
	}
	return out
}

// lostAgents names the agents a degraded run lost ("?" when its summary does not say).
func lostAgents(r *Run) string {
	if r.Summary == nil || len(r.Summary.LostAgents) == 0 {
		return "?"
	}
	return strings.Join(r.Summary.LostAgents, ", ")
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

// plannedLength is the run's planned duration in seconds (0 when unknown or not time-bound).
func plannedLength(r *Run) float64 {
	if r.Plan == nil {
		return 0
	}
	return r.Plan.Load.Length().Seconds()
}

func summaryDuration(r *Run) float64 {
	if r.Summary != nil {
		return r.Summary.DurationS
	}
	return 0
}

// stoppedEarly reports whether a run lasted less than its plan by more than DurationTolerance.
func stoppedEarly(r *Run) bool {
	pl, d := plannedLength(r), summaryDuration(r)
	return pl > 0 && d > 0 && d < pl*(1-DurationTolerance)
}

// closedModel reports whether the executor sets the concurrency (VUs) rather than the arrival
// rate: only then is the achieved concurrency part of the load (under an arrival rate, the
// number of busy VUs follows the target's latency).
func closedModel(executor string) bool {
	switch executor {
	case plan.ConstantVUs, plan.RampingVUs, plan.PerVUIterations, plan.SharedIterations:
		return true
	}
	return false
}

// meanVUs is the mean number of active VUs over the usable seconds (0 when unknown).
func meanVUs(r *Run) float64 {
	var s float64
	for _, x := range r.usable {
		s += x.vus
	}
	if len(r.usable) == 0 {
		return 0
	}
	return s / float64(len(r.usable))
}

// shapeWarnings lists how r's load differs from the baseline's: executor, load settings,
// duration, achieved concurrency (closed models) and requests. Differences in the results
// (throughput, latency, how long the last requests took to drain) are not load differences.
func shapeWarnings(base, r *Run) []Warning {
	var out []Warning
	add := func(code, format string, args ...any) {
		out = append(out, Warning{Code: code, RunID: r.ID, Load: true, Message: fmt.Sprintf(format, args...)})
	}
	be, re := executorOf(base), executorOf(r)
	if be != "" && re != "" && be != re {
		add("executor_differs", "%s uses executor %s, the baseline %s %s", r.Name(), re, base.Name(), be)
	} else if base.Plan != nil && r.Plan != nil {
		if diff := loadDiff(base.Plan.Load, r.Plan.Load); len(diff) > 0 {
			add("load_differs", "%s applies a different load than the baseline %s: %s", r.Name(), base.Name(), strings.Join(diff, "; "))
		}
	}
	switch bd, rd := summaryDuration(base), summaryDuration(r); {
	case plannedLength(base) > 0 && plannedLength(r) > 0:
		// Planned lengths are compared with the load settings; a run cut short is a load difference,
		// a run whose last requests drained longer is not.
		if stoppedEarly(r) != stoppedEarly(base) {
			add("duration_differs", "%s lasted %.1fs, the baseline %s %.1fs, and one of them stopped before its planned end", r.Name(), rd, base.Name(), bd)
		}
	case bd > 0 && rd > 0 && math.Abs(rd-bd)/bd > DurationTolerance:
		add("duration_differs", "%s lasted %.1fs, the baseline %s %.1fs (%+.0f%%)", r.Name(), rd, base.Name(), bd, (rd-bd)/bd*100)
	}
	if be == re && closedModel(be) {
		if bv, rv := meanVUs(base), meanVUs(r); bv > 0 && rv > 0 && math.Abs(rv-bv)/bv > DurationTolerance {
			add("concurrency_differs", "%s ran %.1f VUs on average, the baseline %s %.1f (%+.0f%%)", r.Name(), rv, base.Name(), bv, (rv-bv)/bv*100)
		}
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
		out = append(out, Warning{Code: "requests_differ", RunID: r.ID, Load: true, Message: msg})
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
