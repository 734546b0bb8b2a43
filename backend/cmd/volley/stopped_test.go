package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// A `volley run` interrupted (Ctrl-C) before any request completed is "stopped" with no error, in
// the table and the --report page, as on the server; one that ran to its end without a request
// failed.
func TestRunStoppedBeforeAnyRequest(t *testing.T) {
	p := &plan.Plan{Name: "p"}
	const none = "no successful response: no request was sent"
	for _, c := range []struct {
		interrupted bool
		words       string
		err         bool
	}{{true, "STOPPED", false}, {false, "FAILED", true}} {
		s := &metrics.Summary{}
		var out bytes.Buffer
		printSummaryAs(&out, p, s, runStatus(c.interrupted))
		text := out.String()
		if outcome := firstLine(text, "outcome"); outcome != "outcome "+c.words || strings.Contains(text, none) != c.err {
			t.Errorf("interrupted %v: %q, want outcome %s, error shown %v:\n%s", c.interrupted, outcome, c.words, c.err, text)
		}
		r := reportFile{path: filepath.Join(t.TempDir(), "r.html")}
		if err := r.write(p, s, c.interrupted); err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(r.path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(page), none) != c.err {
			t.Errorf("interrupted %v: report shows %q: %v, want %v", c.interrupted, none, !c.err, c.err)
		}
	}
}

// firstLine is the first line of text starting with prefix, its fields joined by one space.
func firstLine(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return ""
}
