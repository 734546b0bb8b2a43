// Package importer turns test plans of other tools (curl, HAR, JMeter, Postman, OpenAPI) into
// Volley plans, listing what it could not import.
package importer

import (
	"fmt"
	"sort"
)

// Skipped is one element of the input that was not imported, with the reason.
type Skipped struct {
	Element string `json:"element"`
	Reason  string `json:"reason"`
}

// Options tune an import.
type Options struct {
	KeepAssets bool // HAR: keep images/fonts/css/js
}

// Result is an imported plan (as plan JSON) and what was left out.
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

// Formats lists the format names, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Detect names the format of data, "" when unknown.
func Detect(data []byte) string {
	for _, n := range Formats() {
		if f := formats[n]; f.detect != nil && f.detect(data) {
			return n
		}
	}
	return ""
}

// Import converts data of the named format; unreadable input is an *InputError.
func Import(name string, data []byte, o Options) (Result, error) {
	f, ok := formats[name]
	if !ok {
		return Result{}, &InputError{Format: name, Msg: "unknown format"}
	}
	if len(data) > MaxInput {
		return Result{}, &InputError{Format: name, Msg: fmt.Sprintf("input is %d bytes; at most %d", len(data), MaxInput)}
	}
	r, err := f.run(data, o)
	if err != nil {
		return Result{}, err
	}
	r.Format = name
	if r.Skipped == nil {
		r.Skipped = []Skipped{}
	}
	return r, nil
}

// InputError is input that could not be read as the format.
type InputError struct{ Format, Msg string }

func (e *InputError) Error() string { return e.Format + ": " + e.Msg }

// MaxInput is the largest input in bytes; larger input is refused before parsing.
const MaxInput = 64 << 20
