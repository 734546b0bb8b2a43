// Package target is Volley's built-in demo target: a small, fast HTTP server on loopback for
// trying Volley without any other server. It serves a static page and a few routes with
// controlled behaviour:
//
//	GET /               a ~600-byte HTML page
//	GET /delay/{ms}     the page after {ms} milliseconds (at most 60000)
//	GET /status/{code}  an empty response with that status (100–599)
//	GET /bytes/{n}      n bytes of body (at most 10 MiB)
//	GET /ws/echo        a WebSocket session answering every message with itself (see [WSMaxMessage])
package target

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Page is the static page served at "/".
var Page = []byte(`<!DOCTYPE html>
<html>
<head>
<title>Volley demo target</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto; font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Volley demo target</h1>
<p>This page is served by <code>volley target</code>, a small built-in HTTP server for trying
Volley without any other server. It listens on loopback only.</p>
<p>Routes: <code>/</code> this page, <code>/delay/250</code> this page after 250 ms,
<code>/status/503</code> an empty 503, <code>/bytes/1024</code> 1 KiB of body,
<code>ws://…/ws/echo</code> a WebSocket echo.</p>
<p><em>Measure correctly, and keep what you measured.</em></p>
</body>
</html>
`)

var filler = bytes.Repeat([]byte("volley "), 1<<20/7+1)

// Bounds of the WebSocket echo at /ws/echo.
const (
	WSMaxMessage  = 64 << 10         // bytes per message; a larger one ends the session (close 1009)
	WSIdleTimeout = 30 * time.Second // a session sending nothing for this long is closed
	WSMaxSessions = 1000             // sessions open at once; an upgrade beyond them is answered 503
)

// wsEcho serves /ws/echo with gorilla/websocket through fasthttpadaptor (which supports the
// hijack). Every open session is closed when ctx ends.
func wsEcho(ctx context.Context) fasthttp.RequestHandler {
	slots := make(chan struct{}, WSMaxSessions)
	up := websocket.Upgrader{HandshakeTimeout: 10 * time.Second}
	return fasthttpadaptor.NewFastHTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			http.Error(w, "too many WebSocket sessions", http.StatusServiceUnavailable)
			return
		}
		c, err := up.Upgrade(w, r, nil) // a refused upgrade is answered by Upgrade
		if err != nil {
			return
		}
		defer c.Close()
		defer context.AfterFunc(ctx, func() { _ = c.Close() })()
		c.SetReadLimit(WSMaxMessage)
		for {
			_ = c.SetReadDeadline(time.Now().Add(WSIdleTimeout))
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			_ = c.SetWriteDeadline(time.Now().Add(WSIdleTimeout))
			if c.WriteMessage(mt, msg) != nil {
				return
			}
		}
	}))
}

// Handler answers the routes above but /ws/echo, which [ServeListener] adds.
func Handler(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	switch {
	case path == "/" || path == "/index.html":
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.SetBody(Page)
	case strings.HasPrefix(path, "/delay/"):
		ms, err := strconv.Atoi(strings.TrimPrefix(path, "/delay/"))
		if err != nil || ms < 0 || ms > 60000 {
			ctx.Error("delay must be 0–60000 ms", fasthttp.StatusBadRequest)
			return
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.SetBody(Page)
	case strings.HasPrefix(path, "/status/"):
		code, err := strconv.Atoi(strings.TrimPrefix(path, "/status/"))
		if err != nil || code < 100 || code > 599 {
			ctx.Error("status must be 100–599", fasthttp.StatusBadRequest)
			return
		}
		ctx.SetStatusCode(code)
	case strings.HasPrefix(path, "/bytes/"):
		n, err := strconv.Atoi(strings.TrimPrefix(path, "/bytes/"))
		if err != nil || n < 0 || n > 10<<20 {
			ctx.Error("bytes must be 0–10485760", fasthttp.StatusBadRequest)
			return
		}
		ctx.SetContentType("application/octet-stream")
		for n > 0 {
			k := min(n, len(filler))
			ctx.Write(filler[:k])
			n -= k
		}
	default:
		ctx.Error("not found", fasthttp.StatusNotFound)
	}
}

// Serve listens on addr (which must be a loopback address) and serves until ctx ends.
func Serve(ctx context.Context, addr string) error {
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	return ServeListener(ctx, ln)
}

// Listen opens a loopback listener; other addresses are refused, since the target exists for
// trying Volley on one machine.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host == "localhost" {
		addr = net.JoinHostPort("127.0.0.1", strings.TrimPrefix(addr, "localhost:"))
	} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, errors.New("the demo target listens on loopback only (127.0.0.1 or [::1])")
	}
	return net.Listen("tcp", addr)
}

// ServeListener serves on ln until ctx ends. If accepting fails for good (fasthttp gives up, for
// example after running out of file descriptors under a huge load), it starts serving again after
// a pause instead of leaving a listener that never accepts.
func ServeListener(ctx context.Context, ln net.Listener) error {
	echo := wsEcho(ctx)
	h := func(c *fasthttp.RequestCtx) {
		if string(c.Path()) == "/ws/echo" {
			echo(c)
			return
		}
		Handler(c)
	}
	for {
		s := &fasthttp.Server{Handler: h, Name: "volley-target", ReadTimeout: time.Minute,
			IdleTimeout: 2 * time.Minute, Logger: quietLogger{}}
		stop := context.AfterFunc(ctx, func() { _ = s.Shutdown() })
		err := s.Serve(ln)
		stop()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, net.ErrClosed) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// quietLogger drops fasthttp's accept-error log lines; the load generator reports the errors.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
