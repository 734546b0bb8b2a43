// Package importer turns tests written for other tools — a curl command line, a browser's HAR
// recording, a JMeter .jmx file, a Postman collection v2.1, an OpenAPI 3 document — into a Volley
// plan, and lists every element it could not carry over with the reason.
//
// Each format lives in a file of its own that registers itself from init (register). The plan is
// built as a map[string]any in plan JSON (exactly what a user would write), so it can be printed,
// shown in the editor, or checked with plan.Parse; an importer never writes fields a plan does not
// have.
package importer

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Skipped is one element of the input that is not in the plan, and why; or, with Note set, a
// note on one that IS in the plan but needs a look (credentials to add, a placeholder host, a
// suggested extraction to check).
type Skipped struct {
	Element string `json:"element"`
	Reason  string `json:"reason"`
	Note    bool   `json:"note,omitempty"`
}

// SkippedCount is how many entries of l are real skips (not notes).
func SkippedCount(l []Skipped) int {
	n := 0
	for _, s := range l {
		if !s.Note {
			n++
		}
	}
	return n
}

// Options tune an import.
type Options struct {
	KeepAssets bool /* HAR: keep images/fonts/css/js */
	// Context, when set, ends the import early once done (an API client that went away): the
	// importers stop at their next request or entry and Import returns the context's error.
	Context context.Context
}

// stopped reports whether o.Context is done.
func (o Options) stopped() bool { return o.Context != nil && o.Context.Err() != nil }

// Result is an imported plan (plan JSON as a map), what was skipped, and the format read.
type Result struct {
	Plan    map[string]any `json:"plan"`
	Skipped []Skipped      `json:"skipped"`
	Format  string         `json:"format"`
}

type format struct {
	name   string
	run    func(data []byte, o Options) (Result, error)
	detect func(data []byte) bool
}

var formats = map[string]format{}

func register(name string, run func([]byte, Options) (Result, error), detect func([]byte) bool) {
	formats[name] = format{name, run, detect}
}

// Formats returns the names of the registered formats, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Detect names the format data is written in, trying the formats in name order; "" when none
// recognises it.
func Detect(data []byte) string {
	for _, n := range Formats() {
		if f := formats[n]; f.detect != nil && f.detect(data) {
			return n
		}
	}
	return ""
}

// Import reads data in the named format ("" or "detect": Detect). Input it cannot read — over
// MaxInput bytes, an unknown format, malformed text — is an *InputError.
func Import(name string, data []byte, o Options) (Result, error) {
	if len(data) > MaxInput {
		return Result{}, &InputError{Format: name, Msg: fmt.Sprintf("the input is %d bytes; at most %d (64 MiB)", len(data), MaxInput)}
	}
	if name == "" || name == "detect" {
		if name = Detect(data); name == "" {
			if oasSwaggerHead.Match(data[:min(len(data), 4096)]) {
				return Result{}, &InputError{Msg: oasSwagger2}
			}
			return Result{}, &InputError{Msg: "the format could not be detected; name it (one of " + strings.Join(Formats(), ", ") + ")"}
		}
	}
	f, ok := formats[name]
	if !ok {
		return Result{}, &InputError{Format: name, Msg: fmt.Sprintf("%q is not a format (one of %s)", name, strings.Join(Formats(), ", "))}
	}
	r, err := f.run(data, o)
	if o.stopped() {
		return Result{}, o.Context.Err()
	}
	if err != nil {
		return Result{}, err
	}
	r.Format = name
	if r.Skipped == nil {
		r.Skipped = []Skipped{}
	}
	return r, nil
}

// InputError is input an importer cannot read at all (as opposed to elements it skips).
type InputError struct{ Format, Msg string }

func (e *InputError) Error() string {
	if e.Format == "" {
		return e.Msg
	}
	return e.Format + ": " + e.Msg
}

// MaxInput bounds the input of an import, in bytes; larger input is refused before parsing.
const MaxInput = 64 << 20 // bytes; larger input is refused before parsing
