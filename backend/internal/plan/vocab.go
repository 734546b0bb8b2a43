package plan

import (
	"slices"
	"strings"
)

// The plan's closed vocabularies: the words Validate accepts for methods, flows, data modes, check
// types and their operators, and extraction sources. Validation reads these tables, and the frontend
// contract (backend/internal/contract) is generated from them, so the form offers exactly what the
// server accepts. Order is the order the UI lists them.

// Methods are the HTTP methods a request may use.
var Methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// Flows are the values of plan.flow (FlowWeighted is the default).
var Flows = []string{FlowWeighted, FlowSequence}

// DataModes are the values of data.mode (DataPerIteration is the default).
var DataModes = []string{DataPerIteration, DataPerVU}

// CheckType is one check type with the operators it accepts.
type CheckType struct {
	Type string
	Ops  []string
}

// CheckTypes lists the check types: Check.Type must be one of them and Check.Op one of its Ops.
var CheckTypes = []CheckType{
	{"status", []string{"eq", "ne", "lt", "le", "gt", "ge"}},
	{"header", []string{"eq", "ne", "contains", "exists"}},
	{"body", []string{"contains", "not_contains"}},
	{"json", []string{"eq", "ne", "exists", "contains", "lt", "gt"}},
	{"latency", []string{"lt", "le"}},
}

// ExtractSource is one value of Extract.From with the Extract field that says what to take:
// "path" (Extract.Path), "name" (Extract.Name) or "pattern" (Extract.Pattern).
type ExtractSource struct {
	From string
	Arg  string
}

// ExtractSources lists where an extraction may take its value from.
var ExtractSources = []ExtractSource{{"json", "path"}, {"header", "name"}, {"regex", "pattern"}, {"cookie", "name"}}

// checkOps returns the operators of a check type (false for an unknown type).
func checkOps(typ string) ([]string, bool) {
	i := slices.IndexFunc(CheckTypes, func(c CheckType) bool { return c.Type == typ })
	if i < 0 {
		return nil, false
	}
	return CheckTypes[i].Ops, true
}

// oneOf lists words for an error message: "a, b, c".
func oneOf(words []string) string { return strings.Join(words, ", ") }

// checkTypeNames and extractFroms are the words of CheckTypes and ExtractSources.
func checkTypeNames() []string {
	out := make([]string, len(CheckTypes))
	for i, c := range CheckTypes {
		out[i] = c.Type
	}
	return out
}

func extractFroms() []string {
	out := make([]string, len(ExtractSources))
	for i, x := range ExtractSources {
		out[i] = x.From
	}
	return out
}
