package metrics

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// Bounds of the failure groups (Summary.Failures, Sample.Failures; docs/api.md, "Failures"). The engine never holds more, and RunFile.Check refuses more.
const (
	// MaxFailureGroups bounds the distinct groups a run counts; failures that would open a further
	// group are counted in one group whose Message is OtherFailures.
	MaxFailureGroups = 100
	// OtherFailures is the Message of the group that counts failures beyond MaxFailureGroups.
	OtherFailures = "(other)"
	// MaxFailureMessage bounds a group's message and request name in bytes (cut at a UTF-8 boundary).
	MaxFailureMessage = 256
	// MaxSampleHeaders bounds the header fields a failure sample keeps (the first ones received).
	MaxSampleHeaders = 64
	// MaxSampleHeader bounds each kept header name and value in bytes.
	MaxSampleHeader = 256
	// MaxSampleBody bounds a failure sample's body in bytes: the first KiB of the response body.
	MaxSampleBody = 1024
)

// FailureGroup counts the failed requests that share a request name, error kind, HTTP status and
// message (Summary.Failures, most frequent first; Sample.Failures, the run so far).
type FailureGroup struct {
	Request string         `json:"request"` // request name ("" in the OtherFailures group)
	Kind    string         `json:"kind"`    // error kind (ErrorKind.String; "" in the OtherFailures group)
	Status  int            `json:"status"`  // HTTP status, 0 when no response header arrived
	Message string         `json:"message"` // e.g. "HTTP 503 Service Unavailable", "dial tcp 127.0.0.1:1: connect: connection refused", a failed check's expression
	Count   int64          `json:"count"`
	Sample  *FailureSample `json:"sample,omitempty"` // the group's first response, if one arrived
}

// FailureSample is the first response of a failure group, as received, within bounds: at most
// MaxSampleHeaders header fields, each name and value cut to MaxSampleHeader bytes, and the first
// MaxSampleBody bytes of the body. Every string is valid UTF-8 (invalid bytes become U+FFFD, and
// the result is cut again to its bound).
type FailureSample struct {
	Status        int         `json:"status"`
	Headers       [][2]string `json:"headers"`
	Body          string      `json:"body"`
	BodyTruncated bool        `json:"body_truncated"` // the body was longer than Body, or was not read in full
	// badHeader is 1 + the index of the first header that was not a pair of two strings in the
	// JSON it was decoded from (RunFile.UnmarshalJSON; [2]string takes one silently), else 0.
	badHeader int
}

// ValidText returns b as valid UTF-8 of at most limit bytes: each invalid byte becomes U+FFFD
// and the text is cut at a rune boundary; cut reports whether anything was cut off.
func ValidText(b []byte, limit int) (s string, cut bool) {
	out := make([]byte, 0, min(len(b), limit))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		w := n
		if r == utf8.RuneError && n <= 1 {
			w = utf8.RuneLen(utf8.RuneError)
		}
		if len(out)+w > limit {
			return string(out), true
		}
		if r == utf8.RuneError && n <= 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out), false
}

// SortFailures orders groups by count, most frequent first (ties by request, kind, status and
// message, so that the order is stable).
func SortFailures(g []FailureGroup) {
	sort.Slice(g, func(i, j int) bool {
		a, b := &g[i], &g[j]
		switch {
		case a.Count != b.Count:
			return a.Count > b.Count
		case a.Request != b.Request:
			return a.Request < b.Request
		case a.Kind != b.Kind:
			return a.Kind < b.Kind
		case a.Status != b.Status:
			return a.Status < b.Status
		}
		return a.Message < b.Message
	})
}

// kindByName is the error kinds by JSON name (for checking imported failure groups).
var kindByName = func() map[string]ErrorKind {
	m := make(map[string]ErrorKind, numKinds)
	for k := ErrorKind(1); k < numKinds; k++ {
		m[k.String()] = k
	}
	return m
}()

// checkFailures checks failure groups read from outside (prefix "" or "samples[i]."): at most
// MaxFailureGroups + 1 groups, the one beyond MaxFailureGroups the OtherFailures group; each with
// a known kind (none only in the OtherFailures group), a status of 0 or 100–999, a message and
// request name of at most MaxFailureMessage bytes of valid UTF-8, no two groups alike, and a
// sample within the FailureSample bounds — none on a group of status 0 but OtherFailures, every
// header a pair of two strings. The counts add up to at most errors, the run's (a second's groups
// count since the run's start; the summary's exactly, but for a request the engine abandoned at
// the hard stop while it was being counted).
func checkFailures(prefix string, groups []FailureGroup, errors int64) error {
	field := prefix + "failures"
	if len(groups) > MaxFailureGroups+1 {
		return fileErr(field, "%d groups, at most %d", len(groups), MaxFailureGroups+1)
	}
	type key struct {
		req, kind, msg string
		status         int
	}
	seen := make(map[key]bool, len(groups))
	var total int64
	other := false
	for i := range groups {
		g := &groups[i]
		at := fmt.Sprintf("%s[%d]", field, i)
		_, known := kindByName[g.Kind]
		other = other || g.Message == OtherFailures
		switch {
		case !known && g.Kind != "":
			return fileErr(at+".kind", "%.40q is not an error kind", g.Kind)
		case g.Kind == "" && g.Message != OtherFailures:
			return fileErr(at+".kind", "empty, which only the %s group's is", OtherFailures)
		case g.Status == 0 && g.Sample != nil && g.Message != OtherFailures:
			// (other) mixes statuses: its status is 0, its sample the first response it counted
			return fileErr(at+".sample", "a group of status 0 (no response) has no sample")
		case g.Status != 0 && (g.Status < 100 || g.Status > 999):
			return fileErr(at+".status", "%d is not an HTTP status (0, or 100–999)", g.Status)
		case !boundedText(g.Message, MaxFailureMessage) || g.Message == "":
			return fileErr(at+".message", "must be 1 to %d bytes of UTF-8", MaxFailureMessage)
		case !boundedText(g.Request, MaxFailureMessage):
			return fileErr(at+".request", "must be at most %d bytes of UTF-8", MaxFailureMessage)
		case g.Count < 1:
			return fileErr(at+".count", "%d, at least 1", g.Count)
		}
		k := key{g.Request, g.Kind, g.Message, g.Status}
		if seen[k] {
			return fileErr(at, "the same request, kind, status and message as an earlier group")
		}
		seen[k] = true
		total += g.Count // ≤ 101 × 1e15 (checkBounded): no overflow
		if s := g.Sample; s != nil {
			switch {
			case s.Status < 100 || s.Status > 999:
				return fileErr(at+".sample.status", "%d is not an HTTP status (100–999)", s.Status)
			case len(s.Headers) > MaxSampleHeaders:
				return fileErr(at+".sample.headers", "%d headers, at most %d", len(s.Headers), MaxSampleHeaders)
			case !boundedText(s.Body, MaxSampleBody):
				return fileErr(at+".sample.body", "must be at most %d bytes of UTF-8", MaxSampleBody)
			}
			if s.badHeader > 0 {
				return fileErr(fmt.Sprintf("%s.sample.headers[%d]", at, s.badHeader-1), "must be a [name, value] pair of two strings")
			}
			for j, h := range s.Headers {
				if !boundedText(h[0], MaxSampleHeader) || !boundedText(h[1], MaxSampleHeader) {
					return fileErr(fmt.Sprintf("%s.sample.headers[%d]", at, j), "name and value must be at most %d bytes of UTF-8 each", MaxSampleHeader)
				}
			}
		}
	}
	if len(groups) > MaxFailureGroups && !other {
		return fileErr(field, "%d groups and no %s group: at most %d", len(groups), OtherFailures, MaxFailureGroups)
	}
	if total > errors {
		return fileErr(field, "%d failures counted, but the run has %d errors", total, errors)
	}
	return nil
}

func boundedText(s string, limit int) bool { return len(s) <= limit && utf8.ValidString(s) }
