package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/report"
)

func runCmd() *cobra.Command {
	var out string
	var quiet bool
	c := &cobra.Command{
		Use:   "run PLAN.json",
		Short: "Run a plan headless: live progress, end-of-run table, exit 1 if a threshold fails",
		Long: `Run a plan file without the web UI (for CI and quick checks).
Exit status: 0 every threshold passed; 1 a threshold failed; 2 the plan or the command line is invalid;
3 the run could not start or its results could not be written or uploaded; 4 the run failed: no
request got a successful response (e.g. nothing listens at the target) and no threshold failed;
5 a run over agents lost an agent (its share of later seconds is missing) and --allow-agent-loss
was not given; 130 stopped by Ctrl-C
or SIGTERM (the summary of what ran is still printed, written and uploaded).
--out writes a run file (the summary, every second with its latency histogram, the masked plan)
that 'volley compare' tests and that --server uploads to the platform's history (docs/api.md,
"Run files").
A plan's {{secret.NAME}} values come from the environment variables VOLLEY_SECRET_NAME.
--agents N runs the plan over N volley agents (split exactly, merged exactly): it opens the agents
listener (--agents-listen), prints the join command with its token and waits up to --agents-wait
for them (exit 3 naming how many came), or uses an external NATS (--nats).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := runAgents.check(cmd); err != nil {
				return err
			}
			return runPlan(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], out, quiet)
		},
	}
	c.Flags().StringVar(&out, "out", "", "write the run file (summary, per-second data and histograms, plan) as JSON to this file, for volley compare")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no live progress line")
	runReport.flag(c)     // --report FILE (runreport.go)
	runUpload.flag(c)     // --server, --token, --plan-id (runfile.go)
	targetPolicy.flag(c)  // --allow-target, --deny-target (targetpolicy.go)
	runLimits.register(c) // --max-vus … --memory-budget (limits.go)
	// --agents, --agent-labels, --agents-listen, --agents-wait, --allow-agent-loss, --nats… (runagents.go)
	runAgents.flag(c)
	return c
}

// runLimits are `volley run`'s caps on the plan (limits.go).
var runLimits capFlags

// Exit statuses of `volley run`.
const (
	exitThresholds  = 1
	exitInvalidPlan = 2
	exitCannotRun   = 3
	exitFailed      = 4 // outcome failed: no successful response
	exitInterrupted = 130
)

func runPlan(stdout, stderr io.Writer, path, out string, quiet bool) error {
	fail := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "volley: "+format+"\n", args...)
		return exitCode(exitCannotRun)
	}
	caps, err := runLimits.caps()
	if err != nil {
		fmt.Fprintf(stderr, "volley: %v\n", err)
		return exitCode(exitInvalidPlan)
	}
	p, err := plan.ParseFile(path) // also reads data.file, relative to the plan
	if err == nil {
		err = caps.Check(p)
	}
	if err == nil {
		err = plan.CheckTargets(p, targetPolicy.policy()) // literal targets the policy denies
	}
	if err != nil {
		if ve, ok := err.(*plan.ValidationError); ok {
			return invalidPlan(stderr, path, ve)
		}
		return fail("cannot read the plan: %v", err)
	}
	// {{secret.NAME}} values come from the environment (VOLLEY_SECRET_NAME); a missing one is
	// an invalid plan naming the field, before any load.
	p.Secrets = envSecrets(p, os.LookupEnv)
	if err := p.CheckSecrets("the environment (set " + secretEnvPrefix + "NAME)"); err != nil {
		return invalidPlan(stderr, path, err.(*plan.ValidationError))
	}
	// Open --out now: a path that cannot be written must fail before the load, not after it.
	var outFile *os.File
	if out != "" {
		if outFile, err = createPrivate(out); err != nil {
			return fail("cannot write the summary: %v", err)
		}
		defer outFile.Close()
	}
	for _, w := range resourceWarnings(p) {
		fmt.Fprintln(stderr, "volley: warning:", w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	total := p.Load.Length()
	var cum int64
	compiled, err := plan.Compile(p)
	if err != nil {
		return err
	}
	var secs runSeconds // for --out and --server
	keep := outFile != nil || runUpload.server != ""
	onSample := func(s metrics.Sample) {
		cum += s.Requests
		if keep {
			secs.add(s)
		}
		runReport.add(s)
		if !quiet {
			fmt.Fprintf(stderr, "%s\n", progressLine(s, cum, total))
		}
	}
	var sum *metrics.Summary
	started := time.Now()
	if runAgents.on() { // over agents (runagents.go)
		fmt.Fprintf(stderr, "running %q over agents: %s, up to %d VUs, %s\n", p.Name, p.Load.Executor, p.Load.PeakVUs(), total)
		if sum, err = runAgents.run(ctx, stderr, compiled, onSample, &started); sum == nil && ctx.Err() != nil {
			fmt.Fprintf(stderr, "volley: %v\n", err)
			return exitCode(exitInterrupted)
		} else if sum == nil {
			return fail("cannot run over agents: %v", err)
		}
	} else {
		e, nerr := engine.New(compiled, engine.Options{Policy: targetPolicy.policy(), OnSample: onSample})
		if nerr != nil {
			return nerr
		}
		fmt.Fprintf(stderr, "running %q: %s, up to %d VUs, %s\n", p.Name, p.Load.Executor, p.Load.PeakVUs(), total)
		started = time.Now()
		sum, err = e.Run(ctx)
	}
	ended := time.Now()
	if err != nil {
		if sum != nil { // a panic ended the run: what ran is still shown
			printSummary(stdout, p, sum)
		}
		return fail("the run failed: %v", err)
	}
	interrupted := ctx.Err() != nil
	printSummaryAs(stdout, p, sum, runStatus(interrupted))
	if err := runReport.write(p, sum, interrupted); err != nil {
		return fail("cannot write the report: %v", err)
	}
	if keep {
		b, err := secs.runFile(p, sum, started, ended, interrupted)
		if err != nil {
			return fail("cannot encode the run file: %v", err)
		}
		if outFile != nil {
			if _, err := outFile.Write(b); err != nil {
				return fail("cannot write the run file: %v", err)
			}
		}
		if runUpload.server != "" {
			where, err := runUpload.upload(b)
			if err != nil {
				return fail("cannot upload the run to %s: %v", runUpload.server, err)
			}
			fmt.Fprintln(stderr, "volley:", where)
		}
	}
	if interrupted {
		fmt.Fprintf(stderr, "volley: stopped early after %.1fs of %s\n", sum.DurationS, total)
		return exitCode(exitInterrupted)
	}
	// A failed threshold keeps its exit status 1, also in a run that failed outright.
	if !sum.ThresholdsOK() {
		fmt.Fprintln(stderr, "volley: thresholds failed")
		return exitCode(exitThresholds)
	}
	if msg := sum.NoSuccessMessage(); msg != "" {
		fmt.Fprintln(stderr, "volley: run failed:", msg)
		return exitCode(exitFailed)
	}
	return runAgents.degradedExit(stderr, sum) // an agent lost: exit 5 unless --allow-agent-loss
}

// invalidPlan prints every problem of a plan by field path and returns exit status 2.
func invalidPlan(stderr io.Writer, path string, ve *plan.ValidationError) error {
	fmt.Fprintf(stderr, "volley: %s is not a valid plan:\n", path)
	keys := make([]string, 0, len(ve.Fields))
	for k := range ve.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := k
		if name == "" {
			name = "(plan)"
		}
		fmt.Fprintf(stderr, "  %s: %s\n", name, ve.Fields[k])
	}
	return exitCode(exitInvalidPlan)
}

func progressLine(s metrics.Sample, cum int64, total time.Duration) string {
	el := fmt.Sprintf("%3ds", s.ElapsedS)
	if total > 0 {
		el += "/" + total.String()
	}
	lat := "p50 —  p95 —  p99 —" // no successful response in this second
	if s.Successes > 0 {
		lat = fmt.Sprintf("p50 %.2fms  p95 %.2fms  p99 %.2fms", s.Latency.P50, s.Latency.P95, s.Latency.P99)
	}
	line := fmt.Sprintf("%s  reqs %d  rps %.0f  %s  errors %d  vus %d  cpu %.0f%%  rss %s",
		el, cum, s.RPS, lat, s.Errors, s.ActiveVUs, s.Client.CPUPercent, mib(s.Client.RSSBytes))
	if s.MissingShare > 0 { // a run over agents lost one: this second's counts lack its share
		line += fmt.Sprintf("  missing %.0f%% (agent lost)", 100*s.MissingShare)
	}
	return line
}

// outcomeStyle is each outcome's words and ANSI colour.
var outcomeStyle = map[string][2]string{
	metrics.OutcomePassed:             {"PASSED", "32"},               // green
	metrics.OutcomeFinishedWithErrors: {"FINISHED WITH ERRORS", "33"}, // yellow
	metrics.OutcomeFailed:             {"FAILED", "31"},               // red
	metrics.OutcomeStopped:            {"STOPPED", "90"},              // grey
}

// outcomeWords is a run's outcome (metrics.OutcomeOf) in words, coloured (green, yellow, red, grey)
// when w is a terminal and NO_COLOR is not set (https://no-color.org).
func outcomeWords(w io.Writer, outcome string) string {
	o, ok := outcomeStyle[outcome]
	if !ok {
		return outcome
	}
	words, colour := o[0], o[1]
	if f, ok := w.(*os.File); ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd())) {
		return "\033[1;" + colour + "m" + words + "\033[0m"
	}
	return words
}

func mib(b uint64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }

// runStatus is the status of a `volley run` that ended (finished) or was interrupted (stopped).
func runStatus(interrupted bool) string {
	if interrupted {
		return "stopped"
	}
	return "finished"
}

func printSummary(w io.Writer, p *plan.Plan, s *metrics.Summary) { printSummaryAs(w, p, s, "finished") }

// printSummaryAs prints the summary table of a run that ended with status (its outcome: a run
// stopped before any request is "stopped", with no error).
func printSummaryAs(w io.Writer, p *plan.Plan, s *metrics.Summary, status string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\n%s\n", p.Name)
	outcome := outcomeWords(w, s.Outcome(status))
	if s.Degraded { // the verdict of what was sent; an agent's share of the later seconds never was
		outcome += ", degraded (an agent was lost: see below)"
	}
	fmt.Fprintf(tw, "outcome\t%s\n", outcome)
	if msg := s.EndMessage(status); msg != "" {
		fmt.Fprintf(tw, "error\t%s\n", msg)
	}
	fmt.Fprintf(tw, "requests\t%d\t(%d ok, %d errors, %d interrupted)\n", s.Requests, s.Successes, s.Errors, s.Interrupted)
	fmt.Fprintf(tw, "duration\t%.2fs\n", s.DurationS)
	fmt.Fprintf(tw, "throughput\t%.1f req/s\t(send rate %.1f/s)\n", s.RPS, s.SendRate)
	if s.DroppedIterations > 0 {
		fmt.Fprintf(tw, "dropped\t%d iterations\t(no free VU within 10 ms of their due time: raise max_vus)\n", s.DroppedIterations)
	}
	l := s.Latency
	if l == (metrics.Latency{}) || s.Successes == 0 {
		// failed requests without a response (timeouts, refused, resets) have no latency, and
		// the latency of error responses alone would describe no working target
		fmt.Fprintf(tw, "latency ms\t— (no successful response)\n")
	} else {
		fmt.Fprintf(tw, "latency ms\tmin %.3f\tmean %.3f\tp50 %.3f\tp90 %.3f\tp95 %.3f\tp99 %.3f\tmax %.3f\n", l.Min, l.Mean, l.P50, l.P90, l.P95, l.P99, l.Max)
	}
	printByName(tw, s)
	fmt.Fprintf(tw, "status codes\t%s\n", kv(s.StatusCodes))
	if len(s.ErrorKinds) > 0 {
		fmt.Fprintf(tw, "errors by kind\t%s\n", kv(s.ErrorKinds))
	}
	printFailures(tw, s)
	printWS(tw, s)
	fmt.Fprintf(tw, "data\tin %s\tout %s\n", mib(uint64(s.BytesIn)), mib(uint64(s.BytesOut)))
	if s.BodyBytesDecoded > 0 { // compressed bodies checks or extractions read (http.compression)
		fmt.Fprintf(tw, "decoded bodies\t%s\n", mib(uint64(s.BodyBytesDecoded)))
	}
	fmt.Fprintf(tw, "client\tcpu avg %.0f%%\tmax %.0f%%\trss max %s\n", s.Client.CPUPercentAvg, s.Client.CPUPercentMax, mib(s.Client.RSSBytesMax))
	printAgents(tw, s) // a run over agents: how many, start skew, lost ones (runagents.go)
	apart := printTarget(tw, s)
	if len(s.Sweep) > 0 {
		if !apart {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "capacity\tVUs\tTPS\tp50 ms\tp90 ms\tp99 ms\terrors\tclient CPU\tclient RSS%s\t\n", serverHead(s))
		knee := 0
		for _, r := range s.Sweep {
			mark := ""
			if r.Knee {
				mark, knee = "← knee", r.VUs
			}
			fmt.Fprintf(tw, "\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%.2f%%\t%.0f%%\t%s%s\t%s\n", r.VUs, r.RPS, r.P50, r.P90, r.P99, r.ErrorRate*100, r.CPUPercent, mib(r.RSSBytes), serverCols(s, r), mark)
		}
		if knee > 0 {
			fmt.Fprintf(tw, "knee\tat %d VUs: more concurrency adds latency, not throughput\n", knee)
		} else {
			fmt.Fprintf(tw, "knee\tnone: throughput still grew at the last level\n")
		}
		switch s.SweepLimitedBy {
		case "generator":
			fmt.Fprintf(tw, "limit\tthe load generator (its CPU was saturated there)\n")
		case "target":
			fmt.Fprintf(tw, "limit\tthe target (the load generator had capacity to spare)\n")
		case "none":
			fmt.Fprintf(tw, "limit\tnone measured: neither the target's CPU nor the generator was saturated\n")
		}
		fmt.Fprintln(tw)
	}
	if s.GeneratorBoundSeconds > 0 {
		fmt.Fprintf(tw, "warning\tresults from %d of %d seconds may describe the generator, not the target\n", s.GeneratorBoundSeconds, s.Seconds)
	}
	for _, t := range s.Thresholds {
		mark := "ok"
		if !t.OK {
			mark = "FAILED"
		}
		val := "no data"
		if t.Value != nil {
			val = "value " + report.ThresholdValue(t.Expr, *t.Value)
		}
		fmt.Fprintf(tw, "threshold\t%s\t%s\t(%s)\n", t.Expr, mark, val)
	}
	_ = tw.Flush()
}

func kv(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
