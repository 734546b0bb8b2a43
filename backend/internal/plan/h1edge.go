package plan

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// Response headers (status line, header fields and the empty line that ends them; a chunked
// body's trailer too) are read up to http.max_header bytes (DefaultMaxHeader when the plan leaves
// it out; MinMaxHeader–MaxMaxHeader); a larger one is error kind header_too_large.
const (
	DefaultMaxHeader = 64 << 10
	MinMaxHeader     = 1 << 10
	MaxMaxHeader     = 1 << 20
)

// MaxHeaderOrDefault is MaxHeader, or DefaultMaxHeader when the plan leaves it out.
func (h HTTP) MaxHeaderOrDefault() int {
	if h.MaxHeader > 0 {
		return h.MaxHeader
	}
	return DefaultMaxHeader
}

// validateH1 checks http.max_header and http.proxy.
func validateH1(p *Plan, v *ValidationError) {
	if m := p.HTTP.MaxHeader; m != 0 && (m < MinMaxHeader || m > MaxMaxHeader) {
		v.add("http.max_header", fmt.Sprintf("must be %d–%d bytes (default %d)", MinMaxHeader, MaxMaxHeader, DefaultMaxHeader))
	}
	if p.HTTP.Proxy != "" {
		if _, err := ProxyAddr(p.HTTP.Proxy); err != nil {
			v.add("http.proxy", err.Error())
		}
		validateProxyUse(p, v)
	}
}

// validateProxyUse refuses http.proxy where the engine cannot send through it: HTTP/2
// connections and WebSocket sessions are dialled straight to the target, so with a proxy they
// would bypass it (load going where the plan does not say).
func validateProxyUse(p *Plan, v *ValidationError) {
	if p.HTTP.H2() {
		v.add("http.proxy", fmt.Sprintf("is not available with http.version %q: HTTP/2 connections do not go through a proxy (use \"1.1\", or leave proxy out)", p.HTTP.Version))
	}
	for i := range p.Requests {
		if p.Requests[i].IsWebSocket() {
			v.add("http.proxy", fmt.Sprintf("is not available with WebSocket steps (requests[%d]): WebSocket sessions do not go through a proxy", i))
			return
		}
	}
}

// ProxyAddr returns the host:port of an http.proxy URL, which must be http://host:port with
// nothing else (no credentials, path, query or fragment). Errors say what is wrong.
func ProxyAddr(proxy string) (string, error) {
	u, err := url.Parse(proxy)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not a proxy URL of the form http://host:port", clip(proxy))
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: only http://host:port (no credentials, path or query)", clip(proxy))
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return "", fmt.Errorf("%q: the proxy URL needs a host and a port (http://host:port)", clip(proxy))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q: port must be 1–65535", clip(proxy))
	}
	return u.Host, nil
}
