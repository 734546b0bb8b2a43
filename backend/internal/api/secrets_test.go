package api_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

func canary(t *testing.T, tag string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return tag + hex.EncodeToString(b)
}

// leakScan collects everything Volley says (answers, frames, exports, logs) and counts the
// canaries in it.
type leakScan struct {
	t        *testing.T
	canaries []string
	seen     int // texts scanned
	bytes    int
}

func (l *leakScan) check(where string, text []byte) {
	l.t.Helper()
	l.seen++
	l.bytes += len(text)
	for _, c := range l.canaries {
		if n := bytes.Count(text, []byte(c)); n > 0 {
			l.t.Errorf("%s: the canary %s… appears %d times", where, c[:6], n)
		}
	}
}

// The acceptance test for secrets: canaries in an Authorization header, a header marked
// secret and a {{secret.NAME}} value run end to end against a loopback target that checks it
// receives the real values, while every API answer after save, every export format, every live
// websocket frame and the server's log (slog, debug level) carry none of them. Also: the masked
// placeholder sent back keeps the stored value, an unknown secret fails the start naming the
// field, and a request named by default has no query string.
func TestCanarySecretsNeverLeave(t *testing.T) {
	cAuth, cMarked, cStore := canary(t, "AUTH"), canary(t, "MARK"), canary(t, "STORE")
	scan := &leakScan{t: t, canaries: []string{cAuth, cMarked, cStore}}

	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prevDefault := slog.Default()
	slog.SetDefault(log)
	t.Cleanup(func() { slog.SetDefault(prevDefault) })
	s := newStack(t, stackConfig{log: log})
	a, st := s.app, s.st
	raw := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, a.url+path, strings.NewReader(body))
		if method != http.MethodGet {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		scan.check(method+" "+path, b)
		for k, v := range res.Header {
			scan.check(method+" "+path+" header "+k, []byte(strings.Join(v, " ")))
		}
		return res.StatusCode, b
	}

	// The target checks every request carries the real values.
	var good, bad atomic.Int64
	var badMu sync.Mutex
	var badSeen []string
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ok := r.Header.Get("Authorization") == "Bearer "+cAuth && r.Header.Get("X-Api-Key") == cMarked &&
			r.Header.Get("X-Token") == "t-"+cStore
		switch r.URL.Path {
		case "/s/" + cStore:
			ok = ok && r.URL.Query().Get("key") == cStore && string(body) == `{"token":"`+cStore+`"}`
		case "/q":
			ok = ok && r.URL.Query().Get("api_key") == "K"
		default:
			ok = false
		}
		if ok {
			good.Add(1)
		} else {
			bad.Add(1)
			badMu.Lock()
			badSeen = append(badSeen, r.URL.String())
			badMu.Unlock()
		}
	})

	// The secret store: write-only.
	if st, b := raw("PUT", "/api/secrets/TOKEN", `{"value":"`+cStore+`"}`); st != 201 || !bytes.Contains(b, []byte(`"name":"TOKEN"`)) {
		t.Fatalf("put secret: %d %s", st, b)
	}
	if st, _ := raw("PUT", "/api/secrets/TOKEN", `{"value":"`+cStore+`"}`); st != 200 {
		t.Errorf("replace secret: %d", st)
	}
	if st, b := raw("PUT", "/api/secrets/TOKEN", `{"value":"`+cStore+`","extra":"`+cStore+`"}`); st != 400 || !bytes.Contains(b, []byte(`"extra":"unknown field"`)) {
		t.Errorf("bad secret body: %d %s", st, b)
	}
	for _, c := range []struct{ path, body, field string }{
		{"/api/secrets/9bad", `{"value":"x"}`, "name"}, {"/api/secrets/A", `{"value":""}`, "value"},
		{"/api/secrets/A", `{"value":7}`, "value"}, {"/api/secrets/A", `{}`, "value"}, {"/api/secrets/A", `[`, "value"},
		{"/api/secrets/A", `{"value":"` + plan.Masked + `"}`, "value"},
	} {
		if st, b := raw("PUT", c.path, c.body); st != 400 || !bytes.Contains(b, []byte(`"`+c.field+`":`)) {
			t.Errorf("PUT %s %s: %d %s", c.path, c.body, st, b)
		}
	}
	if st, b := raw("GET", "/api/secrets", ""); st != 200 || !bytes.Contains(b, []byte(`"total":1`)) || bytes.Contains(b, []byte("value")) {
		t.Errorf("list secrets: %d %s", st, b)
	}
	if st, _ := raw("DELETE", "/api/secrets/NOPE", ""); st != 404 {
		t.Errorf("delete missing secret: %d", st)
	}

	planBody := fmt.Sprintf(`{"name":"secrets","flow":"sequence","think_time":"20ms",
	  "requests":[
	    {"name":"store","method":"POST","url":"%[1]s/s/{{secret.TOKEN}}?key={{secret.TOKEN}}",
	     "headers":{"Authorization":"Bearer %[2]s","X-Api-Key":"%[3]s","X-Token":"t-{{secret.TOKEN}}"},
	     "secret_headers":["x-api-key"],"body":"{\"token\":\"{{secret.TOKEN}}\"}",
	     "checks":[{"type":"status","op":"eq","value":200},{"type":"body","op":"contains","value":"never there"}]},
	    {"url":"%[1]s/q?api_key=K","headers":{"authorization":"Bearer %[2]s","X-API-KEY":"%[3]s","X-Token":"t-{{secret.TOKEN}}"},
	     "secret_headers":["X-Api-Key"]}],
	  "load":{"executor":"constant-vus","vus":2,"duration":"1s"},"http":{"timeout":"2s"},
	  "thresholds":["p(95)<10s"]}`, tg.URL, cAuth, cMarked)

	// An invalid plan holding the canaries is refused without quoting them.
	if st, _ := raw("POST", "/api/plans", strings.Replace(planBody, `"vus":2`, `"vus":0`, 1)); st != 400 {
		t.Errorf("invalid plan: %d", st)
	}
	st1, b := raw("POST", "/api/plans", planBody)
	if st1 != 201 {
		t.Fatalf("create: %d %s", st1, b)
	}
	var created struct {
		ID   int64           `json:"id"`
		Plan json.RawMessage `json:"plan"`
	}
	_ = json.Unmarshal(b, &created)
	if n := bytes.Count(created.Plan, []byte(plan.Masked)); n != 4 {
		t.Errorf("%d masked values in %s, want 4", n, created.Plan)
	}
	if !bytes.Contains(created.Plan, []byte(`"name":"GET `+tg.URL+`/q"`)) {
		t.Errorf("the default name keeps the query string: %s", created.Plan)
	}
	pid := created.ID
	raw("GET", "/api/plans", "")
	_, shown := raw("GET", fmt.Sprintf("/api/plans/%d", pid), "")

	// The editor's round trip: the plan as shown, renamed, sent back with the placeholders.
	var shownPlan struct {
		Plan map[string]any `json:"plan"`
	}
	_ = json.Unmarshal(shown, &shownPlan)
	shownPlan.Plan["name"] = "secrets, edited"
	edited, _ := json.Marshal(shownPlan.Plan)
	if st, b := raw("PUT", fmt.Sprintf("/api/plans/%d", pid), string(edited)); st != 200 || !bytes.Contains(b, []byte(plan.Masked)) {
		t.Fatalf("update with placeholders: %d %s", st, b)
	}
	// A placeholder with nothing stored to keep is an error naming the field.
	if st, b := raw("POST", "/api/plans", string(edited)); st != 400 || !bytes.Contains(b, []byte(`"requests[0].headers"`)) {
		t.Errorf("create with placeholders: %d %s", st, b)
	}

	// An unknown secret fails the start, naming the field.
	missing := strings.Replace(planBody, `"body":"{\"token\":\"{{secret.TOKEN}}\"}"`, `"body":"{{secret.NOPE}}"`, 1)
	_, b = raw("POST", "/api/plans", missing)
	var mp struct{ ID int64 }
	_ = json.Unmarshal(b, &mp)
	if st, b := raw("POST", fmt.Sprintf("/api/plans/%d/runs", mp.ID), ""); st != 400 ||
		!bytes.Contains(b, []byte(`"requests[0].body"`)) || !bytes.Contains(b, []byte(`NOPE`)) {
		t.Errorf("start with an unknown secret: %d %s", st, b)
	}

	runOnce := func() int64 {
		t.Helper()
		st, b := raw("POST", fmt.Sprintf("/api/plans/%d/runs", pid), "")
		if st != 201 {
			t.Fatalf("start: %d %s", st, b)
		}
		var r struct{ ID int64 }
		_ = json.Unmarshal(b, &r)
		ws := "ws" + strings.TrimPrefix(a.url, "http") + fmt.Sprintf("/api/runs/%d/live", r.ID)
		c, _, err := websocket.DefaultDialer.Dial(ws, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		frames := 0
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
					t.Fatalf("live: %v", err)
				}
				break
			}
			frames++
			scan.check("live frame", msg)
		}
		if frames < 2 {
			t.Errorf("live: %d frames", frames)
		}
		return r.ID
	}
	id1 := runOnce()
	id2 := runOnce()
	if good.Load() == 0 || bad.Load() != 0 {
		t.Fatalf("the target got %d requests with the real values and %d without: %v", good.Load(), bad.Load(), badSeen)
	}

	// Every answer about the plans and runs, every export.
	var detail struct {
		Summary struct {
			ByName map[string]any `json:"by_name"`
		} `json:"summary"`
	}
	for _, id := range []int64{id1, id2} {
		_, b := raw("GET", fmt.Sprintf("/api/runs/%d", id), "")
		if id == id2 {
			_ = json.Unmarshal(b, &detail)
		}
		raw("GET", fmt.Sprintf("/api/runs/%d/samples", id), "")
		raw("GET", fmt.Sprintf("/api/runs/%d/distribution", id), "")
		for _, f := range []string{"json", "csv", "html"} {
			if st, _ := raw("GET", fmt.Sprintf("/api/runs/%d/report?format=%s", id, f), ""); st != 200 {
				t.Errorf("report %s: %d", f, st)
			}
		}
		raw("PATCH", fmt.Sprintf("/api/runs/%d", id), `{"notes":"n"}`)
		raw("POST", fmt.Sprintf("/api/runs/%d/stop", id), "")
	}
	raw("GET", fmt.Sprintf("/api/runs/%d/previous", id2), "")
	raw("GET", "/api/runs", "")
	raw("GET", fmt.Sprintf("/api/plans/%d/trend", pid), "")
	raw("GET", fmt.Sprintf("/api/compare?ids=%d,%d", id1, id2), "")
	raw("GET", "/api/plans", "")
	raw("GET", fmt.Sprintf("/api/plans/%d", pid), "")
	raw("GET", "/api/secrets", "")
	if _, ok := detail.Summary.ByName["GET "+tg.URL+"/q"]; !ok {
		t.Errorf("per-name stats: %v, want a name without the query string", detail.Summary.ByName)
	}
	for name := range detail.Summary.ByName {
		if strings.Contains(name, "api_key") {
			t.Errorf("request name %q carries the query string", name)
		}
	}
	// The database's runs table holds masked snapshots only.
	r, err := st.GetRun(t.Context(), id1)
	if err != nil {
		t.Fatal(err)
	}
	scan.check("stored run snapshot", r.PlanSpec)
	if st, _ := raw("DELETE", "/api/secrets/TOKEN", ""); st != 204 {
		t.Errorf("delete secret: %d", st)
	}
	// Storage failing under writes that carry the canaries: each is a logged 500 whose log line
	// and answer name the error, never the values.
	_ = st.Close()
	for _, c := range []struct{ method, path, body string }{
		{"PUT", fmt.Sprintf("/api/plans/%d", pid), planBody}, {"POST", "/api/plans", planBody},
		{"PUT", "/api/secrets/TOKEN", `{"value":"` + cStore + `"}`}, {"POST", fmt.Sprintf("/api/plans/%d/runs", pid), ""},
	} {
		if st, _ := raw(c.method, c.path, c.body); st != 500 {
			t.Errorf("%s %s on a closed store: %d", c.method, c.path, st)
		}
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n < 4 {
		t.Errorf("the log capture saw %d errors: %q", n, logs.String())
	}
	scan.check("server log", []byte(logs.String()))
	t.Logf("scanned %d texts, %d bytes, %d log bytes; the target got %d requests, all with the real values",
		scan.seen, scan.bytes, len(logs.String()), good.Load())
}
