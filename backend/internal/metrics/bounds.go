package metrics

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
)

// Bounds are limits on a value decoded from outside — a run file, an agent's second or final —
// that CheckBounds applies to every number, string, list and map in it, at any depth.
type Bounds struct {
	// Number bounds every number (0 to Number); Fields overrides it by field name: the JSON
	// name, or the Go name of a field without one ("t", "bytes_in", "SumUs").
	Number float64
	Fields map[string]float64
	// Negative lets numbers be negative (down to −bound): monitor readings.
	Negative bool
	// MinFloat, when > 0, refuses a float closer to 0 than it, other than 0: a span or interval
	// of 1e-300 s a figure is divided by would make that figure infinite.
	MinFloat float64
	Items    int // entries of any list or map
	String   int // bytes of any string or map key
}

// CheckBounds walks v (a pointer to a struct, or any value) with b and says what is out of
// bounds, naming its path under path ("sample.requests", "state.latency.Counts[12]"). Fields not
// encoded (json:"-") are skipped; a Latency whose p50 is above its max is refused too. It
// allocates nothing for what is within bounds but a map key's text.
func (b Bounds) CheckBounds(path string, v any) error {
	budget := math.MaxInt
	return b.walkAt(path, reflect.ValueOf(v), &budget)
}

// walkAt is walk of v at path ("" or ".x.y"-style for run files, "a.b" for CheckBounds): the
// error's field is path and the path within v.
func (b Bounds) walkAt(path string, v reflect.Value, budget *int) error {
	name := path[strings.LastIndexAny(path, ".]")+1:]
	err := b.walk(name, v, budget)
	if fe, ok := err.(*FileError); ok {
		fe.Field = strings.TrimPrefix(path+fe.Field, ".")
	}
	return err
}

// walk checks v, the field or entry name (its last path element: what Fields is looked up by),
// counting list items and map entries against *budget (arrays are walked without counting). An
// error is a *FileError whose Field is the path below name ("" at v itself, ".x", "[3].y"): the
// callers above prefix theirs, so no path is built unless something is out of bounds.
func (b Bounds) walk(name string, v reflect.Value, budget *int) error {
	bad := func(format string, a ...any) error {
		return fileErr("", format, a...)
	}
	under := func(prefix string, err error) error {
		if fe, ok := err.(*FileError); ok {
			fe.Field = prefix + fe.Field
		}
		return err
	}
	bound := b.Number
	if f, ok := b.Fields[name]; ok {
		bound = f
	}
	low := 0.0
	if b.Negative {
		low = -bound
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		x := v.Float()
		if math.IsNaN(x) || x < low || x > bound {
			return bad("%g is out of range (%g to %g)", x, low, bound)
		}
		if x != 0 && math.Abs(x) < b.MinFloat {
			return bad("%g is closer to 0 than %g", x, b.MinFloat)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if x := v.Int(); float64(x) < low || float64(x) > bound {
			return bad("%d is out of range (%g to %g)", x, low, bound)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if x := v.Uint(); float64(x) > bound {
			return bad("%d is out of range (0 to %g)", x, bound)
		}
	case reflect.String:
		if v.Len() > b.String {
			return bad("a string of %d bytes, at most %d", v.Len(), b.String)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return b.walk(name, v.Elem(), budget)
		}
	case reflect.Array, reflect.Slice:
		if v.Kind() == reflect.Slice {
			if v.Len() > b.Items {
				return bad("%d items, at most %d", v.Len(), b.Items)
			}
			if *budget -= v.Len(); *budget < 0 {
				return bad("the file holds more than %d map entries and list items in all", MaxFileEntries)
			}
		}
		for i := range v.Len() {
			if err := b.walk(name, v.Index(i), budget); err != nil {
				return under(fmt.Sprintf("[%d]", i), err)
			}
		}
	case reflect.Map:
		if v.Len() > b.Items {
			return bad("%d items, at most %d", v.Len(), b.Items)
		}
		if *budget -= v.Len(); *budget < 0 {
			return bad("the file holds more than %d map entries and list items in all", MaxFileEntries)
		}
		it := v.MapRange()
		for it.Next() {
			k := fmt.Sprint(it.Key().Interface())
			if len(k) > b.String {
				return bad("a key of %d bytes, at most %d", len(k), b.String)
			}
			if err := b.walk(k, it.Value(), budget); err != nil {
				return under("."+k, err)
			}
		}
	case reflect.Struct:
		switch x := v.Interface().(type) {
		case time.Time:
			return nil
		case Latency:
			if x.P50 > x.Max {
				return fileErr(".p50", "%g is above max (%g)", x.P50, x.Max)
			}
		}
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			field, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if !sf.IsExported() || field == "-" {
				continue
			}
			if field == "" {
				field = sf.Name
			}
			if sf.Anonymous {
				if err := b.walk(name, v.Field(i), budget); err != nil {
					return err
				}
				continue
			}
			if err := b.walk(field, v.Field(i), budget); err != nil {
				return under("."+field, err)
			}
		}
	}
	return nil
}

// Bounds of what one agent says (CheckPeerSecond; cluster checks an agent's final state with
// PeerTotal*): chosen so that nothing a thousand agents add up over a day's run (plan.MaxLength)
// overflows an int64 or a uint64, or becomes infinite — a day of PeerSecondCount is within
// PeerTotalCount, a thousand PeerTotalBytes within 2⁶³, a thousand PeerLatencySumUs within 2⁶⁴.
// Each is far beyond any real generator (a billion requests a second, 400 Gbit/s).
const (
	PeerSecondCount  = 1e9  // any count of one agent's second: requests, iterations, VUs…
	PeerSecondBytes  = 5e10 // bytes in or out in one agent's second
	PeerSecondSumUs  = 1e13 // the µs sum of one agent's second's latencies
	PeerTotalCount   = 1e14 // any count of an agent's whole share (its final state)
	PeerTotalBytes   = 4e15 // bytes in or out of an agent's whole share
	PeerLatencySumUs = 1e16 // the µs sum of a histogram of an agent's whole share
	PeerMinFloat     = 1e-9 // the smallest non-zero float (a span, an interval, a rate…)
	peerItems        = 200_000
	peerString       = 8192
	peerUnixMs       = 1 << 53 // "t" fields: unix milliseconds
	peerRSS          = 1 << 40
	peerMonitor      = MaxFileNumber
	peerProtocols    = 8
)

// PeerSecond bounds one agent's second (CheckPeerSecond).
var PeerSecond = Bounds{Number: PeerSecondCount, MinFloat: PeerMinFloat, Items: peerItems, String: peerString,
	Fields: map[string]float64{"t": peerUnixMs, "bytes_in": PeerSecondBytes, "bytes_out": PeerSecondBytes,
		"body_bytes_decoded": PeerSecondBytes, "rss_bytes": peerRSS,
		// counted since the agent's start (cumulative): a failure group's, a name's checks
		"count": PeerTotalCount, "checks_passed": PeerTotalCount, "checks_failed": PeerTotalCount}}

// PeerTotal bounds an agent's whole share (its engine's final state): counts since its start.
var PeerTotal = Bounds{Number: PeerTotalCount, MinFloat: PeerMinFloat, Items: peerItems, String: peerString,
	Fields: map[string]float64{"t": peerUnixMs, "bytes_in": PeerTotalBytes, "bytes_out": PeerTotalBytes,
		"body_bytes_in": PeerTotalBytes, "body_bytes_decoded": PeerTotalBytes, "SumUs": PeerLatencySumUs,
		"RSSBytes": peerRSS}}

// PeerMonitor bounds monitor readings an agent passes on (they may be negative).
var PeerMonitor = Bounds{Number: peerMonitor, Negative: true, Items: peerItems, String: peerString,
	Fields: map[string]float64{"t": peerUnixMs}}

// CheckPeerSecond says what in one agent's second s is impossible (nil: nothing), naming the
// field under path: a number out of PeerSecond (its monitor readings: PeerMonitor), a status code
// key that is not one (100–599, or "0"), an error kind or failure group kind this build does not
// know, more than MaxStatusCodes codes, MaxSecondCodes kinds or a handful of protocols, failure
// groups out of their bounds (as a run file's). Request names are the caller's to check (the plan
// knows them); so are the counts' relations (successes and errors at most the requests…).
func CheckPeerSecond(path string, s *Sample) error {
	c := *s
	target, targetErrs := c.Target, c.TargetErrors
	c.Target, c.TargetErrors = nil, nil
	if err := PeerSecond.CheckBounds(path, &c); err != nil {
		return err
	}
	if err := PeerMonitor.CheckBounds(path+".target", target); err != nil {
		return err
	}
	if err := PeerMonitor.CheckBounds(path+".target_errors", targetErrs); err != nil {
		return err
	}
	return CheckPeerCodes(path, s.StatusCodes, s.ErrorKinds, s.Protocols, s.Failures)
}

// CheckPeerCodes checks the keyed counts and failure groups of an agent's second or whole share
// (path names it) as CheckPeerSecond says.
func CheckPeerCodes(path string, codes, kinds, protocols map[string]int64, failures []FailureGroup) error {
	prefix := path + "."
	if err := checkCodeKeys(prefix, codes, kinds); err != nil {
		return err
	}
	for k := range kinds {
		if _, ok := kindByName[k]; !ok {
			return fileErr(prefix+"error_kinds", "key %.40q is not an error kind", k)
		}
	}
	if len(protocols) > peerProtocols {
		return fileErr(prefix+"protocols", "%d protocols, at most %d", len(protocols), peerProtocols)
	}
	return checkFailures(prefix, failures, math.MaxInt64)
}
