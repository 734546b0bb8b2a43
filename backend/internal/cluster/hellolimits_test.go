package cluster

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// labelsN is n labels k0=v … k(n-1)=v.
func labelsN(n int) map[string]string {
	l := make(map[string]string, n)
	for i := range n {
		l[fmt.Sprint("k", i)] = "v"
	}
	return l
}

// A hello's labels, host and version have bounds (the labels the same as a run's selection by
// labels, CheckLabels): one past any of them is refused naming the field and the bound, never
// echoing the oversized value; one at every bound is accepted. Each refusal is logged with the
// agent id the hello gave.
func TestHelloLabelsHostVersionBounded(t *testing.T) {
	e := newEnv(t)
	nc, err := e.b.LocalAgent("x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	hello := func(h bus.Hello) bus.HelloReply {
		t.Helper()
		h.ID, h.Protocol, h.Cores, h.Histogram = "x", bus.Protocol, 1, Geometry
		b, _ := json.Marshal(h)
		m, err := nc.Request(bus.SubjectHello, b, 10*time.Second)
		var rep bus.HelloReply
		if err != nil || json.Unmarshal(m.Data, &rep) != nil {
			t.Fatalf("hello: %v", err)
		}
		return rep
	}
	big := strings.Repeat("h", 4<<20)
	for _, tc := range []struct {
		name string
		h    bus.Hello
		want string
	}{
		{"21 labels", bus.Hello{Labels: labelsN(21)}, "labels: 21 labels: at most 20"},
		{"200 000 labels", bus.Hello{Labels: labelsN(200_000)}, "bytes; at most 65536"}, // not decoded
		{"empty key", bus.Hello{Labels: map[string]string{"": "v"}}, "an empty key: a key is 1–63 bytes"},
		{"long key", bus.Hello{Labels: map[string]string{strings.Repeat("k", 64): "v"}}, "is 64 bytes: a key is 1–63 bytes"},
		{"long value", bus.Hello{Labels: map[string]string{"zone": strings.Repeat("v", 254)}}, `label "zone": its value is 254 bytes, at most 253`},
		{"key with a space", bus.Hello{Labels: map[string]string{"my zone": "a"}}, `label key "my zone": a key is letters, digits and . _ / -`},
		{"key ending in -", bus.Hello{Labels: map[string]string{"zone-": "a"}}, `label key "zone-": a key is letters`},
		{"value with a newline", bus.Hello{Labels: map[string]string{"zone": "a\nlevel=ERROR"}}, `label "zone": its value "a\nlevel=ERROR" has a control character or is not UTF-8`},
		{"long host", bus.Hello{Host: strings.Repeat("h", 254)}, "host is 254 bytes, at most 253"},
		{"4 MB host", bus.Hello{Host: big}, "bytes; at most 65536"},
		{"33 KB host", bus.Hello{Host: big[:33<<10]}, fmt.Sprintf("host is %d bytes, at most 253", 33<<10)},
		{"long version", bus.Hello{Version: strings.Repeat("1", 65)}, "version is 65 bytes, at most 64"},
	} {
		logs := &testutil.SyncBuffer{}
		e.reg.LogRefusals(slog.New(slog.NewTextHandler(logs, nil))) // a new rate limit for each
		rep := hello(tc.h)
		undecoded := strings.HasPrefix(rep.Error, "a hello of ")
		if rep.OK || !strings.Contains(rep.Error, tc.want) || !(undecoded || strings.HasPrefix(rep.Error, `agent "x": `)) || len(rep.Error) > 300 {
			t.Errorf("%s: reply %.400q, want a refusal saying %q", tc.name, rep.Error, tc.want)
		}
		// logged under the connection's id, even for a hello too large to be read
		if l := logs.String(); !strings.Contains(l, `msg="agent refused at hello" agent=x reason=`) || !strings.Contains(l, strings.Trim(strconv.Quote(tc.want), `"`)) {
			t.Errorf("%s: logged %.400q", tc.name, l)
		}
	}
	at := map[string]string{strings.Repeat("k", 63): strings.Repeat("v", 253)}
	for i := range 18 {
		at[fmt.Sprint("k", i)] = ""
	}
	at["team.example.com/pool_2"] = "Zürich – rack 7 (a=b, c)"
	if rep := hello(bus.Hello{Labels: at, Host: strings.Repeat("h", 253), Version: strings.Repeat("1", 64)}); !rep.OK {
		t.Fatalf("a hello at every bound refused: %s", rep.Error)
	}
	if err := CheckLabels(at); err != nil {
		t.Fatal(err)
	}
	// (JSON carries no invalid UTF-8: a decoder makes it U+FFFD; a caller in Go may)
	if err := CheckLabels(map[string]string{"zone": "\xff"}); err == nil || !strings.Contains(err.Error(), "is not UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

// A refused hello is logged under the connection's agent id, with the id it claimed (another
// agent's, or not an agent id) clipped to 64 bytes.
func TestRefusedHelloLogsTheClippedID(t *testing.T) {
	e := newEnv(t)
	logs := &testutil.SyncBuffer{}
	e.reg.LogRefusals(slog.New(slog.NewTextHandler(logs, nil)))
	nc, err := e.b.LocalAgent("x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, _ := json.Marshal(bus.Hello{ID: strings.Repeat("y", 30_000), Protocol: bus.Protocol, Cores: 1, Histogram: Geometry})
	if _, err := nc.Request(bus.SubjectHello, b, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(bus.Hello{ID: "z", Protocol: bus.Protocol, Cores: 1, Histogram: Geometry})
	if _, err := nc.Request(bus.SubjectHello, b, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	l := logs.String()
	if !strings.Contains(l, "agent=x claimed_id="+strings.Repeat("y", 64)+"… reason=") || len(l) > 1000 ||
		!strings.Contains(l, `agent=x claimed_id=z reason="\"z\" is not this connection's agent id"`) {
		t.Fatalf("logged %.600q", l)
	}
}

// A presence whose state is neither "idle" nor "running", whose run is negative, or which is idle
// with a run, is ignored: the agent keeps its last state, run and last-seen time (so one sending
// only such beats is gone after the TTL) — never listed as it says.
func TestBadPresenceIgnored(t *testing.T) {
	e := newEnv(t)
	a := e.agent("a", 1, Ready{OK: true})
	b := e.agent("b", 1, Ready{OK: true})
	logs := &testutil.SyncBuffer{}
	e.reg.LogRefusals(slog.New(slog.NewTextHandler(logs, nil)))
	seen, _ := e.reg.Seen("a")
	for _, p := range []bus.Presence{
		{State: "<img src=x onerror=alert(1)>", Run: math.MaxInt64, Cores: 1},
		{State: "Running", Run: 3, Cores: 1},
		{State: "", Cores: 1},
		{State: "running", Run: -1, Cores: 1},
		{State: "idle", Run: math.MaxInt64, Cores: 1},
	} {
		e.clk.Add(time.Millisecond)
		raw, _ := json.Marshal(p)
		if err := a.nc.Publish(bus.PresenceSubject("a"), raw); err != nil {
			t.Fatal(err)
		}
		if err := a.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		// b's beat reaches the registry after a's (a's was at the broker first, one subscription).
		b.beat()
		for _, l := range e.reg.List() {
			if l.ID == "a" && (l.State != "idle" || l.Run != 0) {
				t.Fatalf("presence %+v listed as %+v", p, l)
			}
		}
		if s, _ := e.reg.Seen("a"); !s.Equal(seen) {
			t.Fatalf("presence %+v refreshed the agent (seen %v, was %v)", p, s, seen)
		}
	}
	// each logged (rate-limited with the refusals: five at most in ten seconds), never echoing
	// more than 40 bytes of the state
	if l := logs.String(); strings.Count(l, `msg="ignoring an agent's presence beat" agent=a reason=`) != 5 ||
		!strings.Contains(l, `state \"<img src=x onerror=alert(1)>\" with run 9223372036854775807 is not one of an agent of this protocol`) {
		t.Fatalf("logged %s", l)
	}
	e.clk.Add(time.Millisecond)
	a.beatWith(bus.Presence{State: "running", Run: 7, Cores: 1})
	if l := e.reg.List(); l[0].ID != "a" || l[0].State != "running" || l[0].Run != 7 {
		t.Fatalf("a good running beat listed as %+v", l)
	}
}
