package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ranges of every number and size in a plan. Parse refuses a value outside its range with a field
// error that names the range; docs/api.md ("Ranges") lists them. They bound what one plan can ask of
// a generator whatever the server's own caps (Caps) say, so that no plan can overflow an integer,
// exhaust memory through sheer size or stall a stop.
const (
	// MaxPlanBytes bounds the plan's JSON text (a data file inlined by `volley run` included).
	MaxPlanBytes = 8 << 20
	// MaxDepth bounds the JSON nesting depth of a plan (objects and arrays, the plan itself being
	// depth 1). The deepest a plan needs is a check's value inside requests[i].checks[j]: 4 levels
	// and the value's own.
	MaxDepth = 32
	// MaxRequests bounds the requests of a plan.
	MaxRequests = 1_000
	// MaxWeight bounds one request's weight; the sum of MaxRequests weights cannot overflow.
	MaxWeight = 1_000_000
	// MaxIterations bounds iterations (per VU, or shared).
	MaxIterations = 1_000_000_000
	// MaxRatePerSecond bounds an arrival rate as iterations per second (rate, start_rate and stage
	// targets, each divided by time_unit).
	MaxRatePerSecond = 1_000_000
	// MinTimeUnit is the shortest time_unit.
	MinTimeUnit = time.Millisecond
	// MaxLength bounds every load duration (duration, max_duration, time_unit, step_duration, one
	// stage) and a load model's whole length (the stages' sum, levels × step_duration).
	MaxLength = 24 * time.Hour
	// MaxStages and MaxLevels bound the stages of a ramp and the levels of a sweep.
	MaxStages = 100
	MaxLevels = 100
	// MaxGracefulStop bounds graceful_stop: a stop is honoured within graceful_stop + 1 s.
	MaxGracefulStop = 10 * time.Minute
	// MaxTimeout bounds http.timeout, http.connect_timeout and think times.
	MaxTimeout = time.Hour
	// MaxRedirects bounds http.max_redirects.
	MaxRedirects = 50
	// MaxRandomInt bounds the absolute value of {{random_int LOW HIGH}}'s bounds: HIGH − LOW + 1
	// cannot overflow.
	MaxRandomInt = 1_000_000_000_000_000_000
	// Per request: URL, name, header count and sizes, body, checks and extractions.
	MaxURLBytes         = 8 << 10
	MaxNameBytes        = 1_000
	MaxHeaders          = 100
	MaxHeaderNameBytes  = 256
	MaxHeaderValueBytes = 8 << 10
	MaxHeaderBytes      = 64 << 10 // all of one request's header names and values
	MaxBodyBytes        = 1 << 20
	MaxChecks           = 50
	MaxExtracts         = 50
	MaxPatternBytes     = 1_000 // a regex pattern, a JSON path, a check's string value: 8 KiB
	MaxValueBytes       = 8 << 10
	// MaxNames is how many distinct request names get statistics of their own, the shared
	// "(other)" bucket included (metrics.MaxNames; a test keeps the two equal): a threshold may
	// name only one of the first MaxNames-1.
	MaxNames = 100
	// MaxThresholds bounds the thresholds of a plan.
	MaxThresholds = 100
	// MaxHosts bounds http.hosts entries and the addresses of one entry.
	MaxHosts = 100
	// The data table: CSV text, rows (the header row excluded) and columns.
	MaxCSVBytes   = 4 << 20
	MaxCSVRows    = 100_000
	MaxCSVColumns = 100
)

// JSONTooDeep is checkDepth for other readers of JSON text (the importers).
func JSONTooDeep(data []byte, max int) (int, bool) { return checkDepth(data, max) }

// checkDepth reports the first place where data nests objects and arrays deeper than max, without
// decoding it (a hostile plan nested a million deep costs a scan, not a decoder's stack). Brackets
// inside strings do not count. It returns the byte offset and true when the limit is exceeded.
func checkDepth(data []byte, max int) (int, bool) {
	depth := 0
	inString, escaped := false, false
	for i, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				return i, true
			}
		case '}', ']':
			depth--
		}
	}
	return 0, false
}

// validateBounds checks the ranges of the sizes and counts of a plan whose defaults are filled
// (the load model's numbers are checked by Load.validate).
func (p *Plan) validateBounds(v *ValidationError) {
	if len(p.Requests) > MaxRequests {
		v.add("requests", fmt.Sprintf("has %d requests; a plan may have at most %d", len(p.Requests), MaxRequests))
	}
	for i, r := range p.Requests {
		if i >= MaxRequests {
			break // one error for the count, not thousands
		}
		f := "requests[" + strconv.Itoa(i) + "]."
		if r.Weight > MaxWeight {
			v.add(f+"weight", fmt.Sprintf("must be 1–%d", MaxWeight))
		}
		if len(r.URL) > MaxURLBytes {
			v.add(f+"url", fmt.Sprintf("is %d bytes; at most %d", len(r.URL), MaxURLBytes))
		}
		if len(r.Name) > MaxNameBytes {
			v.add(f+"name", fmt.Sprintf("is %d bytes; at most %d", len(r.Name), MaxNameBytes))
		}
		if len(r.Body) > MaxBodyBytes {
			v.add(f+"body", fmt.Sprintf("is %d bytes; at most %d (1 MiB)", len(r.Body), MaxBodyBytes))
		}
		if len(r.Headers) > MaxHeaders {
			v.add(f+"headers", fmt.Sprintf("has %d headers; at most %d", len(r.Headers), MaxHeaders))
		}
		total := 0
		for k, val := range r.Headers {
			total += len(k) + len(val)
			if len(k) > MaxHeaderNameBytes {
				v.add(f+"headers", fmt.Sprintf("a header name is %d bytes; at most %d", len(k), MaxHeaderNameBytes))
			}
			if len(val) > MaxHeaderValueBytes {
				v.add(f+"headers", fmt.Sprintf("the value of %q is %d bytes; at most %d", clip(k), len(val), MaxHeaderValueBytes))
			}
		}
		if total > MaxHeaderBytes {
			v.add(f+"headers", fmt.Sprintf("names and values add up to %d bytes; at most %d", total, MaxHeaderBytes))
		}
		if len(r.Checks) > MaxChecks {
			v.add(f+"checks", fmt.Sprintf("has %d checks; at most %d", len(r.Checks), MaxChecks))
		}
		for j, c := range r.Checks {
			cf := f + "checks[" + strconv.Itoa(j) + "]."
			v.atMostBytes(cf+"name", c.Name, MaxHeaderNameBytes)
			v.atMostBytes(cf+"path", c.Path, MaxPatternBytes)
			if s, ok := c.Value.(string); ok {
				v.atMostBytes(cf+"value", s, MaxValueBytes)
			}
		}
		if len(r.Extract) > MaxExtracts {
			v.add(f+"extract", fmt.Sprintf("has %d extractions; at most %d", len(r.Extract), MaxExtracts))
		}
		for j, x := range r.Extract {
			xf := f + "extract[" + strconv.Itoa(j) + "]."
			v.atMostBytes(xf+"pattern", x.Pattern, MaxPatternBytes)
			v.atMostBytes(xf+"path", x.Path, MaxPatternBytes)
			v.atMostBytes(xf+"name", x.Name, MaxHeaderNameBytes)
		}
	}
	if len(p.Thresholds) > MaxThresholds {
		v.add("thresholds", fmt.Sprintf("has %d thresholds; at most %d", len(p.Thresholds), MaxThresholds))
	}
	if len(p.HTTP.Hosts) > MaxHosts {
		v.add("http.hosts", fmt.Sprintf("has %d entries; at most %d", len(p.HTTP.Hosts), MaxHosts))
	}
	for name, addrs := range p.HTTP.Hosts {
		if n := strings.Count(addrs, ",") + 1; n > MaxHosts {
			v.add("http.hosts", fmt.Sprintf("%q lists %d addresses; at most %d", clip(name), n, MaxHosts))
		}
	}
	if d := p.Data; d != nil && len(d.CSV) > MaxCSVBytes {
		v.add("data.csv", fmt.Sprintf("is %d bytes; at most %d (4 MiB)", len(d.CSV), MaxCSVBytes))
	}
}

// atMostBytes names field when s is longer than max bytes.
func (v *ValidationError) atMostBytes(field, s string, max int) {
	if len(s) > max {
		v.add(field, fmt.Sprintf("at most %d bytes", max))
	}
}

// clip shortens a user string quoted in an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
