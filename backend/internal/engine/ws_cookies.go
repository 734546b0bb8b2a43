package engine

import (
	"net/http"
	"net/url"
	"time"
)

// The cookie jar on a WebSocket step (cookies.go): the handshake carries the VU's cookies for its
// URL, merged with the plan's own Cookie header (the plan wins), and the Set-Cookie fields of the
// answer — the 101, or a refused upgrade's status — go into the jar, as a browser does. wss counts
// as secure (RFC 6265 §5.4: a "secure" protocol). The jar's rules and bounds are cookies.go's.

// wsCookieURL is the jar's view of a handshake URL: host[:port], path ("/" when empty) and
// whether it is wss. ok is false for a URL that does not parse (the dial then reports it).
func wsCookieURL(raw string) (host, path []byte, secure, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, false, false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	return []byte(u.Host), []byte(p), u.Scheme == "wss", true
}

// wsSendCookies sets the handshake's Cookie field (w.header) for this session's URL: the plan's
// Cookie value (rendered into w.header already when templated) and the jar's cookies for the URL.
// A VU without a jar sends the plan's value alone.
func (v *vu) wsSendCookies(w *vuWS, r *vuReq, host, path []byte, secure bool) {
	plan := r.spec.planCookie
	if r.spec.cookieT != nil {
		plan = []byte(w.header.Get("Cookie"))
	}
	j := v.jar
	if j == nil {
		return // w.header holds the plan's own value (wsState, or rendered for this session)
	}
	j.hdr = j.appendHeader(j.hdr[:0], plan, secure, canonicalHost(host), path, time.Now().Unix())
	if len(j.hdr) == 0 {
		delete(w.header, "Cookie")
		return
	}
	w.header["Cookie"] = []string{string(j.hdr)}
}

// wsKeepCookies stores the Set-Cookie fields of a handshake's answer in the VU's jar (made on the
// first cookie); nothing when http.cookies is "off".
func (v *vu) wsKeepCookies(resp *http.Response, host, path []byte) {
	if resp == nil || v.e.noJar || len(resp.Header["Set-Cookie"]) == 0 {
		return
	}
	if v.jar == nil {
		v.jar = &cookieJar{}
	}
	h, now := canonicalHost(host), time.Now().Unix()
	for _, raw := range resp.Header["Set-Cookie"] {
		v.jar.store([]byte(raw), h, path, now)
	}
}
