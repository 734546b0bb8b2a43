package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/volley-load/volley/backend/internal/netpolicy"
)

// An explicit HTTP proxy (http.proxy); the proxy environment variables (HTTP_PROXY, HTTPS_PROXY,
// NO_PROXY and their lower-case forms) are never read: load goes where the plan says, and only
// there (TestProxyEnvironmentIsIgnored).
//
// With http.proxy set, every connection a VU makes goes to the proxy:
//
//   - for an https:// target the VU opens a tunnel (CONNECT host:port, RFC 9110 §9.3.6; a 2xx
//     answer opens it, any other is an error of kind other, "proxy refused CONNECT …", and so is
//     a 2xx followed by bytes before the VU's TLS handshake, which only the target may answer)
//     and makes its TLS handshake with the target through it, SNI and certificate checks as
//     without a proxy. The request's Proxy-Authorization header, if any, goes on the CONNECT
//     and never through the tunnel to the target (proxyAuthSetup);
//   - for an http:// target it sends each request in absolute form (GET http://host:port/path,
//     RFC 9112 §3.2.2) on its keep-alive connection to the proxy, Proxy-Authorization included.
//
// host:port is the address the VU would have dialled (the URL's, or its http.hosts mapping). The
// target policy judges both ends: the proxy's address as any dial (name before resolution, every
// address after), and the target's host — its name or literal, and every address the name
// resolves to here — before the proxy is even dialled; a refusal of either is blocked_target and
// nothing is sent. A proxy that resolves a name differently from this host (DNS rebinding
// between the two lookups) is outside what the generator can see.

// proxyDial connects h to the proxy for its target and, for TLS, opens the tunnel.
func (h *httpConn) proxyDial() (net.Conn, error) {
	v := h.vu
	if err := judgeTarget(v.e.policy, h.addr); err != nil {
		return nil, &dialError{err}
	}
	c, err := v.dial(v.e.proxy)
	if err != nil || h.tls == nil {
		return c, err
	}
	// CONNECT, read through the connection's own reader (its buffer is made here if need be)
	req := "CONNECT " + h.addr + " HTTP/1.1\r\nHost: " + h.addr + "\r\n"
	if auth := v.proxyAuth; len(auth) > 0 {
		if bytes.ContainsAny(auth, "\r\n") {
			_ = c.Close()
			return nil, errors.New("proxy CONNECT: the Proxy-Authorization value holds a line break")
		}
		req += "Proxy-Authorization: " + string(auth) + "\r\n"
	}
	req += "\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		_ = c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 1024)
	var hdr fasthttp.ResponseHeader
	if err := hdr.Read(br); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("proxy CONNECT %s: %w", h.addr, err)
	}
	if hdr.StatusCode()/100 != 2 {
		_ = c.Close()
		return nil, &proxyRefused{addr: h.addr, status: hdr.StatusCode()}
	}
	if n := br.Buffered(); n > 0 {
		// a 2xx to CONNECT has no body (RFC 9110 §9.3.6): these bytes came before the VU's TLS
		// ClientHello, so they are not the target's answer either
		_ = c.Close()
		return nil, fmt.Errorf("proxy CONNECT %s: HTTP %d followed by %d bytes before the TLS handshake (a 2xx to CONNECT has no body)", h.addr, hdr.StatusCode(), n)
	}
	return c, nil
}

// proxyAuthSetup moves an https:// request's Proxy-Authorization header (any case, static or
// templated) out of the request into s.proxyAuth or s.proxyAuthT: it goes on the CONNECT of the
// VU's tunnel (proxyDial) and is never sent through the tunnel to the target. An http://
// request keeps it: its absolute-form requests go to the proxy itself.
func (s *reqSpec) proxyAuthSetup() {
	if !s.tls {
		return
	}
	for k, val := range s.r.Headers {
		if equalFold(k, "Proxy-Authorization") {
			s.r.Headers = maps.Clone(s.r.Headers) // the plan's map stays as it is
			delete(s.r.Headers, k)
			s.proxyAuth = []byte(val)
			break
		}
	}
	s.hdrT = slices.DeleteFunc(s.hdrT, func(h hdrTmpl) bool {
		if equalFold(h.name, "Proxy-Authorization") {
			s.proxyAuth, s.proxyAuthT = nil, h.t
			return true
		}
		return false
	})
}

// proxyRefused is a CONNECT the proxy did not grant (error kind other).
type proxyRefused struct {
	addr   string
	status int
}

func (e *proxyRefused) Error() string {
	return fmt.Sprintf("proxy refused CONNECT %s: HTTP %d", e.addr, e.status)
}

// judgeTarget judges a target reached through the proxy: its host as written, then every address
// its name resolves to here.
func judgeTarget(pol *netpolicy.Policy, addr string) error {
	ctrl, err := pol.DialGuard(addr)
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	var ips []netip.Addr
	if a, ok := netpolicy.Literal(host); ok {
		ips = []netip.Addr{a}
	} else if ips, err = net.DefaultResolver.LookupNetIP(context.Background(), "ip", host); err != nil {
		return err
	}
	for _, a := range ips {
		if err := ctrl("tcp", net.JoinHostPort(a.Unmap().String(), port), nil); err != nil {
			return err
		}
	}
	return nil
}

// absoluteForm returns request (a serialized request, origin form) with its request target in
// absolute form for the proxy: "GET /p HTTP/1.1" → "GET http://host:port/p HTTP/1.1", built in
// the connection's buffer (no allocation once it has grown).
func (h *httpConn) absoluteForm(request []byte) ([]byte, error) {
	sp := -1
	for i, c := range request {
		if c == ' ' {
			sp = i
			break
		}
	}
	if sp < 0 || sp+1 >= len(request) || request[sp+1] != '/' {
		return nil, errors.New("request line not in origin form")
	}
	b := append(h.abs[:0], request[:sp+1]...)
	b = append(b, "http://"...)
	b = append(b, h.addr...)
	b = append(b, request[sp+1:]...)
	h.abs = b
	return b, nil
}

// sliceWriter collects what a bufio.Writer flushes (a proxied request before absoluteForm).
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// writeProxied writes req in absolute form for an http:// target through the proxy.
func (h *httpConn) writeProxied(req *outgoing) error {
	raw := req.wire
	if raw == nil {
		if h.pw == nil {
			h.pw = &sliceWriter{}
			h.pbw = bufio.NewWriterSize(h.pw, h.vu.e.writeBuf)
		}
		h.pw.b = h.pw.b[:0]
		if err := req.req.Write(h.pbw); err != nil {
			return err
		}
		if err := h.pbw.Flush(); err != nil {
			return err
		}
		raw = h.pw.b
	}
	b, err := h.absoluteForm(raw)
	if err != nil {
		return err
	}
	_, err = h.conn.Write(b)
	return err
}
