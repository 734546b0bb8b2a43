package localagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// listening is the set of this process's listening TCP sockets (their inodes): the LISTEN rows of
// /proc/net/tcp{,6} whose inode is one of /proc/self/fd's sockets.
func listening(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	own := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			own[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			c := strings.Fields(sc.Text())
			if len(c) > 9 && c[3] == "0A" && own[c[9]] { // st 0A: LISTEN; c[9]: inode
				out = append(out, c[1]+" "+c[9])
			}
		}
		fh.Close()
	}
	slices.Sort(out)
	return out
}

// paths adds the path of every field in v's JSON to set: objects' keys (map keys too: status
// codes, request names), arrays' elements as "[]".
func paths(prefix string, v any, set map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := prefix + "." + k
			set[p] = true
			paths(p, c, set)
		}
	case []any:
		for _, c := range x {
			paths(prefix+"[]", c, set)
		}
	}
}

func jsonPaths(t *testing.T, vs ...any) map[string]bool {
	t.Helper()
	set := map[string]bool{}
	for _, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var x any
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatal(err)
		}
		paths("", x, set)
	}
	return set
}

// populated adds the name of every field of the structs vs that is not its zero value to a set:
// the fields the JSON leaves out too (Sample.Hist, P95SoFarMs, LatencySumUs).
func populated[T any](vs ...T) map[string]bool {
	set := map[string]bool{}
	for _, v := range vs {
		rv := reflect.ValueOf(v)
		for i := range rv.NumField() {
			if !rv.Field(i).IsZero() && !loadDependent[rv.Type().Field(i).Name] {
				set[rv.Type().Field(i).Name] = true
			}
		}
	}
	return set
}

// diff is what a has and b has not, and the other way round.
func diff(a, b map[string]bool) (onlyA, onlyB []string) {
	for k := range a {
		if !b[k] {
			onlyA = append(onlyA, k)
		}
	}
	for k := range b {
		if !a[k] {
			onlyB = append(onlyB, k)
		}
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	return onlyA, onlyB
}

// run is one run's seconds and summary.
type run struct {
	seconds []metrics.Sample
	sum     *metrics.Summary
	sent    int64 // requests the target saw
}

// loadDependent are the fields whose being set depends on how busy the machine is, not on the
// path a run takes: a second the generator could not keep up with.
var loadDependent = map[string]bool{"GeneratorBound": true, "GeneratorBoundSeconds": true}

// both runs c by the engine directly and then through l (run id id) against tg, and compares
// them: each run's requests are the target's, its seconds' sum and its summary's; every field
// (Go fields, so Hist, P95SoFarMs and LatencySumUs too; and every JSON path, map keys included)
// populated in any of the direct run's seconds is populated through the local agent and no
// other, and the same for the summary. It returns both runs. first, if not nil, is called at the
// local run's first second.
func both(t *testing.T, l *Local, id int64, c *plan.Compiled, tg *testutil.Target, first func()) (direct, local run) {
	t.Helper()
	var mu sync.Mutex
	collect := func(r *run) func(metrics.Sample) {
		return func(s metrics.Sample) {
			mu.Lock()
			r.seconds = append(r.seconds, s)
			mu.Unlock()
		}
	}
	ctx := context.Background()
	n0 := tg.Requests()
	eng, err := engine.New(c, engine.Options{OnSample: collect(&direct)})
	if err != nil {
		t.Fatal(err)
	}
	if direct.sum, err = eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	n1 := tg.Requests()
	direct.sent = n1 - n0
	add := collect(&local)
	if local.sum, err = l.Run(ctx, id, c, func(s metrics.Sample) {
		if first != nil {
			first()
			first = nil
		}
		add(s)
	}); err != nil {
		t.Fatal(err)
	}
	local.sent = tg.Requests() - n1

	mu.Lock()
	defer mu.Unlock()
	for name, r := range map[string]run{"direct": direct, "local agent": local} {
		var sum int64
		for _, s := range r.seconds {
			sum += s.Requests
		}
		if r.sent == 0 || r.sum.Requests != r.sent || sum != r.sent {
			t.Errorf("%s: the target saw %d requests, the seconds count %d, the summary %d", name, r.sent, sum, r.sum.Requests)
		}
	}
	if a, b := diff(jsonPaths(t, direct.seconds), jsonPaths(t, local.seconds)); len(a)+len(b) > 0 {
		t.Errorf("seconds' fields only in the direct run: %v; only through the local agent: %v", a, b)
	}
	if a, b := diff(populated(direct.seconds...), populated(local.seconds...)); len(a)+len(b) > 0 {
		t.Errorf("seconds' Go fields only in the direct run: %v; only through the local agent: %v", a, b)
	}
	if a, b := diff(populated(*direct.sum), populated(*local.sum)); len(a)+len(b) > 0 {
		t.Errorf("summary Go fields only in the direct run: %v; only through the local agent: %v", a, b)
	}
	if a, b := diff(jsonPaths(t, direct.sum), jsonPaths(t, local.sum)); len(a)+len(b) > 0 {
		t.Errorf("summary fields only in the direct run: %v; only through the local agent: %v", a, b)
	}
	return direct, local
}

// A single-machine run through the local agent — the embedded broker with no listener, the agent
// in this process — opens no port, and its seconds and summary carry the same fields as the same
// plan run by the engine directly (both), with the same counts, which are the target's. Two plans
// against loopback targets: 2 VUs × 25 iterations of two requests in sequence (one answered 500
// and failing its check; a threshold), exactly 100 requests; and a concurrency sweep (1, 2 VUs,
// 2 s each) with a process monitor of the target's server, whose values every second carries and
// whose sweep rows get the server's columns.
func TestLocalRunIsTheEnginesRun(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusInternalServerError)
		}
		_, _ = io.WriteString(w, "ok")
	})
	began := time.Now()
	mon := testutil.NewTarget(t, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE volley_process_cpu_seconds_total counter\nvolley_process_cpu_seconds_total{process=\"nginx\"} %g\n"+
			"# TYPE volley_process_resident_memory_bytes gauge\nvolley_process_resident_memory_bytes{process=\"nginx\"} 5e+06\n", 0.5*time.Since(began).Seconds())
	})
	checked := compiled(t, fmt.Sprintf(`{"name":"one path","think_time":"50ms","flow":"sequence",
		"requests":[{"name":"ok","url":%q,"checks":[{"type":"status","op":"eq","value":200}]},
		            {"name":"bad","url":%q,"checks":[{"type":"status","op":"eq","value":200}]}],
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":25,"max_duration":"30s"},
		"thresholds":["p(95)<5s"],"http":{"timeout":"5s"}}`, tg.URL+"/ok", tg.URL+"/bad"))
	sweep := compiled(t, fmt.Sprintf(`{"name":"sweep","think_time":"20ms","requests":[{"url":%q}],
		"load":{"executor":"concurrency-sweep","levels":[1,2],"step_duration":"2s"},
		"monitors":[{"type":"process","name":"srv","url":%q}]}`, tg.URL+"/ok", mon.URL+"/metrics"))

	before := listening(t)
	if len(before) != 2 { // the targets': the helper sees this process's listeners
		t.Fatalf("listening before: %v, want the two targets'", before)
	}
	l := startLocal(t)
	var during []string
	direct, local := both(t, l, 1, checked, tg, func() { during = listening(t) })
	for name, r := range map[string]run{"direct": direct, "local agent": local} {
		if r.sent != 100 || r.sum.StatusCodes["200"] != 50 || r.sum.StatusCodes["500"] != 50 {
			t.Errorf("%s: the target saw %d requests (%v), want 100 (50 × 200, 50 × 500)", name, r.sent, r.sum.StatusCodes)
		}
		if len(r.sum.Checks) != 2 || len(r.sum.Failures) != 1 || r.sum.Failures[0].Count != 50 {
			t.Errorf("%s: checks %+v, failures %+v", name, r.sum.Checks, r.sum.Failures)
		}
	}
	if fmt.Sprint(direct.sum.Checks) != fmt.Sprint(local.sum.Checks) {
		t.Errorf("checks: direct %+v, local agent %+v", direct.sum.Checks, local.sum.Checks)
	}

	_, local = both(t, l, 2, sweep, tg, nil)
	if len(local.sum.Sweep) != 2 || local.sum.Sweep[0].ServerCPUPercent == nil || len(local.sum.TargetSeries) != 2 {
		t.Errorf("sweep through the local agent: rows %+v, target series %+v", local.sum.Sweep, local.sum.TargetSeries)
	}

	// Nothing of the ended runs stays in the snapshot stream.
	js, err := l.ctl.Conn.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if si, err := js.StreamInfo(cluster.SnapshotStream); err != nil || si.State.Msgs != 0 {
		t.Errorf("the snapshot stream holds %+v (%v) after the runs", si.State, err)
	}
	if after := listening(t); !slices.Equal(before, after) || !slices.Equal(before, during) {
		t.Errorf("listening sockets: %v before the local agent, %v during its first run, %v at the end", before, during, after)
	}
}

// BenchmarkRunOverhead is what one run costs through the local agent against the engine
// directly (plan: 1 VU, 1 iteration, one loopback request), so that the difference is the local
// agent's fixed cost per run: Prepare, the start, the seconds and the final over the bus, the
// merge and the summary. cpu-ms/op is the process's CPU time per run (user + system, the
// in-process target's included, the same on both paths); ns/op is wall time, which holds the
// local agent's start delay (cluster.InProcessStartDelay, idle). Its allocs/op and B/op are the
// figures to read on a busy machine; cpu-ms/op wants a quiet one.
func BenchmarkRunOverhead(b *testing.B) {
	c := iterations(b, okTarget(b), 1)
	ctx := context.Background()
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		cpu := testutil.ProcessCPU()
		for b.Loop() {
			eng, err := engine.New(c, engine.Options{OnSample: func(metrics.Sample) {}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := eng.Run(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	})
	b.Run("local agent", func(b *testing.B) {
		l := startLocal(b)
		b.ReportAllocs()
		var run int64
		cpu := testutil.ProcessCPU()
		for b.Loop() {
			run++
			if _, err := l.Run(ctx, run, c, func(metrics.Sample) {}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	})
}
