package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/store"
)

// Run import (POST /api/runs/import): a run made elsewhere — `volley run --server` in CI — stored
// in the history under its plan, tagged ImportTag.
const (
	importRoute = "/api/runs/import"
	// maxImportBody bounds an import's body: a run file of several hours of seconds.
	maxImportBody = 32 << 20
	// ImportTag marks an imported run (its source: the CLI); History filters on it.
	ImportTag = "cli"
	// actRunImport is the audit action of an import.
	actRunImport = "run.import"
)

// importSlots bounds the imports decoded at once (each may hold its body and the decoded file,
// some tens of MiB): others wait for a slot.
var importSlots = make(chan struct{}, 2)

// bodyLimit is the most a request to c's route may send: maxImportBody for an import, maxBody
// for everything else.
func bodyLimit(c *gin.Context) int64 {
	if c.FullPath() == importRoute && c.Request.Method == http.MethodPost {
		return maxImportBody
	}
	return maxBody
}

// runWriter is the storage an import writes through besides Store (implemented by *store.Store):
// the run's row, its seconds and its end, or the row's removal when storing fails half-way.
type runWriter interface {
	CreateRun(ctx context.Context, planID int64, planName string, spec []byte, started time.Time) (*store.Run, error)
	DeleteRun(ctx context.Context, id int64) error
	AppendSamples(ctx context.Context, runID int64, smps []store.Sample, p store.Progress) error
	FinishRun(ctx context.Context, runID int64, status string, endedAt time.Time, p store.Progress, summary, hist []byte, errMsg string) error
}

// importedRun is the answer of an import.
type importedRun struct {
	Run         runJSON `json:"run"`
	PlanCreated bool    `json:"plan_created"`
}

// importRun is POST /api/runs/import[?plan_id=N]: the body is a run file (metrics.RunFile, as
// `volley run --out` writes it). The run is stored under plan N, else under the plan of the
// file's plan name, else under a new plan made from the file's plan. Everything is checked
// before anything is stored (metrics.RunFile.Check: bounds on every number, string and list, each
// histogram decoded with limits); histograms are stored re-encoded by Volley's own encoder.
func (s *Server) importRun(c *gin.Context) (int, any, error) {
	var planID int64
	for name := range c.Request.URL.Query() {
		if name != "plan_id" {
			e := badRequest("unknown parameter %q (use plan_id)", name)
			e.Fields = map[string]string{name: "unknown parameter"}
			return 0, nil, e
		}
	}
	if v := c.Query("plan_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			e := badRequest("plan_id %q is not a positive integer", v)
			e.Fields = map[string]string{"plan_id": "a positive integer"}
			return 0, nil, e
		}
		planID = n
	}
	w, ok := s.store.(runWriter)
	if !ok {
		return 0, nil, errf(http.StatusNotImplemented, "not_implemented", "this server's storage cannot import runs")
	}
	ctx := c.Request.Context()
	select {
	case importSlots <- struct{}{}:
		defer func() { <-importSlots }()
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	f, spec, err := readRunFile(c)
	if err != nil {
		return 0, nil, err
	}
	sp, created, err := s.importPlan(c, planID, spec)
	if err != nil {
		return 0, nil, err
	}
	r, err := w.CreateRun(ctx, sp.ID, sp.Name, spec, f.Run.StartedAt)
	if err != nil {
		return 0, nil, err
	}
	if err := s.storeImported(ctx, w, r.ID, f); err != nil {
		// nothing half-imported stays behind (the run would show as running, then interrupted)
		if derr := w.DeleteRun(context.WithoutCancel(ctx), r.ID); derr != nil {
			s.log.Error("import: cannot remove the partly stored run", "run", r.ID, "err", derr)
		}
		return 0, nil, err
	}
	got, err := s.store.GetRun(ctx, r.ID)
	if err != nil {
		return 0, nil, err
	}
	s.audit(c, actRunImport, fmt.Sprintf("run %d", r.ID), map[string]any{"run_id": r.ID, "plan_id": sp.ID,
		"plan_name": sp.Name, "plan_created": created, "hosts": planHosts(spec), "seconds": len(f.Samples)})
	return http.StatusCreated, importedRun{Run: toRunJSON(got), PlanCreated: created}, nil
}

// readRunFile reads and checks the body: a run file with a status, times and a plan. spec is its
// plan with secret header values masked (whatever the client sent).
func readRunFile(c *gin.Context) (*metrics.RunFile, []byte, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, nil, errf(http.StatusRequestEntityTooLarge, "bad_request", "could not read the body (at most %d MiB)", maxImportBody>>20)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var f metrics.RunFile
	if err := dec.Decode(&f); err != nil {
		return nil, nil, badRequest("the body is not a run file: %v", err)
	}
	if dec.More() {
		return nil, nil, badRequest("the body holds more than one JSON value")
	}
	bad := func(field, format string, a ...any) error {
		e := badRequest("run file: "+field+": "+format, a...)
		e.Fields = map[string]string{field: fmt.Sprintf(format, a...)}
		return e
	}
	if err := f.Check(); err != nil {
		return nil, nil, badRequest("run file: %v", err)
	}
	switch f.Run.Status {
	case store.StatusFinished, store.StatusStopped:
	default:
		return nil, nil, bad("run.status", "%q is not finished or stopped", f.Run.Status)
	}
	oldest, latest := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Now().Add(24*time.Hour)
	switch {
	case f.Run.StartedAt.Before(oldest) || f.Run.StartedAt.After(latest):
		return nil, nil, bad("run.started_at", "%s is not a plausible start", f.Run.StartedAt.Format(time.RFC3339))
	case f.Run.EndedAt.Before(f.Run.StartedAt) || f.Run.EndedAt.After(latest):
		return nil, nil, bad("run.ended_at", "%s is not a plausible end", f.Run.EndedAt.Format(time.RFC3339))
	}
	spec := plan.MaskSpec(f.Plan)
	var probe map[string]json.RawMessage
	if len(f.Plan) == 0 || json.Unmarshal(spec, &probe) != nil || probe == nil {
		return nil, nil, bad("plan", "the run file has no plan object")
	}
	return &f, spec, nil
}

// importPlan finds the plan an import is stored under: planID when given, else the one plan
// named as the file's plan, else a new plan made from it (a valid plan: plan.Parse; the run is
// not started here, so the target policy and the caps are left to the runs started from it).
func (s *Server) importPlan(c *gin.Context, planID int64, spec []byte) (*store.Plan, bool, error) {
	ctx := c.Request.Context()
	if planID > 0 {
		sp, err := s.store.GetPlan(ctx, planID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, errf(http.StatusNotFound, "not_found", "plan %d does not exist", planID)
		}
		return sp, false, err
	}
	var named struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(spec, &named) != nil || named.Name == "" {
		e := badRequest("run file: plan.name: the plan has no name; give plan_id")
		e.Fields = map[string]string{"plan.name": "required without plan_id"}
		return nil, false, e
	}
	plans, err := s.store.ListPlans(ctx)
	if err != nil {
		return nil, false, err
	}
	var match *store.Plan
	for i := range plans {
		if plans[i].Name != named.Name {
			continue
		}
		if match != nil {
			return nil, false, errf(http.StatusConflict, "ambiguous_plan",
				"plans %d and %d are both named %q; give plan_id (volley run --plan-id)", match.ID, plans[i].ID, named.Name)
		}
		match = &plans[i]
	}
	if match != nil {
		return match, false, nil
	}
	p, err := plan.Parse(spec)
	if err != nil {
		var ve *plan.ValidationError
		if errors.As(err, &ve) && bytes.Contains(spec, []byte(plan.Masked)) {
			ve.Fields[""] = "a new plan cannot be made from a plan with masked secret header values: create the plan in Volley first (or use {{secret.NAME}}), then upload"
		}
		return nil, false, err
	}
	stored, err := plan.Marshal(p)
	if err != nil {
		return nil, false, err
	}
	sp, err := s.store.CreatePlan(ctx, p.Name, stored)
	if err != nil {
		return nil, false, err
	}
	s.auditPlan(c, auth.ActPlanCreate, sp.ID, sp.Name, map[string]any{"hosts": planHosts(sp.Spec), "imported": true})
	return sp, true, nil
}

// storeImported writes an imported run's seconds (in one transaction) and end, as a run of this
// server is stored.
func (s *Server) storeImported(ctx context.Context, w runWriter, runID int64, f *metrics.RunFile) error {
	sum := &f.Summary
	p := store.Progress{DurationS: sum.DurationS, Requests: sum.Requests, RPS: sum.RPS, P95Ms: sum.Latency.P95,
		ErrorRate: sum.ErrorRate}
	var enc metrics.HistEncoder
	canonical := func(h string) ([]byte, error) {
		if h == "" {
			return nil, nil
		}
		counts, err := metrics.DecodeHistCounts(h) // checked already; decoded again, not kept
		if err != nil {
			return nil, badRequest("run file: histogram: %v", err)
		}
		return []byte(enc.Encode(counts)), nil
	}
	smps := make([]store.Sample, len(f.Samples))
	for i := range f.Samples {
		fs := &f.Samples[i]
		data, err := json.Marshal(&fs.Sample)
		if err != nil {
			return err
		}
		hist, err := canonical(fs.Hist)
		if err != nil {
			return err
		}
		smps[i] = store.Sample{Second: fs.ElapsedS, TMs: fs.T, Data: data, Hist: hist}
	}
	if err := w.AppendSamples(ctx, runID, smps, p); err != nil {
		return err
	}
	data, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	hist, err := canonical(f.Merged)
	if err != nil {
		return err
	}
	if len(sum.Thresholds) > 0 {
		ok := sum.ThresholdsOK()
		p.ThresholdsOK = &ok
	}
	if err := w.FinishRun(ctx, runID, f.Run.Status, f.Run.EndedAt, p, data, hist, ""); err != nil {
		return err
	}
	tags := []string{ImportTag}
	_, err = s.store.UpdateRunMeta(ctx, runID, nil, &tags)
	return err
}
