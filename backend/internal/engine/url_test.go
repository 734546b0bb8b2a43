package engine

import (
	"net/http"
	"sync"
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// URLs are sent as browsers send them (RFC 3986, the WHATWG URL standard): existing %-escapes
// byte-exact, non-ASCII percent-encoded as UTF-8, spaces and the other characters a request line
// cannot carry percent-encoded, the fragment left out. The server's own request line is the proof.
func TestURLsSentAsBrowsersSendThem(t *testing.T) {
	cases := []struct{ url, want string }{
		{"/a%2Fb/%7euser?q=%41%zz", "/a%2Fb/%7euser?q=%41%zz"},
		{"/caf\u00e9/\u65e5\u672c?q=\u00fc", "/caf%C3%A9/%E6%97%A5%E6%9C%AC?q=%C3%BC"},
		{"/a b/c?q=x y", "/a%20b/c?q=x%20y"},
		{"/p\"<>`{}|^?q=\"<>`{}", "/p%22%3C%3E%60%7B%7D|^?q=%22%3C%3E`{}"},
		{"/a/./b/../c", "/a/./b/../c"},
		{"/page#section", "/page"},
		{"/q?a='b'&c=d%20e", "/q?a=%27b%27&c=d%20e"},
		{"/{{vu}}/\u00e9 x", "/1/%C3%A9%20x"},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			tg := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
				mu.Lock()
				got = append(got, r.RequestURI)
				mu.Unlock()
				return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")}
			})
			p := mustPlan(t, h1Plan(t, "http://"+tg.Addr+c.url, 1, 2, "", ""))
			sum, _ := run(t, p)
			mu.Lock()
			defer mu.Unlock()
			if sum.Requests != 2 || len(got) != 2 || got[0] != c.want || got[1] != c.want {
				t.Errorf("request line target %q (%d requests, errors %v), want %q", got, sum.Requests, sum.ErrorKinds, c.want)
			}
		})
	}
}
