package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

func sendPlan(t *testing.T, js string) *plan.Compiled {
	t.Helper()
	c, err := plan.ParseCompiled([]byte(js))
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return c
}

// The second request of a plan, templated with {{vu}}, {{iteration}} and a data column, is sent
// once as VU 1's first iteration: status, headers in order, body, checks and a timing split whose
// wait covers the target's delay.
func TestSendOneAnswersLikeARun(t *testing.T) {
	const delay = 30 * time.Millisecond
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Header().Set("X-Echo", r.URL.RawQuery+" "+r.Header.Get("X-Who"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		fmt.Fprint(w, `{"ok":true}`)
	})
	c := sendPlan(t, `{"name":"t","requests":[{"url":"`+tg.URL+`/first"},
		{"url":"`+tg.URL+`/x?vu={{vu}}&it={{iteration}}","headers":{"X-Who":"{{user}}"},
		 "checks":[{"type":"status","op":"eq","value":201},{"type":"json","path":"ok","op":"eq","value":false}]}],
		"data":{"csv":"user\nann\nbob"},
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":1},"http":{"timeout":"5s"}}`)
	probe := testutil.StartSchedProbe(t)
	res, err := SendOne(context.Background(), c, 1, Options{})
	d := probe.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if tg.Requests() != 1 {
		t.Errorf("target saw %d requests, want 1", tg.Requests())
	}
	if res.Status != 201 || string(res.Body) != `{"ok":true}` || res.BodyBytes != 11 {
		t.Errorf("status %d body %q (%d B)", res.Status, res.Body, res.BodyBytes)
	}
	echo := ""
	for _, h := range res.Headers {
		if h[0] == "X-Echo" {
			echo = h[1]
		}
	}
	if echo != "vu=1&it=0 ann" {
		t.Errorf("X-Echo %q, want vu=1&it=0 ann (headers %v)", echo, res.Headers)
	}
	if len(res.Checks) != 2 || !res.Checks[0].Pass || res.Checks[1].Pass || res.Kind != metrics.CheckFailed {
		t.Errorf("checks %+v kind %v", res.Checks, res.Kind)
	}
	// Wait begins at the clock read after the write returns; the target may already be in its
	// delay when a late-scheduled client reads it, so the lower margin is the measured delay.
	tm := res.Timing
	if tm.Connect <= 0 || tm.TLS != 0 || tm.Wait < delay-min(delay, d.Max) || tm.Receive < 0 || tm.Total < tm.Connect+tm.Wait {
		t.Errorf("timing %+v (scheduling delay %v)", tm, d)
	}
}

// The target policy is the run's: a denied target is blocked_target and nothing connects.
func TestSendOneBlockedTarget(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	pol, err := netpolicy.New(nil, []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := SendOne(context.Background(), sendPlan(t, iterationsPlan(tg.URL+"/", 1, "")), 0, Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != metrics.BlockedTarget || res.Status != 0 || res.Err == "" || tg.Conns() != 0 {
		t.Errorf("kind %v status %d err %q, target saw %d connections", res.Kind, res.Status, res.Err, tg.Conns())
	}
}

func TestSendOneConnectRefused(t *testing.T) {
	res, err := SendOne(context.Background(), sendPlan(t, iterationsPlan("http://"+testutil.ClosedPort(t)+"/", 1, "")), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != metrics.ConnectRefused || res.Status != 0 || !strings.Contains(res.Err, "refused") {
		t.Errorf("kind %v status %d err %q", res.Kind, res.Status, res.Err)
	}
}

// A body longer than the preview is cut to SendBodyPreview, its whole size counted; one over
// http.max_body is body_too_large with its status and headers still shown.
func TestSendOneBodyBounds(t *testing.T) {
	big := strings.Repeat("abcdefgh", 4096) // 32 KiB
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Size", "32768")
		fmt.Fprint(w, big)
	})
	res, err := SendOne(context.Background(), sendPlan(t, iterationsPlan(tg.URL+"/", 1, "")), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != metrics.KindNone || len(res.Body) != SendBodyPreview || res.BodyBytes != int64(len(big)) || string(res.Body) != big[:SendBodyPreview] {
		t.Errorf("kind %v body %d of %d B", res.Kind, len(res.Body), res.BodyBytes)
	}
	res, err = SendOne(context.Background(), sendPlan(t, iterationsPlan(tg.URL+"/", 1, `,"max_body":1024`)), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != metrics.BodyTooLarge || res.Status != 200 || len(res.Body) != 0 || len(res.Headers) == 0 {
		t.Errorf("kind %v status %d body %d B headers %v", res.Kind, res.Status, len(res.Body), res.Headers)
	}
}

// The plan's timeout cuts a request off as a timeout; so does the caller's context.
func TestSendOneTimeout(t *testing.T) {
	tg := stallingTarget(t, nil)
	res, err := SendOne(context.Background(), sendPlan(t, iterationsPlan(tg.URL+"/", 1, "")), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// iterationsPlan's timeout is 2s
	if res.Kind != metrics.Timeout || res.Timing.Total < 2*time.Second {
		t.Errorf("kind %v after %v", res.Kind, res.Timing.Total)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res, err = SendOne(ctx, sendPlan(t, iterationsPlan(tg.URL+"/", 1, "")), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != metrics.Timeout || res.Timing.Total >= 2*time.Second {
		t.Errorf("cancelled: kind %v after %v", res.Kind, res.Timing.Total)
	}
}

func TestSendOneBadIndex(t *testing.T) {
	if _, err := SendOne(context.Background(), sendPlan(t, iterationsPlan("http://127.0.0.1:1/", 1, "")), 1, Options{}); err == nil {
		t.Error("request 1 of a one-request plan: no error")
	}
}

// Over TLS the handshake has its own time, SNI is the URL's host (http.hosts maps the address),
// and an unverifiable certificate is a tls error; a followed redirect is reported as such.
func TestSendOneTLSAndRedirect(t *testing.T) {
	var sni atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni.Store(r.TLS.ServerName)
		if r.URL.Path == "/from" {
			http.Redirect(w, r, "/to", http.StatusFound)
			return
		}
		fmt.Fprint(w, "there")
	}))
	srv.Config.ErrorLog, _ = testutil.ExpectErrors(t, "http: TLS handshake error")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "https://")
	js := func(insecure bool) string {
		return fmt.Sprintf(`{"name":"t","requests":[{"url":"https://secure.example.test/from"}],"load":{"vus":1,"duration":"1s"},
			"http":{"insecure_skip_verify":%v,"follow_redirects":true,"hosts":{"secure.example.test":%q}}}`, insecure, addr)
	}
	res, err := SendOne(context.Background(), sendPlan(t, js(true)), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != metrics.KindNone || res.Status != 200 || string(res.Body) != "there" || !res.Redirected || sni.Load() != "secure.example.test" {
		t.Errorf("insecure: kind %v %q status %d body %q redirected %v SNI %v", res.Kind, res.Err, res.Status, res.Body, res.Redirected, sni.Load())
	}
	if tm := res.Timing; tm.TLS <= 0 || tm.Connect <= 0 || tm.Total < tm.Connect+tm.TLS+tm.Wait {
		t.Errorf("timing %+v", tm)
	}
	res, err = SendOne(context.Background(), sendPlan(t, js(false)), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != metrics.TLS || res.Status != 0 || res.Timing.Wait != 0 {
		t.Errorf("verified: kind %v %q status %d timing %+v", res.Kind, res.Err, res.Status, res.Timing)
	}
}

// A response header larger than a run reads (http.max_header, 64 KiB) is header_too_large, as a run counts it, but
// the answer is not hidden: the status and the header fields that fit are shown, marked as cut,
// and the message says why.
func TestSendOneHugeHeaderShowsWhatFits(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		for i := range 400 {
			w.Header().Set(fmt.Sprintf("X-Pad-%03d", i), strings.Repeat("v", 200)) // 84 KiB in all
		}
		w.WriteHeader(http.StatusAccepted)
	})
	res, err := SendOne(context.Background(), sendPlan(t, iterationsPlan(tg.URL+"/", 1, "")), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != metrics.HeaderTooLarge || res.Status != http.StatusAccepted || !res.HeadersTruncated ||
		len(res.Headers) == 0 || len(res.Headers) >= 400 || !strings.Contains(res.Err, "larger than 65536 bytes") {
		t.Fatalf("kind %v status %d, %d headers (cut %v), message %q", res.Kind, res.Status, len(res.Headers), res.HeadersTruncated, res.Err)
	}
	for _, h := range res.Headers {
		if strings.HasPrefix(h[0], "X-Pad-") && h[1] != strings.Repeat("v", 200) {
			t.Errorf("header %s: %d bytes, want the whole value", h[0], len(h[1]))
		}
	}
}

// A body cut off by the timeout keeps the status and headers already received and names the
// error.
func TestSendOneBodyTimeoutKeepsTheHead(t *testing.T) {
	tg := stallingTarget(t, func(w http.ResponseWriter) {
		w.Header().Set("X-Before", "body")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "part of it")
		w.(http.Flusher).Flush()
	})
	res, err := SendOne(context.Background(), sendPlan(t, iterationsPlan(tg.URL+"/", 1, "")), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var seen bool
	for _, h := range res.Headers {
		seen = seen || (h[0] == "X-Before" && h[1] == "body")
	}
	if res.Kind != metrics.Timeout || res.Status != 200 || !seen || res.HeadersTruncated ||
		!strings.Contains(res.Err, "timeout while reading the body") {
		t.Errorf("kind %v status %d headers %v (cut %v) message %q", res.Kind, res.Status, res.Headers, res.HeadersTruncated, res.Err)
	}
}

// stallingTarget answers each request with begin (nothing when nil), then holds it until the
// client goes away or the test ends.
func stallingTarget(t *testing.T, begin func(http.ResponseWriter)) *testutil.Target {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if begin != nil {
			begin(w)
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
}

// TestNoInventedContentType: a target that sends no Content-Type: Send lists none, and a check
// that Content-Type exists fails, in Send and in a run (fasthttp would report its default).
func TestNoInventedContentType(t *testing.T) {
	tg := testutil.NewRawServer(t, func(*http.Request) testutil.RawAnswer {
		return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nX-Ok: 1\r\nContent-Length: 2\r\n\r\nok")}
	})
	js := `{"name":"t","requests":[{"url":"http://` + tg.Addr + `/",
		"checks":[{"type":"header","name":"Content-Type","op":"exists"}]}],
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":5},"http":{"timeout":"5s"}}`
	res, err := SendOne(context.Background(), sendPlan(t, js), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Headers {
		if strings.EqualFold(h[0], "Content-Type") {
			t.Errorf("Send shows %q, which the target never sent", h)
		}
	}
	if len(res.Headers) == 0 || len(res.Checks) != 1 || res.Checks[0].Pass || res.Kind != metrics.CheckFailed {
		t.Errorf("headers %v checks %+v kind %v, want the check failed", res.Headers, res.Checks, res.Kind)
	}
	sum, _ := run(t, mustPlan(t, js))
	if sum.Requests != 10 || sum.ErrorKinds["check_failed"] != 10 {
		t.Errorf("%d requests, error kinds %v: want 10 check_failed", sum.Requests, sum.ErrorKinds)
	}
}
