package api

import "slices"

// WireType is one JSON shape of the API for the generated frontend contract
// (backend/internal/contract): its TypeScript name and a value of its Go type.
type WireType struct {
	Name  string
	Value any
}

// WireTypes lists the API's own JSON shapes that the frontend reads: a run as listed and in
// detail, a stored plan, a point of a plan's trend and a test request's answer. (Plans, samples and summaries are the plan
// and metrics packages' types.)
func WireTypes() []WireType {
	return []WireType{{"RunListItem", runJSON{}}, {"RunDetail", runDetail{}}, {"StoredPlan", planJSON{}}, {"TrendPoint", trendPoint{}}, {"SendResult", sendJSON{}}}
}

// RunStatuses are the values of a run's status, in the order GET /api/runs?status= lists them.
func RunStatuses() []string { return slices.Clone(runStatuses) }
