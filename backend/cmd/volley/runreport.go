package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/report"
)

// runReport is `volley run --report FILE`: it keeps the run's seconds (without their histograms)
// and writes a report from them and the summary — no database involved. The format follows the
// file's extension: .json, .csv, .html or .htm (reportFormats); another is a usage error.
var runReport reportFile

type reportFile struct {
	path    string
	lang    string     // --report-lang: the HTML page's language (report.Langs)
	mu      sync.Mutex // add runs on the engine's collector goroutine
	samples []metrics.Sample
}

// flag registers --report on c and checks, before any load, that the file can be written (as
// --out does), exiting with status 3 if not. The check neither truncates an existing file nor
// leaves a new one behind: the report is written only once the run has ended.
func (r *reportFile) flag(c *cobra.Command) {
	c.Flags().StringVar(&r.path, "report", "", "write a report of the run to this file, in the format of its extension: .html/.htm (one self-contained page), .json or .csv")
	c.Flags().StringVar(&r.lang, "report-lang", report.DefaultLang, "language of an HTML report (with --report): "+strings.Join(report.Langs, " or "))
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		if r.path == "" && cmd.Flags().Changed("report-lang") {
			fmt.Fprintln(cmd.ErrOrStderr(), "volley: --report-lang needs --report FILE (it is the HTML report's language)")
			return exitCode(exitUsage)
		}
		if _, ok := report.Lang(r.lang, ""); !ok {
			fmt.Fprintf(cmd.ErrOrStderr(), "volley: --report-lang must be one of %s\n", strings.Join(report.Langs, ", "))
			return exitCode(exitUsage)
		}
		if r.path == "" {
			return nil
		}
		if _, ok := reportFormats[strings.ToLower(filepath.Ext(r.path))]; !ok {
			fmt.Fprintf(cmd.ErrOrStderr(), "volley: --report %s: the format follows the extension: .html, .htm, .json or .csv\n", filepath.Base(r.path))
			return exitCode(exitUsage)
		}
		if err := probeWritable(r.path); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "volley: cannot write the report: %v\n", err)
			return exitCode(exitCannotRun)
		}
		return nil
	}
}

// reportFormats maps a --report file's extension (lower case) to the format written.
var reportFormats = map[string]string{".html": "html", ".htm": "html", ".json": "json", ".csv": "csv"}

func probeWritable(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_ = f.Close()
	return os.Remove(path)
}

// add keeps one second for the report (a no-op without --report).
func (r *reportFile) add(s metrics.Sample) {
	if r.path == "" {
		return
	}
	s.Hist, s.ByName, s.Failures = "", nil, nil // the report needs none (failures come from the summary); a long run stays small in memory
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}

// write writes the report (a no-op without --report).
func (r *reportFile) write(p *plan.Plan, sum *metrics.Summary, interrupted bool) error {
	if r.path == "" {
		return nil
	}
	r.mu.Lock()
	samples := r.samples
	r.mu.Unlock()
	f, err := createPrivate(r.path)
	if err != nil {
		return err
	}
	defer f.Close()
	status := runStatus(interrupted)
	meta := report.Meta{PlanName: p.Name, Status: status, Error: sum.EndMessage(status)}
	if len(samples) > 0 {
		first, last := samples[0], samples[len(samples)-1]
		for _, s := range samples { // the first reading (a second before it, its collector late, has none)
			if s.IntervalS > 0 {
				first = s
				break
			}
		}
		start := time.UnixMilli(first.T).Add(-time.Duration(first.IntervalS * float64(time.Second)))
		end := time.UnixMilli(last.T)
		meta.StartedAt, meta.EndedAt = &start, &end
	}
	lang, _ := report.Lang(r.lang, "")
	format := reportFormats[strings.ToLower(filepath.Ext(r.path))]
	if err := report.Write(f, format, report.Report{Meta: meta, Summary: sum, Samples: samples, Plan: p, Lang: lang}); err != nil {
		return err
	}
	return f.Close()
}

// createPrivate creates (or truncates) an output file the CLI writes: a new file gets mode 0600,
// since summaries and reports name the targets and may carry what the plan sent them.
func createPrivate(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
}
