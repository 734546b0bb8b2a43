package engine

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"
)

// The cookie jar (issue 13, http.cookies): each VU keeps the cookies its responses set, as a
// browser per user does, and sends them back on its later requests. It follows RFC 6265 §5
// (https://www.rfc-editor.org/rfc/rfc6265#section-5): domain matching, with host-only cookies
// for a Set-Cookie without Domain; path matching with the default-path; expiry by Expires or
// Max-Age (which wins), a past date or Max-Age ≤ 0 deleting the cookie; Secure cookies sent over
// https only. HttpOnly is irrelevant to a client without scripts, and SameSite to requests that
// are all first-party; both are ignored, as is a Domain that is a public suffix (no list is kept:
// a target's cookies can only reach the same target, whose Domain attribute must domain-match the
// request's host anyway).
//
// Bounds, as browsers keep them (RFC 6265 §6.1 asks for at least these): a Set-Cookie of more
// than maxCookieBytes bytes is ignored; a domain keeps at most maxDomainCookies cookies and a VU
// at most maxJarCookies, the oldest evicted first (expired ones before). Nothing is allocated for
// what a server merely announces: a cookie costs its own bytes, in a buffer reused when a cookie
// is replaced or evicted.
//
// Costs: a VU has no jar until a response sets a cookie. Until then, the check for Set-Cookie is
// a scan of the cookies fasthttp already parsed with the header (none), and requests go out
// exactly as without a jar — a request pre-serialized once for all VUs (reqSpec.wire) stays so.
// From the first stored cookie on, the VU renders its own copy of each request (once) and sets its
// Cookie header before each send.
//
// The HTTP/2 path calls the same functions on the same fasthttp types (SHAPES13):
// keepCookiesFrom after each response header, setCookieHeader before each send.

const (
	maxCookieBytes   = 4096 // the whole Set-Cookie value: name, value and attributes
	maxDomainCookies = 50
	maxJarCookies    = 3000
)

var slash = []byte{'/'}

// storedCookie is one cookie of a jar (RFC 6265 §5.3's record, less what is ignored).
type storedCookie struct {
	buf                  []byte // name, value, domain and path, one after another
	nameEnd, valEnd, dom int    // buf[:nameEnd] name, [nameEnd:valEnd] value, [valEnd:dom] domain, [dom:] path
	expires              int64  // unix seconds; 0: a session cookie, kept for the whole run
	created              uint64 // the jar's counter when first stored: older cookies sort first
	hostOnly, secure     bool
}

func (c *storedCookie) name() []byte   { return c.buf[:c.nameEnd] }
func (c *storedCookie) value() []byte  { return c.buf[c.nameEnd:c.valEnd] }
func (c *storedCookie) domain() []byte { return c.buf[c.valEnd:c.dom] }
func (c *storedCookie) path() []byte   { return c.buf[c.dom:] }

// cookieJar is one VU's cookies. Only its VU uses it: no lock.
type cookieJar struct {
	list []storedCookie // cap beyond len keeps the buffers of removed cookies for reuse
	seq  uint64
	pick []int32 // scratch: the cookies a request gets, in sending order
	hdr  []byte  // scratch: the Cookie header being built
	tmp  []byte  // scratch: the plan's rendered Cookie header
}

// clear empties the jar (http.cookies "iteration"), keeping its buffers.
func (j *cookieJar) clear() { j.list = j.list[:0] }

// remove drops cookie i; its buffer stays in the slice's spare capacity.
func (j *cookieJar) remove(i int) {
	last := len(j.list) - 1
	j.list[i], j.list[last] = j.list[last], j.list[i]
	j.list = j.list[:last]
}

// setCookie is a Set-Cookie header value parsed in place (RFC 6265 §5.2).
type setCookie struct {
	name, value, domain, path []byte
	maxAge                    int64 // seconds, with hasMaxAge
	hasMaxAge, hasExpires     bool
	expires                   int64 // unix seconds, with hasExpires
	secure                    bool
}

// parseSetCookie parses a Set-Cookie value; ok is false for one the jar ignores (§5.2: no '='
// in the name-value pair, an empty name).
func parseSetCookie(b []byte) (sc setCookie, ok bool) {
	pair, rest, _ := bytes.Cut(b, []byte{';'})
	name, value, found := bytes.Cut(pair, []byte{'='})
	if !found {
		return sc, false
	}
	sc.name, sc.value = trimWS(name), trimWS(value)
	if len(sc.name) == 0 {
		return sc, false
	}
	for len(rest) > 0 {
		var av []byte
		av, rest, _ = bytes.Cut(rest, []byte{';'})
		k, val, _ := bytes.Cut(av, []byte{'='})
		k, val = trimWS(k), trimWS(val)
		switch {
		case bytes.EqualFold(k, []byte("expires")):
			if t, ok := parseCookieDate(val); ok {
				sc.expires, sc.hasExpires = t, true
			}
		case bytes.EqualFold(k, []byte("max-age")):
			if n, ok := parseMaxAge(val); ok {
				sc.maxAge, sc.hasMaxAge = n, true
			}
		case bytes.EqualFold(k, []byte("domain")):
			if len(val) > 0 && val[0] == '.' {
				val = val[1:]
			}
			sc.domain = val // lower-cased as it is stored
		case bytes.EqualFold(k, []byte("path")):
			if len(val) > 0 && val[0] == '/' {
				sc.path = val
			} else {
				sc.path = nil // the default-path
			}
		case bytes.EqualFold(k, []byte("secure")):
			sc.secure = true
		}
	}
	return sc, true
}

// parseMaxAge parses a Max-Age value (§5.2.2): an optional '-' and digits; false otherwise.
func parseMaxAge(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < 1<<40 { // beyond any run; larger values saturate
			n = n*10 + int64(c-'0')
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseCookieDate parses a cookie date by RFC 6265 §5.1.1's algorithm (which reads every form
// servers send: RFC 1123, RFC 850 with two-digit years, asctime, dashes between the parts) and
// returns unix seconds.
func parseCookieDate(b []byte) (int64, bool) {
	var hour, minute, sec, day, month, year int
	var foundTime, foundDay, foundMonth, foundYear bool
	isDelim := func(c byte) bool {
		return c == 0x09 || c >= 0x20 && c <= 0x2f || c >= 0x3b && c <= 0x40 || c >= 0x5b && c <= 0x60 || c >= 0x7b && c <= 0x7e
	}
	for len(b) > 0 {
		for len(b) > 0 && isDelim(b[0]) {
			b = b[1:]
		}
		i := 0
		for i < len(b) && !isDelim(b[i]) {
			i++
		}
		tok := b[:i]
		b = b[i:]
		if len(tok) == 0 {
			continue
		}
		if !foundTime {
			if h, m, s, ok := cookieTime(tok); ok {
				hour, minute, sec, foundTime = h, m, s, true
				continue
			}
		}
		if !foundDay {
			if n, k := leadingDigits(tok, 2); k >= 1 && (k == len(tok) || !isDigit(tok[k])) {
				day, foundDay = n, true
				continue
			}
		}
		if !foundMonth && len(tok) >= 3 {
			if m := monthIndex(tok[:3]); m > 0 {
				month, foundMonth = m, true
				continue
			}
		}
		if !foundYear {
			if n, k := leadingDigits(tok, 4); k >= 2 && (k == len(tok) || !isDigit(tok[k])) {
				year, foundYear = n, true
				continue
			}
		}
	}
	if foundYear && year >= 70 && year <= 99 {
		year += 1900
	} else if foundYear && year <= 69 {
		year += 2000
	}
	if !foundTime || !foundDay || !foundMonth || !foundYear || day < 1 || day > 31 || year < 1601 ||
		hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if t.Day() != day { // 31 February
		return 0, false
	}
	return t.Unix(), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// leadingDigits reads up to max digits at the start of b: their value and how many.
func leadingDigits(b []byte, maxDigits int) (n, k int) {
	for k < len(b) && k < maxDigits && isDigit(b[k]) {
		n = n*10 + int(b[k]-'0')
		k++
	}
	return n, k
}

// cookieTime reads hms-time (§5.1.1): 1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT, then anything but a digit.
func cookieTime(tok []byte) (h, m, s int, ok bool) {
	var vals [3]int
	for i := range vals {
		n, k := leadingDigits(tok, 2)
		if k == 0 {
			return 0, 0, 0, false
		}
		vals[i] = n
		tok = tok[k:]
		if i < 2 {
			if len(tok) == 0 || tok[0] != ':' {
				return 0, 0, 0, false
			}
			tok = tok[1:]
		} else if len(tok) > 0 && isDigit(tok[0]) {
			return 0, 0, 0, false
		}
	}
	return vals[0], vals[1], vals[2], true
}

// monthIndex is 1–12 for a month's three-letter name (any case), else 0.
func monthIndex(b []byte) int {
	const months = "janfebmaraprmayjunjulaugsepoctnovdec"
	for i := 0; i < 12; i++ {
		if bytes.EqualFold(b, []byte(months[3*i:3*i+3])) {
			return i + 1
		}
	}
	return 0
}

func trimWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// canonicalHost is a URL's host[:port] as RFC 6265 compares it: without the port and the IPv6
// brackets. Case is ignored by the comparisons.
func canonicalHost(hostport []byte) []byte {
	if len(hostport) > 0 && hostport[0] == '[' {
		if i := bytes.IndexByte(hostport, ']'); i > 0 {
			return hostport[1:i]
		}
		return hostport
	}
	if i := bytes.LastIndexByte(hostport, ':'); i >= 0 {
		return hostport[:i]
	}
	return hostport
}

// isIP reports whether a canonical host is an IP address (§5.1.3: no suffix match for those).
func isIP(host []byte) bool {
	if bytes.IndexByte(host, ':') >= 0 {
		return true
	}
	for _, c := range host {
		if c != '.' && !isDigit(c) {
			return false
		}
	}
	return len(host) > 0
}

// domainMatch is §5.1.3: host equals domain, or ends with "." + domain and is not an IP.
func domainMatch(host, domain []byte) bool {
	if bytes.EqualFold(host, domain) {
		return true
	}
	n := len(host) - len(domain)
	return n > 1 && host[n-1] == '.' && bytes.EqualFold(host[n:], domain) && !isIP(host)
}

// pathMatch is §5.1.4: the request path equals the cookie path or lies under it.
func pathMatch(reqPath, cookiePath []byte) bool {
	if !bytes.HasPrefix(reqPath, cookiePath) {
		return false
	}
	return len(reqPath) == len(cookiePath) || cookiePath[len(cookiePath)-1] == '/' || reqPath[len(cookiePath)] == '/'
}

// defaultPath is §5.1.4's default-path of a request path: up to its last '/', or "/".
func defaultPath(reqPath []byte) []byte {
	if len(reqPath) == 0 || reqPath[0] != '/' {
		return slash
	}
	i := bytes.LastIndexByte(reqPath, '/')
	if i == 0 {
		return reqPath[:1]
	}
	return reqPath[:i]
}

// store files one Set-Cookie value received for a request to host (canonical) and reqPath, at
// unix time now (§5.3). A cookie the jar must ignore is ignored.
func (j *cookieJar) store(raw, host, reqPath []byte, now int64) {
	if len(raw) > maxCookieBytes {
		return
	}
	sc, ok := parseSetCookie(raw)
	if !ok {
		return
	}
	hostOnly := len(sc.domain) == 0
	domain := sc.domain
	if hostOnly {
		domain = host
	} else if !domainMatch(host, domain) {
		return // a domain the request's host is not in (§5.3 step 6)
	}
	path := sc.path
	if path == nil {
		path = defaultPath(reqPath)
	}
	var expires int64
	switch {
	case sc.hasMaxAge && sc.maxAge <= 0:
		expires = -1
	case sc.hasMaxAge:
		expires = now + sc.maxAge
	case sc.hasExpires:
		expires = sc.expires
		if expires <= now {
			expires = -1
		}
	}
	old := -1
	for i := range j.list {
		c := &j.list[i]
		if bytes.Equal(c.name(), sc.name) && bytes.EqualFold(c.domain(), domain) && bytes.Equal(c.path(), path) {
			old = i
			break
		}
	}
	if expires < 0 { // deletion: Max-Age ≤ 0 or a past date
		if old >= 0 {
			j.remove(old)
		}
		return
	}
	var c *storedCookie
	if old >= 0 {
		c = &j.list[old] // replaced, keeping its creation order (§5.3 step 11)
	} else {
		j.makeRoom(domain, now)
		j.seq++
		if len(j.list) < cap(j.list) {
			j.list = j.list[:len(j.list)+1] // a removed cookie's buffer, reused
		} else {
			j.list = append(j.list, storedCookie{})
		}
		c = &j.list[len(j.list)-1]
		c.created = j.seq
	}
	b := append(c.buf[:0], sc.name...)
	c.nameEnd = len(b)
	b = append(b, sc.value...)
	c.valEnd = len(b)
	for _, ch := range domain {
		if 'A' <= ch && ch <= 'Z' {
			ch |= 0x20
		}
		b = append(b, ch)
	}
	c.dom = len(b)
	c.buf = append(b, path...)
	c.expires, c.hostOnly, c.secure = expires, hostOnly, sc.secure
}

// makeRoom evicts before a new cookie for domain is added: expired cookies first, then the
// domain's oldest when it has maxDomainCookies, then the jar's oldest when it has maxJarCookies.
func (j *cookieJar) makeRoom(domain []byte, now int64) {
	count := 0
	for i := range j.list {
		if bytes.EqualFold(j.list[i].domain(), domain) {
			count++
		}
	}
	if count < maxDomainCookies && len(j.list) < maxJarCookies {
		return
	}
	for i := len(j.list) - 1; i >= 0; i-- {
		if c := &j.list[i]; c.expires > 0 && c.expires <= now {
			if bytes.EqualFold(c.domain(), domain) {
				count--
			}
			j.remove(i)
		}
	}
	if count >= maxDomainCookies {
		j.evictOldest(domain)
	}
	if len(j.list) >= maxJarCookies {
		j.evictOldest(nil)
	}
}

// evictOldest removes the oldest cookie of domain (of any domain when nil).
func (j *cookieJar) evictOldest(domain []byte) {
	at := -1
	for i := range j.list {
		c := &j.list[i]
		if (domain == nil || bytes.EqualFold(c.domain(), domain)) && (at < 0 || c.created < j.list[at].created) {
			at = i
		}
	}
	if at >= 0 {
		j.remove(at)
	}
}

// appendHeader appends the Cookie header value (§5.4) for a request to host (canonical) and
// reqPath over https (secure) or not at unix time now, after the plan's own Cookie value
// (planValue): a jar cookie whose name the plan's value already has is left out, so the plan
// wins. Cookies with longer paths come first, then older ones.
func (j *cookieJar) appendHeader(dst, planValue []byte, secure bool, host, reqPath []byte, now int64) []byte {
	dst = append(dst, planValue...)
	j.pick = j.pick[:0]
	for i := range j.list {
		c := &j.list[i]
		if c.expires > 0 && c.expires <= now || c.secure && !secure || !pathMatch(reqPath, c.path()) {
			continue
		}
		if c.hostOnly && !bytes.EqualFold(host, c.domain()) || !c.hostOnly && !domainMatch(host, c.domain()) {
			continue
		}
		if len(planValue) > 0 && cookieIn(planValue, c.name()) {
			continue
		}
		// insertion into sending order: the lists are short (a request gets a few cookies)
		k := len(j.pick)
		j.pick = append(j.pick, int32(i))
		for k > 0 && j.before(i, int(j.pick[k-1])) {
			j.pick[k] = j.pick[k-1]
			k--
		}
		j.pick[k] = int32(i)
	}
	for _, i := range j.pick {
		c := &j.list[i]
		if len(dst) > 0 {
			dst = append(dst, "; "...)
		}
		dst = append(dst, c.name()...)
		dst = append(dst, '=')
		dst = append(dst, c.value()...)
	}
	return dst
}

// before reports whether cookie a is sent before cookie b (§5.4 step 2).
func (j *cookieJar) before(a, b int) bool {
	ca, cb := &j.list[a], &j.list[b]
	if len(ca.path()) != len(cb.path()) {
		return len(ca.path()) > len(cb.path())
	}
	return ca.created < cb.created
}

// cookieIn reports whether a Cookie header value ("a=1; b=2") has a cookie of this name.
func cookieIn(header, name []byte) bool {
	for len(header) > 0 {
		var pair []byte
		pair, header, _ = bytes.Cut(header, []byte{';'})
		n, _, _ := bytes.Cut(pair, []byte{'='})
		if bytes.Equal(trimWS(n), name) {
			return true
		}
	}
	return false
}

// lookup returns the value of the jar's newest cookie of this name, if any.
func (j *cookieJar) lookup(name []byte) ([]byte, bool) {
	at := -1
	for i := range j.list {
		if bytes.Equal(j.list[i].name(), name) && (at < 0 || j.list[i].created > j.list[at].created) {
			at = i
		}
	}
	if at < 0 {
		return nil, false
	}
	return j.list[at].value(), true
}

// keepCookiesFrom stores the cookies the VU's response (v.resp) sets, for a request to this URL
// host[:port] and path. It does nothing, and allocates nothing, when the plan turned the jar off
// or the response sets no cookie; the VU's jar is made on the first cookie.
func (v *vu) keepCookiesFrom(hostport, reqPath []byte) {
	if v.e.noJar || !hasSetCookie(&v.resp.Header) {
		return
	}
	if v.jar == nil {
		v.jar = &cookieJar{}
	}
	host := canonicalHost(hostport)
	now := time.Now().Unix()
	for _, raw := range v.resp.Header.Cookies() {
		v.jar.store(raw, host, reqPath, now)
	}
}

// hasSetCookie reports whether the response header has a Set-Cookie field.
func hasSetCookie(h *fasthttp.ResponseHeader) bool {
	for range h.Cookies() {
		return true
	}
	return false
}

// keepCookies stores the cookies set by the answer to a plan request (before any redirect).
func (v *vu) keepCookies(r *vuReq) {
	if r.req != nil {
		u := r.req.URI()
		v.keepCookiesFrom(u.Host(), u.PathOriginal())
		return
	}
	v.keepCookiesFrom(r.spec.cookieHost, r.spec.cookiePath)
}

// sendCookies sets the Cookie header of a plan request from the VU's jar, merged with the plan's
// own Cookie header. Before the VU's first cookie it does nothing: the request goes out as
// without a jar. The first time a request of a VU with a jar is sent, the VU takes its own copy
// of it (a pre-serialized request cannot carry per-VU cookies).
func (v *vu) sendCookies(r *vuReq) {
	if v.jar == nil {
		return
	}
	if r.req == nil {
		r.req = r.spec.request(v.e.p.HTTP.KeepAliveOn())
	}
	j := v.jar
	plan := r.spec.planCookie
	if r.spec.cookieT != nil {
		j.tmp = r.spec.cookieT.render(j.tmp[:0], v)
		plan = j.tmp
	}
	v.setCookieHeader(r.req, plan)
}

// setCookieHeader sets req's Cookie header to the plan's value (planValue; nil when a redirect
// to another origin dropped it) and the jar's cookies for req's URL. A VU without a jar leaves
// req as it is.
func (v *vu) setCookieHeader(req *fasthttp.Request, planValue []byte) {
	j := v.jar
	if j == nil {
		return
	}
	u := req.URI()
	secure := bytes.EqualFold(u.Scheme(), []byte("https"))
	j.hdr = j.appendHeader(j.hdr[:0], planValue, secure, canonicalHost(u.Host()), u.PathOriginal(), time.Now().Unix())
	req.Header.DelAllCookies()
	if len(j.hdr) > 0 {
		req.Header.SetBytesV("Cookie", j.hdr)
	}
}

// cookieValue is what a {"from": "cookie"} extraction takes: the cookie of this name that the
// response set, else the one the VU's jar holds.
func (v *vu) cookieValue(name []byte) []byte {
	for _, raw := range v.resp.Header.Cookies() {
		if sc, ok := parseSetCookie(raw); ok && bytes.Equal(sc.name, name) {
			return sc.value
		}
	}
	if v.jar != nil {
		val, _ := v.jar.lookup(name)
		return val
	}
	return nil
}

// sessionSetup prepares a spec for cookies and compression before it is serialized: the
// Accept-Encoding that http.compression asks for, the URL's host and path for the jar (of a
// static URL; a templated one is read from the VU's request), and the plan's Cookie header.
func (s *reqSpec) sessionSetup(acceptEncoding string) {
	s.acceptEncoding = acceptEncoding
	for k := range s.r.Headers {
		if equalFold(k, "Accept-Encoding") {
			s.acceptEncoding = "" // the plan's own wins
		}
	}
	var u fasthttp.URI
	u.DisablePathNormalizing = true
	if u.Parse(nil, []byte(s.r.URL)) == nil {
		s.cookieHost = append([]byte(nil), u.Host()...)
		s.cookiePath = append([]byte(nil), u.PathOriginal()...)
	}
	for k, val := range s.r.Headers {
		if equalFold(k, "Cookie") {
			s.planCookie = []byte(val)
		}
	}
	for _, h := range s.hdrT {
		if equalFold(h.name, "Cookie") {
			s.cookieT = h.t
		}
	}
}
