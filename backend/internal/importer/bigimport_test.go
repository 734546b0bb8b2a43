package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/plan"
)

// manyHeaders is the reviewer's input: one request with n distinct headers in format's syntax.
func manyHeaders(format string, n int) []byte {
	var s strings.Builder
	switch format {
	case "curl":
		s.WriteString("curl http://127.0.0.1:9/a")
		for i := range n {
			fmt.Fprintf(&s, " -H 'X-H%d: v'", i)
		}
	case "har":
		s.WriteString(`{"log":{"version":"1.2","entries":[{"startedDateTime":"2024-01-01T00:00:00Z","time":1,"request":{"method":"GET","url":"http://127.0.0.1:9/a","headers":[`)
		for i := range n {
			if i > 0 {
				s.WriteByte(',')
			}
			fmt.Fprintf(&s, `{"name":"X-H%d","value":"v"}`, i)
		}
		s.WriteString(`]},"response":{"status":200,"headers":[],"content":{}}}]}}`)
	case "postman":
		s.WriteString(`{"info":{"name":"p","schema":"https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},"item":[{"name":"a","request":{"method":"GET","url":"http://127.0.0.1:9/a","header":[`)
		for i := range n {
			if i > 0 {
				s.WriteByte(',')
			}
			fmt.Fprintf(&s, `{"key":"X-H%d","value":"v"}`, i)
		}
		s.WriteString(`]}}]}`)
	}
	return []byte(s.String())
}

// TestImportManyHeadersCapped: 200 000 headers on one request keep plan.MaxHeaders of them and
// report the rest as ONE skipped entry with their count, allocating a bounded amount per input
// byte (the header scan is capped at plan.MaxHeaders, so the work is linear in the input).
func TestImportManyHeadersCapped(t *testing.T) {
	const n = 200_000
	for _, format := range []string{"curl", "har", "postman"} {
		t.Run(format, func(t *testing.T) {
			data := manyHeaders(format, n)
			var r Result
			var err error
			alloc := allocated(func() { r, err = Import(format, data, Options{}) })
			if err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(r.Plan)
			p, err := plan.Parse(js)
			if err != nil {
				t.Fatalf("plan.Parse: %v", err)
			}
			if len(p.Requests) != 1 || len(p.Requests[0].Headers) != plan.MaxHeaders {
				t.Fatalf("requests = %d, headers = %d; want 1 request of %d headers", len(p.Requests), len(p.Requests[0].Headers), plan.MaxHeaders)
			}
			var caps []Skipped
			for _, s := range r.Skipped {
				if strings.Contains(s.Reason, "left out: a request has at most") {
					caps = append(caps, s)
				}
			}
			want := fmt.Sprintf("%d header(s) left out", n-plan.MaxHeaders)
			if len(caps) != 1 || !strings.HasPrefix(caps[0].Reason, want) {
				t.Errorf("header skips = %+v; want one starting %q", caps, want)
			}
			if len(r.Skipped) > 5 {
				t.Errorf("%d skipped entries; want the cap reported once", len(r.Skipped))
			}
			if limit := uint64(64 * len(data)); alloc > limit {
				t.Errorf("allocated %d bytes for %d bytes of input; at most %d (64 per byte: the race detector's share included) expected", alloc, len(data), limit)
			}
		})
	}
}

// BenchmarkImportManyHeaders measures the reviewer's worst case (200 000 curl -H): linear now,
// some 60 s before the cap.
func BenchmarkImportManyHeaders(b *testing.B) {
	data := manyHeaders("curl", 200_000)
	for b.Loop() {
		if _, err := Import("curl", data, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestImportManyRequestsCapped: the reviewer's 3 000-entry HAR (which hung the browser tab)
// imports plan.MaxRequests requests and reports the rest as ONE skipped entry with their count.
func TestImportManyRequestsCapped(t *testing.T) {
	const n = 3_000
	var s strings.Builder
	s.WriteString(`{"log":{"version":"1.2","entries":[`)
	for i := range n {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `{"startedDateTime":"2024-01-01T00:00:00Z","time":1,"request":{"method":"GET","url":"http://127.0.0.1:9/r%d","headers":[]},"response":{"status":200,"headers":[],"content":{}}}`, i)
	}
	s.WriteString(`]}}`)
	r, err := Import("har", []byte(s.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(r.Plan)
	p, err := plan.Parse(js)
	if err != nil {
		t.Fatalf("plan.Parse: %v", err)
	}
	if len(p.Requests) != plan.MaxRequests {
		t.Errorf("%d requests; want %d", len(p.Requests), plan.MaxRequests)
	}
	want := fmt.Sprintf("%d request(s) left out", n-plan.MaxRequests)
	if len(r.Skipped) != 1 || !strings.HasPrefix(r.Skipped[0].Reason, want) {
		t.Errorf("skipped = %+v; want one entry starting %q", r.Skipped, want)
	}
}

// TestImportStopsWithContext: an import whose Context is done (an API client that went away)
// stops and returns the context's error, whatever the format.
func TestImportStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, format := range []string{"curl", "har", "postman"} {
		if _, err := Import(format, manyHeaders(format, 10), Options{Context: ctx}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", format, err)
		}
		if _, err := Import(format, manyHeaders(format, 10), Options{Context: context.Background()}); err != nil {
			t.Errorf("%s with a live context: %v", format, err)
		}
	}
}
