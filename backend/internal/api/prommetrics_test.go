package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/store"
)

// GET /metrics answers whom the API lets read: anyone on a loopback server without users; with
// users, an API token (Prometheus's authorization: Bearer) or a session, never an anonymous caller.
func TestMetricsAccess(t *testing.T) {
	exposition := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "volley_test_metric 1\n")
	})
	for _, users := range []bool{false, true} {
		var svc *auth.Service
		a := newStack(t, stackConfig{opts: []api.Option{api.WithMetrics(exposition)},
			handler: func(s *api.Server, st *store.Store) http.Handler {
				svc = auth.New(st, auth.Config{Hash: auth.HashParams{MemoryKiB: 64, Time: 1, Threads: 1}})
				if users {
					if _, err := svc.AddUser(t.Context(), "vic", auth.Viewer, vicPW); err != nil {
						t.Fatal(err)
					}
				}
				return s.UseAuth(api.AuthConfig{Service: svc, AllowLocal: true}).Handler()
			}})
		get := func(bearer string) (int, string) {
			req, _ := http.NewRequest("GET", a.url+"/metrics", nil)
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(b)
		}
		if !users {
			if code, body := get(""); code != 200 || body != "volley_test_metric 1\n" {
				t.Fatalf("loopback, no users: %d %q", code, body)
			}
			continue
		}
		if code, body := get(""); code != 401 || !strings.Contains(body, "unauthorized") {
			t.Fatalf("users, anonymous: %d %q, want 401", code, body)
		}
		if code, _ := get("vlt_" + strings.Repeat("A", 43)); code != 401 {
			t.Fatalf("users, unknown token: %d, want 401", code)
		}
		tok, _, err := svc.CreateToken(t.Context(), "vic", "prometheus")
		if err != nil {
			t.Fatal(err)
		}
		if code, body := get(tok); code != 200 || body != "volley_test_metric 1\n" {
			t.Fatalf("users, viewer's token: %d %q", code, body)
		}
	}
}
