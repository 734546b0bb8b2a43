package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/store"
)

// volley serve wires the cluster into the API: with --agents-listen a run over agents reaches the
// registry's Pick (no agent joined: 409 agents_unavailable); without it the answer is 409
// agents_listener_off. Either way no run is created.
func TestServeRunsOverAgentsWiring(t *testing.T) {
	for _, tc := range []struct {
		listen, code string
	}{{"127.0.0.1:0", "agents_unavailable"}, {"", "agents_listener_off"}} {
		opts := defaultServeOpts()
		opts.agentsListen = tc.listen
		db := filepath.Join(t.TempDir(), "volley.db")
		addr := startServe(t, db, opts)
		base := "http://" + addr
		post := func(path, body string) (int, map[string]any) { return jsonCall(t, "POST", base+path, body) }
		st, p := post("/api/plans", `{"name":"p","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"vus":1,"duration":"1s"}}`)
		if st != 201 {
			t.Fatalf("create plan: %d %v", st, p)
		}
		st, m := post(fmt.Sprintf("/api/plans/%v/runs", p["id"]), `{"agents":1}`)
		e, _ := m["error"].(map[string]any)
		if st != 409 || e["code"] != tc.code {
			t.Errorf("--agents-listen %q: %d %v, want 409 %s", tc.listen, st, m, tc.code)
		}
		res, err := http.Get(base + "/api/runs")
		if err != nil {
			t.Fatal(err)
		}
		var l map[string]any
		_ = json.NewDecoder(res.Body).Decode(&l)
		res.Body.Close()
		if l["total"] != 0.0 {
			t.Errorf("--agents-listen %q: %v runs created", tc.listen, l["total"])
		}
	}
}

// At start-up a run over agents left running (its cluster value stored) is taken over only by a
// server that can resume it: with --agents-listen and --agents-state it is still running once the
// server serves (resumed; its agents' snapshots kept in DIR/jetstream), while a local run left
// running is interrupted; with --agents-listen alone both are interrupted and the log says why.
// (The whole restart, with real agents, is backend/e2e's.)
func TestServeTakesOverRunsOverAgents(t *testing.T) {
	for _, withState := range []bool{false, true} {
		dir := t.TempDir()
		db := filepath.Join(dir, "volley.db")
		local, over := leaveRuns(t, db)
		opts := defaultServeOpts()
		logs := &lockedBuffer{}
		opts.log = slog.New(slog.NewTextHandler(logs, nil))
		opts.agentsListen = "127.0.0.1:0"
		if withState {
			opts.agentsState = filepath.Join(dir, "agents")
		}
		base := "http://" + startServe(t, db, opts)
		status := func(id int64) string {
			res, err := http.Get(fmt.Sprintf("%s/api/runs/%d", base, id))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var r map[string]any
			_ = json.NewDecoder(res.Body).Decode(&r)
			return fmt.Sprint(r["status"])
		}
		want := "interrupted"
		if withState {
			want = "running"
		}
		if got := status(over); got != want {
			t.Errorf("--agents-state %v: the run over agents is %s, want %s\n%s", withState, got, want, logs)
		}
		if got := status(local); got != "interrupted" {
			t.Errorf("--agents-state %v: the local run is %s, want interrupted", withState, got)
		}
		if withState {
			if !strings.Contains(logs.String(), "taken over") {
				t.Errorf("no log line of the run taken over:\n%s", logs)
			}
			if _, err := os.Stat(filepath.Join(opts.agentsState, "jetstream")); err != nil {
				t.Errorf("the broker's store: %v", err)
			}
		} else if !strings.Contains(logs.String(), "cannot be taken over") || !strings.Contains(logs.String(), "--agents-state") {
			t.Errorf("the log does not say why the run over agents is interrupted:\n%s", logs)
		}
	}
}

// leaveRuns stores, in a new database db, what a server killed during two runs leaves: a local
// run and a run over agents (its Started stored: one agent, started 3 s ago, a 10-minute plan with
// a 1 ms graceful stop), each "running" with 2 seconds stored.
func leaveRuns(t *testing.T, db string) (local, over int64) {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	p, err := st.CreatePlan(ctx, "p", []byte(`{"name":"p","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"vus":1,"duration":"10m","graceful_stop":"1ms"}}`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ids := make([]int64, 2)
	for i := range ids {
		r, err := st.CreateRun(ctx, p.ID, p.Name, p.Spec, now.Add(-3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for sec := 1; sec <= 2; sec++ {
			tms := now.Add(time.Duration(sec-3) * time.Second).UnixMilli()
			if err := st.AppendSample(ctx, r.ID, store.Sample{Second: sec, TMs: tms, Data: fmt.Appendf(nil, `{"elapsed_s":%d,"t":%d,"requests":10}`, sec, tms)},
				store.Progress{DurationS: float64(sec), Requests: int64(10 * sec)}); err != nil {
				t.Fatal(err)
			}
		}
		ids[i] = r.ID
	}
	started, _ := json.Marshal(cluster.Started{Controller: "previous", Agents: []cluster.StartedAgent{{ID: "gen-a", Weight: 1}},
		StartAtUnixNano: now.Add(-3 * time.Second).UnixNano(), FenceAfterMs: 10_000})
	if err := st.SetRunCluster(ctx, ids[1], started); err != nil {
		t.Fatal(err)
	}
	return ids[0], ids[1]
}

// An --agents-listen that cannot be listened on (port out of range, no port, a host that is no
// name) is a usage error before anything starts (no database); a good one logs the join command
// with the token in VOLLEY_JOIN_TOKEN, never as --token on the command line (the process list).
func TestServeAgentsListen(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:99999", "127.0.0.1", "bad host:4222"} {
		opts := defaultServeOpts()
		opts.agentsListen = bad
		opts.log = slog.New(slog.NewTextHandler(io.Discard, nil))
		db := filepath.Join(t.TempDir(), "volley.db")
		err := serve(context.Background(), "127.0.0.1:0", db, "", adminInit{}, opts)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--agents-listen") {
			t.Errorf("--agents-listen %q: %v, want a usage error naming the flag", bad, err)
		}
		if _, statErr := os.Stat(db); statErr == nil {
			t.Errorf("--agents-listen %q: the database was created before the flags were checked", bad)
		}
	}
	var logs lockedBuffer
	opts := defaultServeOpts()
	opts.agentsListen = "127.0.0.1:0"
	opts.log = slog.New(slog.NewTextHandler(&logs, nil))
	startServe(t, filepath.Join(t.TempDir(), "volley.db"), opts)
	got := logs.String()
	// the real command, to copy: the token itself in VOLLEY_JOIN_TOKEN (once: no token= field too)
	tok := regexp.MustCompile(`join a machine with: VOLLEY_JOIN_TOKEN=(vly1\.[A-Za-z0-9_-]+\.[0-9a-f]{64}) volley agent --nats nats://127\.0\.0\.1:[1-9][0-9]*"`).FindStringSubmatch(got)
	if tok == nil || strings.Count(got, tok[1]) != 1 || strings.Contains(got, "--token") || strings.Contains(got, "TOKEN volley") {
		t.Errorf("start log: %s", got)
	} else if _, err := bus.ParseToken(tok[1]); err != nil {
		t.Errorf("the logged token %q: %v", tok[1], err)
	}
}

// A listener bound to an unspecified address (0.0.0.0, ::) is not dialled there: agents join it by
// this machine's name. agentsCtl.URL says so (the serve log's join command, GET /api/agents/token's
// url and the Agents page's command all come from it), never nats://0.0.0.0:P or nats://[::]:P.
func TestAgentsURLOfAnUnspecifiedBind(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Skip("no host name:", err)
	}
	want := func(t *testing.T, addr string) string {
		t.Helper()
		_, port, err := net.SplitHostPort(addr)
		if err != nil || port == "0" {
			t.Fatalf("listener address %q", addr)
		}
		return "nats://" + net.JoinHostPort(host, port)
	}
	for _, bind := range []string{"0.0.0.0:0", "[::]:0"} {
		ag, err := startAgents(bind, "", nil)
		if err != nil && bind == "[::]:0" {
			t.Logf("no IPv6 here, %s not checked: %v", bind, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, w := ag.URL(), want(t, ag.b.AgentsAddr()); got != w {
			t.Errorf("bound at %s (%s): URL %q, want %q", bind, ag.b.AgentsAddr(), got, w)
		}
		ag.Close()
	}

	// volley serve --agents-listen 0.0.0.0:0: the log's join command and the token's url.
	opts := defaultServeOpts()
	opts.agentsListen = "0.0.0.0:0"
	logs := &lockedBuffer{}
	opts.log = slog.New(slog.NewTextHandler(logs, nil))
	base := "http://" + startServe(t, filepath.Join(t.TempDir(), "volley.db"), opts)
	st, m := jsonCall(t, "GET", base+"/api/agents/token", "")
	url, _ := m["url"].(string)
	if st != 200 || !strings.HasPrefix(url, "nats://") {
		t.Fatalf("GET /api/agents/token: %d %v", st, m)
	}
	if w := want(t, strings.TrimPrefix(url, "nats://")); url != w {
		t.Errorf("GET /api/agents/token url %q, want %q", url, w)
	}
	if l := logs.String(); !strings.Contains(l, "volley agent --nats "+url) || strings.Contains(l, "nats://0.0.0.0") || strings.Contains(l, "nats://[::]") {
		t.Errorf("the serve log's join command is not --nats %s:\n%s", url, l)
	}
}
