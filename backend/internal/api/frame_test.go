package api_test

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/api"
)

// No page of Volley may be framed by another page (a hostile page framing the UI under a lure, so
// that the user's click presses Run): every answer — the SPA, the API, the guard's own refusals —
// says so in both headers browsers honour.
func TestNoPageMayFrameVolley(t *testing.T) {
	a := newGuardedApp(t, api.GuardConfig{})
	for _, r := range []hreq{
		{name: "the SPA", method: "GET", path: "/"},
		{name: "a page route", method: "GET", path: "/plans/1"},
		{name: "the API", method: "GET", path: "/api/plans"},
		{name: "an unknown API path", method: "GET", path: "/api/nope"},
		{name: "a forged Host (421)", method: "GET", path: "/", host: "evil.example"},
		{name: "a cross-origin change (403)", method: "POST", path: "/api/plans", ctype: "application/json", body: "{}",
			hdr: map[string]string{"Origin": "http://evil.example"}},
	} {
		res := a.send(t, r)
		if got := res.hdr.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s (%d): X-Frame-Options %q, want DENY", r.name, res.status, got)
		}
		if got := res.hdr.Get("Content-Security-Policy"); got != "frame-ancestors 'none'" {
			t.Errorf("%s (%d): Content-Security-Policy %q, want frame-ancestors 'none'", r.name, res.status, got)
		}
		if got := res.hdr.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s (%d): X-Content-Type-Options %q", r.name, res.status, got)
		}
	}
}
