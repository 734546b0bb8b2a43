package importer

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestHARGolden(t *testing.T) { impCheckGolden(t, "har", Options{}) }

// TestHARRunsAgainstLoopback replays Chromium's recording of a locally served page: the static
// assets are left out, the login's token and user id are extracted from the live answers and
// sent by the later requests in place of the recorded ones.
func TestHARRunsAgainstLoopback(t *testing.T) {
	res := impFixture(t, "har", "testdata/har/chromium_local_page.har", Options{})
	got := impRun(t, res.Plan, map[string]string{
		"/api/login":            `{"token":"live-token-1","user":{"id":555}}`,
		"/api/users/555/orders": `{"orders":[{"id":"ord-live"}]}`,
	})
	var lines []string
	for _, r := range got {
		lines = append(lines, r.Method+" "+r.Path)
	}
	want := "GET / | GET /api/config | POST /api/login | GET /api/users/555/orders | DELETE /api/orders/ord-live"
	if s := strings.Join(lines, " | "); s != want {
		t.Fatalf("the target received\n %s\nwant\n %s", s, want)
	}
	login := got[2]
	if login.Body != `{"user":"alice","password":"wonderland"}` || login.Header.Get("Content-Type") != "application/json" {
		t.Errorf("login: body %q, content type %q", login.Body, login.Header.Get("Content-Type"))
	}
	if login.Header.Get("Cookie") != "" {
		t.Errorf("recorded cookie replayed: %v", login.Header)
	}
	// the recorded Accept-Encoding comes back from http.compression, not as a header of its own
	if ae := login.Header.Values("Accept-Encoding"); len(ae) != 1 || ae[0] != "gzip, deflate, br, zstd" {
		t.Errorf("Accept-Encoding %q, want the recorded codings once", ae)
	}
	for _, r := range got[3:] {
		if a := r.Header.Get("Authorization"); a != "Bearer live-token-1" {
			t.Errorf("%s %s: Authorization %q, want the extracted token", r.Method, r.Path, a)
		}
	}
}

func TestHARKeepAssets(t *testing.T) {
	res := impFixture(t, "har", "testdata/har/chromium_local_page.har", Options{KeepAssets: true})
	if n := len(res.Plan["requests"].([]any)); n != 9 {
		t.Errorf("%d requests with the assets kept, want 9", n)
	}
}

// TestHARHostile: a 50 MB archive is read within a bounded time, and nesting past impMaxJSONDepth is
// refused as unreadable input before any parser recurses.
func TestHARHostile(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"log":{"version":"1.2","entries":[`)
	body := strings.Repeat("x", 64<<10)
	n := 0
	for i := 0; b.Len() < 50<<20; i++ {
		n++
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"startedDateTime":"2026-11-30T10:00:%02d.000Z","time":1,"request":{"method":"GET","url":"http://a.test/%d","headers":[]},"response":{"content":{"mimeType":"application/json","text":"%s"}}}`, i%60, i, body)
	}
	b.WriteString(`]}}`)
	start := time.Now()
	res, err := Import("har", b.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Plan["requests"].([]any)); got != n {
		t.Errorf("%d requests, want %d", got, n)
	}
	t.Logf("50 MB HAR imported in %v", time.Since(start))

	deep := []byte(`{"log":{"entries":[` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `]}}`)
	_, err = Import("har", deep, Options{})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "nests more than") {
		t.Errorf("deep nesting: %v", err)
	}
	if _, err := Import("har", make([]byte, MaxInput+1), Options{}); !errors.As(err, &ie) {
		t.Errorf("over MaxInput: %v", err)
	}
}
