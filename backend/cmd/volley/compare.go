package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/store"
)

// Exit statuses of `volley compare`.
const (
	exitCompareRegression = 1
	exitCompareBadInput   = 2
)

func compareCmd() *cobra.Command {
	db := "volley.db"
	c := &cobra.Command{
		Use:   "compare BASELINE RUN [RUN…]",
		Short: "Compare runs (ids in the database, or `volley run --out` run files): delta table, exit 1 on a regression",
		Long: `Compare 2 to 5 runs against the first (the baseline): TPS (successful responses per second), p50,
p90, p95, p99, max latency, error rate and the generator's CPU and RSS, each with a verdict —
regression, improvement, no_change or inconclusive — from an autocorrelation-corrected t interval
(per-second TPS, error rate) or a bootstrap confidence interval (latency percentiles), with a 5 %
practical threshold (see docs/compare.md). An improvement is withheld while the error rate rose;
a run without a successful response has no latency ("—").

The runs are either run ids in the database (volley compare 12 13 --db volley.db) or files
(volley compare a.json b.json): run files written by 'volley run --out' (tested as stored runs
are), JSON exports ('volley run --report x.json', the server's report?format=json: no histograms,
so the latency verdicts are inconclusive) or summaries from an older --out (no per-second data:
only the deltas). A "note:" line says what a file lacks (docs/api.md, "Run files").

Exit status: 0 no regression; 1 some metric of some run is a regression; 2 bad input (wrong
arguments, unknown run, unreadable file or database).`,
		Args: cobra.ArbitraryArgs, // checked in compareMain, to exit with status 2
		RunE: func(cmd *cobra.Command, args []string) error {
			return compareMain(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, db)
		},
	}
	c.Flags().StringVar(&db, "db", db, "SQLite database holding the runs (when the arguments are run ids)")
	c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		fmt.Fprintf(cmd.ErrOrStderr(), "volley compare: %v\n", err)
		return exitCode(exitCompareBadInput)
	})
	return c
}

func compareMain(stdout, stderr io.Writer, args []string, db string) error {
	bad := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "volley compare: "+format+"\n", a...)
		return exitCode(exitCompareBadInput)
	}
	if len(args) < compare.MinRuns || len(args) > compare.MaxRuns {
		return bad("give %d to %d runs (ids or summary files), the baseline first; got %d", compare.MinRuns, compare.MaxRuns, len(args))
	}
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		if id, err := strconv.ParseInt(a, 10, 64); err == nil && id > 0 {
			ids = append(ids, id)
		}
	}
	var runs []*compare.Run
	var err error
	switch len(ids) {
	case len(args):
		runs, err = runsFromDB(db, ids)
	case 0:
		runs, err = runsFromFiles(stdout, args)
	default:
		return bad("give either run ids or summary files, not both")
	}
	if err != nil {
		return bad("%v", err)
	}
	res, err := compare.Compare(runs, 0, compare.Options{})
	if err != nil {
		return bad("%v", err)
	}
	printComparison(stdout, runs, res)
	if res.AnyRegression() {
		return exitCode(exitCompareRegression)
	}
	return nil
}

func runsFromDB(db string, ids []int64) ([]*compare.Run, error) {
	for i, id := range ids {
		for _, prev := range ids[:i] {
			if prev == id {
				return nil, fmt.Errorf("run %d is listed twice", id)
			}
		}
	}
	if fi, err := os.Stat(db); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("no database file at %s (use --db)", db)
	}
	st, err := store.OpenWith(db, store.Options{SkipIntegrityCheck: true}) // serve checks it at its start
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ctx := context.Background()
	runs := make([]*compare.Run, len(ids))
	for i, id := range ids {
		r, err := st.GetRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("run %d is not in %s", id, db)
		}
		if err != nil {
			return nil, err
		}
		smps, err := st.Samples(ctx, id)
		if err != nil {
			return nil, err
		}
		secs := make([]compare.StoredSecond, len(smps))
		for k, s := range smps {
			secs[k] = compare.StoredSecond{Data: s.Data, Hist: s.Hist}
		}
		if runs[i], err = compare.FromStored(id, r.Summary, r.PlanSpec, secs); err != nil {
			return nil, err
		}
		runs[i].Label = fmt.Sprintf("#%d", id)
	}
	return runs, nil
}

func runsFromFiles(stdout io.Writer, paths []string) ([]*compare.Run, error) {
	runs := make([]*compare.Run, len(paths))
	for i, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		label := filepath.Base(path)
		for _, r := range runs[:i] {
			if r.Label == label {
				label = path
			}
		}
		r, note, err := runFromFile(int64(i+1), label, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if note != "" {
			fmt.Fprintf(stdout, "note: %s: %s\n", label, note)
		}
		runs[i] = r
	}
	return runs, nil
}

// unknown is printed for a value that is not known (null in the API, "—" in the UI).
const unknown = "—"

// formatValue writes a metric's value in its unit; signed for deltas.
func formatValue(unit string, v *float64, signed bool) string {
	if v == nil || math.IsNaN(*v) {
		return unknown
	}
	x := *v
	sign := ""
	if signed && x >= 0 {
		sign = "+"
	}
	switch unit {
	case "ms":
		return fmt.Sprintf("%s%.3f", sign, x)
	case "fraction":
		return fmt.Sprintf("%s%.3f%%", sign, x*100)
	case "bytes":
		return fmt.Sprintf("%s%.1fMiB", sign, x/(1<<20))
	}
	return fmt.Sprintf("%s%.1f", sign, x)
}

func unitLabel(unit string) string {
	switch unit {
	case "fraction":
		return "%"
	case "bytes":
		return "MiB"
	case "% of one core":
		return "% core"
	}
	return unit
}

func printComparison(w io.Writer, runs []*compare.Run, res *compare.Result) {
	base := runs[0].Name()
	fmt.Fprintf(w, "baseline %s", base)
	for _, s := range res.Seconds {
		if s.Stored > 0 && s.RunID == runs[0].ID {
			fmt.Fprintf(w, " (%d of %d seconds usable)", s.Usable, s.Stored)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\tunit\t%s\trun\tvalue\tΔ\tΔ%%\tverdict\ttest\t\n", base)
	regressions := 0
	for _, m := range res.Metrics {
		bv := m.Values[0].Value
		for _, v := range m.Values[1:] {
			pct := unknown
			if v.DeltaPct != nil {
				pct = fmt.Sprintf("%+.1f%%", *v.DeltaPct)
			}
			test := effectText(m, v, res.Confidence)
			if v.Verdict == compare.NotJudged {
				test = v.Reason // follows the load, or no reliable test
			}
			if v.Verdict == compare.Inconclusive {
				test = strings.TrimSpace(strings.Join([]string{test, cmp.Or(v.DecideHint, v.Reason)}, "; "))
				test = strings.Trim(test, "; ")
			}
			verdict := string(v.Verdict)
			if v.Verdict == compare.Regression {
				verdict = "REGRESSION"
				regressions++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Metric, unitLabel(m.Unit), formatValue(m.Unit, bv, false),
				compareName(runs, v.RunID), formatValue(m.Unit, v.Value, false), formatValue(m.Unit, v.Delta, true), pct, verdict, test)
		}
	}
	_ = tw.Flush()
	for _, wr := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wr.Message)
	}
	if regressions > 0 {
		fmt.Fprintf(w, "\n%d regression(s)\n", regressions)
	} else {
		fmt.Fprintln(w, "\nno regression")
	}
}

// effectText is a value's effect with its confidence interval: relative effects in %, absolute
// ones (the error rate) in percentage points, the interval's bounds too; "" when the metric has
// no test.
func effectText(m compare.Metric, v compare.Value, conf float64) string {
	if v.Effect == nil || v.CILow == nil || v.CIHigh == nil {
		return ""
	}
	unit := "%"
	if m.EffectKind != "relative" {
		unit = " pp"
	}
	return fmt.Sprintf("effect %+.1f%s, %.0f%% CI [%+.1f%s, %+.1f%s]", *v.Effect*100, unit, conf*100, *v.CILow*100, unit, *v.CIHigh*100, unit)
}

func compareName(runs []*compare.Run, id int64) string {
	for _, r := range runs {
		if r.ID == id {
			return r.Name()
		}
	}
	return strconv.FormatInt(id, 10)
}
