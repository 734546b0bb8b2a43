package api

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runs"
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
	if c.FullPath() == sourceImportRoute && c.Request.Method == http.MethodPost {
		return maxSourceImportBody // sourceimport.go
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
	// AlreadyImported is true when the file was imported before: Run is that run (answer 200).
	AlreadyImported bool `json:"already_imported"`
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
	f, spec, key, err := readRunFile(c)
	if err != nil {
		return 0, nil, err
	}
	var fixed *store.Plan
	if planID > 0 {
		if fixed, err = s.store.GetPlan(ctx, planID); errors.Is(err, store.ErrNotFound) {
			return 0, nil, errf(http.StatusNotFound, "not_found", "plan %d does not exist", planID)
		} else if err != nil {
			return 0, nil, err
		}
	}
	release, err := claimImport(ctx, key)
	if err != nil {
		return 0, nil, err
	}
	defer release()
	tag := importKeyTag(key)
	if prior, _, err := s.store.ListRuns(ctx, store.RunFilter{Tag: tag, Limit: 1}); err != nil {
		return 0, nil, err
	} else if len(prior) > 0 {
		got, err := s.store.GetRun(ctx, prior[0].ID)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, importedRun{Run: toRunJSON(got), AlreadyImported: true}, nil
	}
	sp, created, err := s.importPlan(c, fixed, spec)
	if err != nil {
		return 0, nil, err
	}
	r, err := w.CreateRun(ctx, sp.ID, sp.Name, spec, f.Run.StartedAt)
	if err != nil {
		return 0, nil, err
	}
	if err := s.storeImported(ctx, w, r.ID, f, tag); err != nil {
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

// readRunFile reads and checks the body: a run file with a status, times and a valid plan (every
// error names its field by JSON path: requests, samples[5].rps, plan.load.vus). spec is its plan
// with secret header values masked (whatever the client sent); key is the file's content id
// (importKey).
func readRunFile(c *gin.Context) (f *metrics.RunFile, spec []byte, key string, err error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, nil, "", fieldError(http.StatusRequestEntityTooLarge, "body", "could not read the body (at most %d MiB)", maxImportBody>>20)
	}
	bad := func(field, format string, a ...any) error {
		return fieldError(http.StatusBadRequest, field, format, a...)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	f = new(metrics.RunFile)
	if err := dec.Decode(f); err != nil {
		field, msg := decodeProblem(body, err)
		return nil, nil, "", bad(field, "%s", msg)
	}
	if dec.More() {
		return nil, nil, "", bad("body", "the body holds more than one JSON value")
	}
	if err := f.Check(); err != nil {
		var fe *metrics.FileError
		if errors.As(err, &fe) && fe.Field != "" {
			return nil, nil, "", bad(fe.Field, "%s", fe.Msg)
		}
		return nil, nil, "", bad("body", "%v", err)
	}
	switch f.Run.Status {
	case store.StatusFinished, store.StatusStopped:
	default:
		return nil, nil, "", bad("run.status", "%q is not finished or stopped", f.Run.Status)
	}
	oldest, latest := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Now().Add(24*time.Hour)
	switch {
	case f.Run.StartedAt.Before(oldest) || f.Run.StartedAt.After(latest):
		return nil, nil, "", bad("run.started_at", "%s is not a plausible start", f.Run.StartedAt.Format(time.RFC3339))
	case f.Run.EndedAt.Before(f.Run.StartedAt) || f.Run.EndedAt.After(latest):
		return nil, nil, "", bad("run.ended_at", "%s is not a plausible end", f.Run.EndedAt.Format(time.RFC3339))
	}
	var probe map[string]json.RawMessage
	if len(f.Plan) == 0 || json.Unmarshal(f.Plan, &probe) != nil || probe == nil {
		return nil, nil, "", bad("plan", "the run file has no plan object")
	}
	// The plan is checked as a new plan is (plan.Parse) whether or not one is made from it; a
	// secret header masked by volley run is no problem for a plan that already exists.
	if _, err := plan.Parse(f.Plan); err != nil {
		if err := filePlanError(err, false); err != nil {
			return nil, nil, "", err
		}
	}
	return f, plan.MaskSpec(f.Plan), importKey(f, body), nil
}

// fieldError is an API error about one field of the body: fields holds field → the message.
func fieldError(status int, field, format string, a ...any) *Error {
	msg := fmt.Sprintf(format, a...)
	e := errf(status, "bad_request", "run file: %s: %s", field, msg)
	e.Fields = map[string]string{field: msg}
	return e
}

// decodeProblem says in words which field of body a json decoding error is about and what it
// must be: ("requests", "must be an integer from 0 to 1e+15"), never Go's type names.
func decodeProblem(body []byte, err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var pe *time.ParseError
	switch {
	case errors.As(err, &te):
		field = jsonPathAt(body, te.Offset)
		if field == "" {
			return "body", "the body must be a JSON object: a run file (volley run --out)"
		}
		if isInteger(te.Type) {
			return field, fmt.Sprintf("must be an integer from 0 to %g", metrics.MaxFileNumber)
		}
		return field, mustBe(te.Type)
	case errors.As(err, &se):
		return cmp.Or(jsonPathAt(body, se.Offset), "body"), fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, se.Error())
	case errors.As(err, &pe):
		var times struct {
			Run struct {
				StartedAt json.RawMessage `json:"started_at"`
			} `json:"run"`
		}
		_ = json.Unmarshal(body, &times)
		if new(time.Time).UnmarshalJSON(times.Run.StartedAt) != nil {
			return "run.started_at", "must be an RFC 3339 time (2006-01-02T15:04:05Z)"
		}
		return "run.ended_at", "must be an RFC 3339 time (2006-01-02T15:04:05Z)"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "body", "the JSON ends early"
	}
	return "body", "not a run file"
}

// jsonPathAt is the JSON path ("samples[5].rps", "" for the top value) of the last value that
// starts before byte offset of body, as far as body is valid JSON.
func jsonPathAt(body []byte, offset int64) string {
	type frame struct {
		arr     bool
		idx     int
		key     string
		wantKey bool
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.arr {
				fmt.Fprintf(&b, "[%d]", f.idx)
			} else {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			}
		}
		return b.String()
	}
	done := func() { // a value of the innermost container ended
		if n := len(stack); n > 0 {
			if stack[n-1].arr {
				stack[n-1].idx++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	last := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			return last
		}
		n := len(stack)
		switch d, _ := tok.(json.Delim); {
		case n > 0 && !stack[n-1].arr && stack[n-1].wantKey && d == 0:
			stack[n-1].key, stack[n-1].wantKey = fmt.Sprint(tok), false
		case d == '}' || d == ']':
			stack = stack[:n-1]
			done()
		case d == '{' || d == '[':
			last = path()
			stack = append(stack, frame{arr: d == '[', wantKey: d == '{'})
		default:
			last = path()
			done()
		}
		if dec.InputOffset() >= offset {
			return last
		}
	}
}

// filePlanError is a plan.Parse error of a run file's plan with its fields named plan.<path>.
// A secret header left masked by volley run is no problem when the plan is not made from the
// file (creating false: nil if nothing else is wrong); it is when it is.
func filePlanError(err error, creating bool) error {
	var ve *plan.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &plan.ValidationError{}
	for k, m := range ve.Fields {
		if strings.Contains(m, "masked placeholder "+plan.Masked) {
			if !creating {
				continue
			}
			m += "; a new plan cannot be made from a plan with masked secret header values: create the plan in Volley first (or use {{secret.NAME}}), then upload"
		}
		out.Add(strings.TrimSuffix("plan."+k, "."), m)
	}
	if len(out.Fields) == 0 {
		return nil
	}
	return out
}

// importKey is a run file's content id: its run.id (volley run makes one for each run), or for
// an older file without one the body itself, hashed (SHA-256, hex, first 128 bits).
func importKey(f *metrics.RunFile, body []byte) string {
	sum := sha256.Sum256(body)
	if f.Run.ID != "" {
		sum = sha256.Sum256([]byte("run.id:" + f.Run.ID))
	}
	return hex.EncodeToString(sum[:16])
}

// importKeyTag is the tag an imported run carries for its content id key: "import-" and the 32
// hex digits, within store.MaxTagLen.
func importKeyTag(key string) string { return "import-" + key }

// importing holds the content ids being imported now, so that two uploads of one file at once
// store it once.
var importing = struct {
	sync.Mutex
	m map[string]chan struct{}
}{m: map[string]chan struct{}{}}

// claimImport waits until no other import of key runs and claims it; release ends the claim.
func claimImport(ctx context.Context, key string) (release func(), err error) {
	for {
		importing.Lock()
		ch, busy := importing.m[key]
		if !busy {
			ch = make(chan struct{})
			importing.m[key] = ch
			importing.Unlock()
			return func() {
				importing.Lock()
				delete(importing.m, key)
				importing.Unlock()
				close(ch)
			}, nil
		}
		importing.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// importPlan finds the plan an import is stored under: fixed when given (plan_id), else the one
// plan named as the file's plan, else a new plan made from it (a valid plan: plan.Parse; the run
// is not started here, so the target policy and the caps are left to the runs started from it).
func (s *Server) importPlan(c *gin.Context, fixed *store.Plan, spec []byte) (*store.Plan, bool, error) {
	ctx := c.Request.Context()
	if fixed != nil {
		return fixed, false, nil
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
		return nil, false, filePlanError(err, true)
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
func (s *Server) storeImported(ctx context.Context, w runWriter, runID int64, f *metrics.RunFile, keyTag string) error {
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
	p.ServerCPUMax = runs.ServerCPUMax(sum)
	p.Agents, p.Degraded = max(sum.Agents, 0), sum.Degraded
	if err := w.FinishRun(ctx, runID, f.Run.Status, f.Run.EndedAt, p, data, hist, ""); err != nil {
		return err
	}
	tags := []string{ImportTag, keyTag}
	_, err = s.store.UpdateRunMeta(ctx, runID, nil, &tags)
	return err
}
