package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// runSeconds keeps every second of a `volley run` with its histogram, for the run file (--out)
// and the upload (--server): about 1–3 KB a second.
type runSeconds struct {
	mu      sync.Mutex // add runs on the engine's collector goroutine
	samples []metrics.FileSample
	id      string // the run file's run.id (newRunID), made once per run
}

// newRunID is a random UUID (version 4, RFC 9562) for a run file's run.id: the server stores a
// file uploaded twice once.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (r *runSeconds) add(s metrics.Sample) {
	// The summary carries each request name's figures; its rows of every second (~0.5 KB per
	// name) would make a long run's file, and its memory here, grow with the plan's names.
	s.ByName = nil
	s.Failures = nil // the summary has them all: a long run against a failing target stays small
	r.mu.Lock()
	r.samples = append(r.samples, metrics.FileSample{Sample: s, Hist: s.Hist})
	r.mu.Unlock()
}

// runFile is the run as `volley run --out` writes it (metrics.RunFile): the summary, its seconds
// with their histograms, and the plan with its secret header values masked (plan.MaskSpec), as
// the server's exports show it. A data.file's rows are carried as data.csv, as the API takes them.
func (r *runSeconds) runFile(p *plan.Plan, sum *metrics.Summary, started, ended time.Time, interrupted bool) ([]byte, error) {
	cp := *p
	if cp.Data != nil {
		d := *cp.Data
		d.File = ""
		cp.Data = &d
	}
	spec, err := plan.Marshal(&cp)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	samples := r.samples
	if r.id == "" {
		r.id = newRunID()
	}
	id := r.id
	r.mu.Unlock()
	if samples == nil {
		samples = []metrics.FileSample{}
	}
	f := metrics.RunFile{Summary: *sum, Version: metrics.RunFileVersion, Plan: plan.MaskSpec(spec), Merged: sum.Hist,
		Run:     metrics.RunFileRun{ID: id, Status: runStatus(interrupted), StartedAt: started.UTC(), EndedAt: ended.UTC()},
		Samples: samples}
	b, err := json.MarshalIndent(&f, "", "  ")
	return append(b, '\n'), err
}

// uploadFlags are `volley run --server URL --token T --plan-id N`: the finished run is sent to the
// platform (POST /api/runs/import) and appears in its history under its plan.
type uploadFlags struct {
	server, token string
	planID        int64
}

// runUpload holds `volley run`'s upload flags.
var runUpload uploadFlags

// tokenEnv is the environment variable --token defaults to (so that the token stays out of
// shell history and CI logs).
const tokenEnv = "VOLLEY_TOKEN"

// flag registers the flags on c and checks them before any load (exit status 2 when invalid).
func (u *uploadFlags) flag(c *cobra.Command) {
	c.Flags().StringVar(&u.server, "server", "", "upload the finished run to this Volley server (its URL, e.g. https://volley.example.com), under its plan")
	c.Flags().StringVar(&u.token, "token", "", "API token for --server (default: the "+tokenEnv+" environment variable)")
	c.Flags().Int64Var(&u.planID, "plan-id", 0, "with --server: store the run under this plan id (default: the plan of the same name, created if there is none)")
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		if err := u.check(); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func (u *uploadFlags) check() error {
	if u.server == "" {
		if u.planID != 0 || u.token != "" {
			return errors.New("--plan-id and --token need --server")
		}
		return nil
	}
	s, err := url.Parse(u.server)
	if err != nil || (s.Scheme != "http" && s.Scheme != "https") || s.Host == "" || s.RawQuery != "" || s.Fragment != "" {
		return fmt.Errorf("--server %q is not an http(s) URL of a Volley server", u.server)
	}
	if u.planID < 0 {
		return errors.New("--plan-id must be a positive plan id")
	}
	if u.token == "" {
		u.token = os.Getenv(tokenEnv)
	}
	return nil
}

// uploadTimeout bounds the whole upload (a long run's file to a slow server).
const uploadTimeout = 2 * time.Minute

// upload sends a run file to the server and returns a line saying where it is stored.
func (u *uploadFlags) upload(body []byte) (string, error) {
	base := strings.TrimRight(u.server, "/")
	target := base + "/api/runs/import"
	if u.planID > 0 {
		target += "?plan_id=" + strconv.FormatInt(u.planID, 10)
	}
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if u.token != "" {
		req.Header.Set("Authorization", "Bearer "+u.token)
	}
	res, err := (&http.Client{Timeout: uploadTimeout}).Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Code, Message string
				Fields        map[string]string
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
			for _, k := range slices.Sorted(maps.Keys(e.Error.Fields)) {
				msg += "\n  " + k + ": " + e.Error.Fields[k]
			}
		}
		if res.StatusCode == http.StatusUnauthorized {
			msg += " (give a tester's API token with --token or " + tokenEnv + ")"
		}
		return "", fmt.Errorf("%s: %s", res.Status, msg)
	}
	var out struct {
		Run struct {
			ID       int64  `json:"id"`
			PlanID   int64  `json:"plan_id"`
			PlanName string `json:"plan_name"`
		} `json:"run"`
		PlanCreated     bool `json:"plan_created"`
		AlreadyImported bool `json:"already_imported"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("the server's answer: %v", err)
	}
	created, verb := "", "uploaded"
	if out.PlanCreated {
		created = ", created"
	}
	if out.AlreadyImported {
		verb = "already uploaded"
	}
	return fmt.Sprintf("%s as run %d of plan %d %q%s: %s/#/runs/%d", verb, out.Run.ID, out.Run.PlanID, out.Run.PlanName, created, base, out.Run.ID), nil
}

// runFromFile reads a file for `volley compare`: a run file (`volley run --out`), a JSON export
// (`volley run --report x.json`, the server's report?format=json) or a bare summary (`--out`
// before run files). note says what the file lacks for a full comparison ("" when nothing).
func runFromFile(id int64, label string, b []byte) (r *compare.Run, note string, err error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, "", fmt.Errorf("not a run file, a JSON export or a summary: %v", err)
	}
	_, isRunFile := probe["volley_run_file"]
	_, hasSamples := probe["samples"]
	_, hasSummary := probe["summary"]
	switch {
	case isRunFile:
		var f metrics.RunFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, "", err
		}
		if err := f.Check(); err != nil {
			return nil, "", err
		}
		if f.Merged == "" {
			note = "no latency histograms (no response was received)"
		}
		r, err = compare.FromSamples(id, label, &f.Summary, f.Plan, fileSeconds(f.Samples))
		return r, note, err
	case hasSamples && hasSummary:
		// {"run", "summary", "samples"}: checked as a run file without histograms would be
		var e struct {
			Summary *metrics.Summary `json:"summary"`
			Samples []metrics.Sample `json:"samples"`
			Run     struct {
				Plan json.RawMessage `json:"plan"`
			} `json:"run"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, "", err
		}
		f := metrics.RunFile{Version: metrics.RunFileVersion, Samples: make([]metrics.FileSample, len(e.Samples))}
		for i, s := range e.Samples {
			f.Samples[i].Sample = s
			// without a summary (a run interrupted by the server's end) its totals are the seconds'
			f.Requests, f.Successes, f.Errors = f.Requests+s.Requests, f.Successes+s.Successes, f.Errors+s.Errors
		}
		if e.Summary != nil {
			f.Summary = *e.Summary
		}
		if err := f.Check(); err != nil {
			return nil, "", err
		}
		r, err = compare.FromSamples(id, label, e.Summary, e.Run.Plan, e.Samples)
		return r, "a JSON export: per-second data but no latency histograms, so the latency verdicts are inconclusive (use volley run --out)", err
	}
	for _, k := range []string{"requests", "rps", "latency_ms"} {
		if _, ok := probe[k]; !ok {
			return nil, "", fmt.Errorf("not a run file from 'volley run --out', a JSON export or a summary (no %q)", k)
		}
	}
	var s metrics.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, "", err
	}
	return compare.FromSummary(id, label, &s), "a summary only (volley run --out of an older version): no per-second data, so every verdict is inconclusive; run again with this version", nil
}

func fileSeconds(fs []metrics.FileSample) []metrics.Sample {
	out := make([]metrics.Sample, len(fs))
	for i, s := range fs {
		out[i] = s.Sample
		out[i].Hist = s.Hist
	}
	return out
}
