package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/store"
)

// logBuffer is a goroutine-safe io.Writer the server's JSON log goes to.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// records returns the log lines logged with request_id id.
func (l *logBuffer) records(t *testing.T, id string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["request_id"] == id {
			out = append(out, m)
		}
	}
	return out
}

// apiAnswer is one answer: status, X-Request-Id, raw body and its error envelope (if any).
type apiAnswer struct {
	status int
	id     string
	body   []byte
	err    struct {
		Code      string            `json:"code"`
		Message   string            `json:"message"`
		Fields    map[string]string `json:"fields"`
		RequestID string            `json:"request_id"`
	}
}

func call(t *testing.T, req *http.Request) apiAnswer {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	a := apiAnswer{status: res.StatusCode, id: res.Header.Get(api.RequestIDHeader)}
	a.body, _ = io.ReadAll(res.Body)
	if res.StatusCode >= 400 {
		var env struct {
			Error *struct {
				Code      string            `json:"code"`
				Message   string            `json:"message"`
				Fields    map[string]string `json:"fields"`
				RequestID string            `json:"request_id"`
			} `json:"error"`
		}
		if err := json.Unmarshal(a.body, &env); err != nil || env.Error == nil {
			t.Fatalf("%s %s: %d with no error envelope: %q", req.Method, req.URL.Path, res.StatusCode, a.body)
		}
		a.err = *env.Error
	}
	return a
}

// internalText is what a 5xx body must never show: SQL and database driver words, file paths,
// Go error chains.
var internalText = regexp.MustCompile(`(?i)sql|database is closed|\.db\b|/tmp|/work|store:|panic|boom|goroutine`)

// A store failure on any route answers with a fixed message and code plus a request id; the log
// line with that id has the real error; no 5xx body shows internal text.
func TestStoreFailureIsGenericForClientsAndDetailedInTheLog(t *testing.T) {
	logs := &logBuffer{}
	s := newStack(t, stackConfig{
		log: slog.New(slog.NewJSONHandler(logs, nil)),
		handler: func(s *api.Server, st *store.Store) http.Handler {
			r := s.Router()
			r.GET("/api/test-panic", func(c *gin.Context) { panic("boom in /work/secret.go") })
			return s.Guarded(r)
		},
	})
	if code, _ := s.do("POST", "/api/plans", planJSON("http://127.0.0.1:9/", 1, "1s")); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if err := s.st.Close(); err != nil {
		t.Fatal(err)
	}
	routes := []struct{ method, path, body string }{
		{"GET", "/api/plans", ""},
		{"GET", "/api/plans/1", ""},
		{"POST", "/api/plans", planJSON("http://127.0.0.1:9/", 1, "1s")},
		{"PUT", "/api/plans/1", planJSON("http://127.0.0.1:9/", 1, "2s")},
		{"DELETE", "/api/plans/1", ""},
		{"POST", "/api/plans/1/runs", ""},
		{"GET", "/api/plans/1/trend", ""},
		{"GET", "/api/runs", ""},
		{"GET", "/api/runs/1", ""},
		{"GET", "/api/runs/1/samples", ""},
		{"GET", "/api/runs/1/report", ""},
		{"GET", "/api/compare?ids=1,2", ""},
		{"GET", "/api/secrets", ""},
		{"GET", "/api/test-panic", ""},
	}
	for _, r := range routes {
		a := call(t, newReq(r.method, s.url+r.path, r.body))
		name := r.method + " " + r.path
		if a.status < 500 {
			t.Errorf("%s: %d %s, want a 5xx with the store closed", name, a.status, a.body)
			continue
		}
		if a.status != http.StatusInternalServerError || a.err.Code != "internal" ||
			a.err.Message != "internal error; the server log has the details under this request_id" {
			t.Errorf("%s: %d %s %q", name, a.status, a.err.Code, a.err.Message)
		}
		if m := internalText.Find(a.body); m != nil {
			t.Errorf("%s: the body shows internal text %q: %s", name, m, a.body)
		}
		if a.id == "" || a.err.RequestID != a.id {
			t.Errorf("%s: header request id %q, body %q", name, a.id, a.err.RequestID)
		}
		recs := logs.records(t, a.id)
		if len(recs) != 1 {
			t.Errorf("%s: %d log lines with request_id %s", name, len(recs), a.id)
			continue
		}
		want := "database is closed"
		if r.path == "/api/test-panic" {
			want = "boom in /work/secret.go"
		}
		if e, _ := recs[0]["err"].(string); !strings.Contains(e, want) || recs[0]["path"] != strings.Split(r.path, "?")[0] {
			t.Errorf("%s: log line %v lacks the real error %q", name, recs[0], want)
		}
	}
}

// Every answer carries a request id: the caller's when it is short and plain, else a new one;
// error bodies repeat it, and validation errors still name their fields.
func TestEveryAnswerCarriesARequestID(t *testing.T) {
	s := newStack(t, stackConfig{})
	a := s.app
	generated := regexp.MustCompile(`^[0-9a-f]{16}$`)

	// The websocket's 101 too.
	_, p := a.do("POST", "/api/plans", planJSON("http://127.0.0.1:9/", 1, "1s"))
	id := seedRun(t, s.st, int64(p["id"].(float64)), time.Now(), seeded{seconds: 2, rps: 10, medianMs: 1}, 1)
	ws, res, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws%s/api/runs/%d/live", strings.TrimPrefix(a.url, "http"), id), nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
	if !generated.MatchString(res.Header.Get(api.RequestIDHeader)) {
		t.Errorf("websocket upgrade: X-Request-Id %q", res.Header.Get(api.RequestIDHeader))
	}

	ok := call(t, newReq("GET", a.url+"/api/plans", ""))
	if ok.status != 200 || !generated.MatchString(ok.id) {
		t.Errorf("no incoming id: %d, id %q", ok.status, ok.id)
	}
	if again := call(t, newReq("GET", a.url+"/api/plans", "")); again.id == ok.id {
		t.Errorf("two requests share the id %q", ok.id)
	}

	for in, keep := range map[string]bool{
		"client-42.retry:1":     true,
		strings.Repeat("a", 64): true,
		strings.Repeat("a", 65): false,
		"has space":             false,
		"quote\"":               false,
		"tab\there":             false,
		"ünïcode":               false,
	} {
		req := newReq("GET", a.url+"/api/plans/99", "")
		req.Header.Set(api.RequestIDHeader, in)
		got := call(t, req)
		if got.status != 404 || got.err.RequestID != got.id {
			t.Errorf("%q: %d, body id %q, header %q", in, got.status, got.err.RequestID, got.id)
		}
		if keep && got.id != in || !keep && !generated.MatchString(got.id) {
			t.Errorf("incoming %q: answered with %q", in, got.id)
		}
	}

	// The guard's refusals carry it too.
	req := newReq("POST", a.url+"/api/plans", "{}")
	req.Header.Set("Content-Type", "text/plain")
	if g := call(t, req); g.status != http.StatusUnsupportedMediaType || !generated.MatchString(g.id) || g.err.RequestID != g.id {
		t.Errorf("guard refusal: %d id %q body %s", g.status, g.id, g.body)
	}

	// Validation errors keep their field paths for the client.
	v := call(t, newReq("POST", a.url+"/api/plans", `{"name":"","requests":[{"url":"ftp://x"}],"load":{"vus":0,"duration":"1s","vuz":1}}`))
	if v.status != 400 || v.err.Code != "invalid_plan" || v.err.Fields["load.vuz"] != "unknown field" || v.err.RequestID != v.id {
		t.Errorf("validation: %d %+v", v.status, v.err)
	}
}
