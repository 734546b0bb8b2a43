package main

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// `volley run` prints a row per request name with its phases' p95; a name whose every response
// was an error (503) still has its times: "—" is only for a name without any response.
func TestRunPrintsPerRequestRows(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(503)
			return
		}
		time.Sleep(5 * time.Millisecond)
		_, _ = w.Write([]byte("ok"))
	})
	path := writePlan(t, `{"name":"two","flow":"sequence","requests":[
		{"name":"home","url":"`+tg.URL+`/","checks":[{"type":"status","op":"eq","value":200}]},
		{"name":"broken","url":"`+tg.URL+`/bad"}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":4}}`)
	var stdout, stderr bytes.Buffer
	probe := testutil.StartSchedProbe(t)
	_ = runPlan(&stdout, &stderr, path, "", true) // finished with errors: the exit code is another test's
	late := probe.Stop().Max                      // a wait starts at a clock read the scheduler may delay
	rows := map[string][]string{}
	var header []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "request":
			header = f
		case len(f) > 0 && (f[0] == "home" || f[0] == "broken"):
			rows[f[0]] = f
		}
	}
	if !strings.Contains(strings.Join(header, " "), "connect p95 tls p95 wait p95 receive p95") {
		t.Fatalf("no per-request header in:\n%s", stdout.String())
	}
	home, broken := rows["home"], rows["broken"]
	if len(home) != 12 || len(broken) != 12 {
		t.Fatalf("rows %q %q in:\n%s", home, broken, stdout.String())
	}
	// name reqs rps errors p50 p95 p99 checks connect tls wait receive
	if wait, err := strconv.ParseFloat(home[10], 64); err != nil || wait < 5-float64(late)/1e6 || home[1] != "4" || home[3] != "0" || home[7] != "4/0" {
		t.Errorf("home row %q", home)
	}
	if p50, err := strconv.ParseFloat(broken[4], 64); err != nil || p50 <= 0 || broken[1] != "4" || broken[3] != "4" || broken[10] == "—" {
		t.Errorf("broken row %q", broken)
	}
}

// A name that got no response at all (every connection refused) has "—" for its times, never 0.
func TestPrintByNameNoResponse(t *testing.T) {
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	printByName(tw, &metrics.Summary{ByName: map[string]metrics.NameStats{"refused": {Requests: 3, Errors: 3}}})
	_ = tw.Flush()
	var row []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "refused" {
			row = f
		}
	}
	if len(row) != 12 || row[4] != "—" || row[6] != "—" || row[10] != "—" {
		t.Errorf("refused row %q in:\n%s", row, out.String())
	}
}
