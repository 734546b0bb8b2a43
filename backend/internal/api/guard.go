package api

import (
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// GuardConfig configures the guard against hostile web pages (docs/api.md, "Security").
type GuardConfig struct {
	// PublicURLs are the URLs under which browsers reach Volley through a proxy or another name,
	// each "scheme://host[:port]" with scheme http or https and no path, e.g.
	// "https://volley.example.com". Their hosts are accepted as Host and their origins as Origin.
	PublicURLs []string
}

// Guard is the first layer of the HTTP handler: it refuses requests whose Host is not one of
// this server's names (DNS rebinding), state changes from another origin (cross-site request
// forgery) or without Content-Type: application/json, and websocket upgrades from another
// origin. It never sends CORS headers. It holds no per-request state and is safe for concurrent
// use.
//
// Accepted Host values (compared case-insensitively; a Host without a port means port 80):
//   - localhost or any loopback address (127.0.0.1, [::1], …) with the port the connection
//     arrived on;
//   - the connection's own local address (the address the client dialled — the bound address, or
//     with 0.0.0.0 / :: the interface address it reached), with that port;
//   - the host[:port] of a configured public URL (without a port when it is the scheme's default).
//
// Accepted Origin values (only checked where an Origin header is present): "http://" + one of
// the first two kinds above, or exactly the origin of a public URL (scheme, host and port).
type Guard struct {
	publicHosts   map[string]bool // accepted Host values, lowercase
	publicOrigins map[string]bool // normalised "scheme://host:port"
}

// NewGuard checks cfg and makes a guard. An invalid public URL is an error naming it.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	g := &Guard{publicHosts: map[string]bool{}, publicOrigins: map[string]bool{}}
	for _, raw := range cfg.PublicURLs {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("public URL %q: %v", raw, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("public URL %q: the scheme must be http or https", raw)
		}
		if u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("public URL %q: want scheme://host[:port] with no user, path, query or fragment", raw)
		}
		origin, ok := normOrigin(u)
		if !ok {
			return nil, fmt.Errorf("public URL %q: bad port", raw)
		}
		g.publicOrigins[origin] = true
		host, port := strings.ToLower(u.Hostname()), u.Port()
		hostport := host
		if strings.Contains(host, ":") {
			hostport = "[" + host + "]"
		}
		if port == "" || port == defaultPort(u.Scheme) {
			g.publicHosts[hostport] = true
			g.publicHosts[hostport+":"+defaultPort(u.Scheme)] = true
		} else {
			g.publicHosts[hostport+":"+port] = true
		}
	}
	return g, nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// normOrigin is "scheme://host:port" with a lowercase host and an explicit port.
func normOrigin(u *url.URL) (string, bool) {
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

// localAddr is the address the request's connection arrived on (invalid when unknown, e.g. a
// handler called without a listener; then ports are not compared).
func localAddr(r *http.Request) netip.AddrPort {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
		}
	}
	return netip.AddrPort{}
}

// directHost reports whether hostport (lowercase, as in a Host header) names this server as
// reached directly: a loopback name or the connection's local address, with its port.
func directHost(hostport string, local netip.AddrPort) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port: the default one of plain HTTP
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), "80"
	}
	if local.IsValid() && port != strconv.Itoa(int(local.Port())) {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || (local.IsValid() && ip == local.Addr())
}

// HostAllowed reports whether the request's Host header names this server.
func (g *Guard) HostAllowed(r *http.Request) bool {
	host := strings.ToLower(r.Host)
	return g.publicHosts[host] || directHost(host, localAddr(r))
}

// CheckOrigin reports whether the request's Origin header is absent or one of this server's own
// origins. Its signature fits websocket.Upgrader.CheckOrigin (hub.New).
func (g *Guard) CheckOrigin(r *http.Request) bool {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return true
	}
	return len(origins) == 1 && g.originAllowed(origins[0], localAddr(r))
}

func (g *Guard) originAllowed(origin string, local netip.AddrPort) bool {
	if origin == "" || origin == "null" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	if o, ok := normOrigin(u); ok && g.publicOrigins[o] {
		return true
	}
	return u.Scheme == "http" && directHost(strings.ToLower(u.Host), local)
}

// safeMethod: methods that change nothing (and that a cross-site link or image may send).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Wrap returns next behind the guard. Checks, in order, each answered with the API's error shape:
//   - every request: Host accepted, else 421 host_not_allowed;
//   - every method but GET, HEAD and OPTIONS, and every request with an Upgrade header (websocket):
//     Sec-Fetch-Site absent, "same-origin" or "none", and Origin absent or accepted, else 403
//     cross_origin;
//   - every method but GET, HEAD and OPTIONS: Content-Type application/json (parameters such as
//     charset allowed), body or not, else 415 unsupported_media_type.
//
// Authentication, when configured, runs inside (after) the guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		frameDeny(w.Header())
		if !g.HostAllowed(r) {
			guardFail(w, r, errf(http.StatusMisdirectedRequest, "host_not_allowed",
				"Host %q is not one of this server's addresses; a proxy or another name needs volley serve --public-url", r.Host))
			return
		}
		changes := !safeMethod(r.Method)
		if changes || r.Header.Get("Upgrade") != "" {
			if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
				guardFail(w, r, errf(http.StatusForbidden, "cross_origin", "cross-origin request refused (Sec-Fetch-Site: %s)", s))
				return
			}
			if !g.CheckOrigin(r) {
				guardFail(w, r, errf(http.StatusForbidden, "cross_origin", "cross-origin request refused (Origin %q is not this server)", r.Header.Get("Origin")))
				return
			}
		}
		if changes {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				guardFail(w, r, errf(http.StatusUnsupportedMediaType, "unsupported_media_type",
					"%s requests need Content-Type: application/json (even without a body)", r.Method))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// frameDeny forbids every page of Volley inside a frame of another page (clickjacking: a hostile
// page framing the UI under a lure, so that the user's click presses Run) — both the old header and
// CSP's frame-ancestors, which browsers prefer — and MIME sniffing, on every answer.
func frameDeny(h http.Header) {
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

// guardFail writes the API's error envelope. The request body is not read; the connection is
// closed after the answer so an unread body cannot be taken for the next request.
func guardFail(w http.ResponseWriter, r *http.Request, e *Error) {
	e.RequestID = requestID(w, r)
	b, _ := json.Marshal(map[string]*Error{"error": e})
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Connection", "close")
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}
