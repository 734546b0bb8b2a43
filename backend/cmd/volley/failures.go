package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// topFailures is how many failure groups the end-of-run table lists.
const topFailures = 5

// printFailures writes the run's most frequent failure groups (Summary.Failures, most frequent
// first) as rows of the summary table: count, share of the failed requests, request name, error
// kind and message, then how many groups are left out.
func printFailures(w io.Writer, s *metrics.Summary) {
	for i, g := range s.Failures {
		if i == topFailures {
			fmt.Fprintf(w, "\t… %d more groups (volley run --out FILE keeps them all)\n", len(s.Failures)-topFailures)
			break
		}
		label := ""
		if i == 0 {
			label = "top failures"
		}
		share := 0.0
		if s.Errors > 0 {
			share = 100 * float64(g.Count) / float64(s.Errors)
		}
		req, kind := g.Request, g.Kind
		if g.Message == metrics.OtherFailures {
			req, kind = "—", "—"
		}
		fmt.Fprintf(w, "%s\t%d\t(%.1f%%)\t%s\t%s\t%s\n", label, g.Count, share, printable(req), kind, printable(g.Message))
	}
}

// printable replaces control characters (a hostile target's error text could carry terminal
// escapes) and tabs, which would break the table's columns.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}
