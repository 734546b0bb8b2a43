// Package netpolicy is Volley's target policy (its guard against server-side request forgery):
// which addresses and host names a run may connect to. The server's administrator sets it (flags
// --allow-target and --deny-target); plans never do. It is checked twice:
//
//   - at validation, on what a plan spells literally (request URL hosts, http.hosts override
//     values): CheckHost, with a clear message naming the field (plan.CheckTargets);
//   - at every connect, after name resolution: Guard gives a net.Dialer Control hook that judges
//     the very IP address the socket is about to connect to, so redirects, hosts overrides,
//     happy-eyeballs fallbacks and DNS rebinding between a check and the connect are all covered.
//
// # Decision order
//
// An address is judged with every form it carries: an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
// is its IPv4 address, and IPv6 addresses that embed an IPv4 address (IPv4-compatible ::a.b.c.d,
// IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32 server and client) are
// judged by the embedded address too. Then, first match wins:
//
//  1. an explicit deny rule matches any form → denied;
//  2. an explicit allow rule matches any form → allowed;
//  3. a built-in rule (Builtin: unspecified, link-local, cloud metadata, multicast, broadcast)
//     matches any form → denied;
//  4. the host name was explicitly allowed by a pattern → allowed;
//  5. the deny list holds "*" (allow-list mode) → denied; otherwise → allowed.
//
// Host names are judged by the same order before resolving (deny pattern, allow pattern,
// built-in names); a name that passes is then judged again by the address it resolves to.
// Loopback and private ranges (127.0.0.0/8, ::1, 10/8, 172.16/12, 192.168/16, fc00::/7) are
// allowed by default: load tests of internal services are the normal use, and the demo target
// listens on loopback. An administrator denies them with --deny-target.
//
// # Host spellings
//
// CheckHost and Guard judge numeric host spellings by their value, as a C resolver (inet_aton)
// reads them: decimal 2852039166, hex 0xA9FEA9FE, octal 0251.0376.0251.0376, short forms
// 169.254.43518 and 0xA9.0376.43518, with a trailing dot, in upper case, bracketed, with an IPv6
// zone (fe80::1%eth0) or percent-encoded. Judging by value rather than refusing such spellings
// keeps legitimate plans working (http://2130706433/ is 127.0.0.1) while no spelling of a denied
// address passes; and whatever a spelling resolves to, the dial-time check sees the real address.
//
// The package uses the standard library and golang.org/x/net/idna only, so the engine, the API, remote agents and monitors
// can all import it.
package netpolicy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
	"syscall"
)

// Rule is one entry of a policy: a CIDR prefix (a single IP is a /32 or /128), a host name, a
// host pattern "*.suffix" (any name ending in ".suffix", not the suffix itself), or "*" (in the
// deny list only: everything not explicitly allowed).
type Rule struct {
	// Target is the rule as written, normalized ("169.254.0.0/16", "*.internal", "*").
	Target string `json:"target"`
	// Reason says why a built-in rule denies ("link-local", "cloud metadata", …); empty for
	// rules given by the administrator.
	Reason string `json:"reason,omitempty"`

	prefix netip.Prefix // valid for address rules
	name   string       // host name, or the suffix (with its leading dot) of a "*." pattern
	suffix bool
	all    bool // "*"
}

// ParseRule parses one --allow-target / --deny-target value: a CIDR ("10.0.0.0/8",
// "fd00::/8"), an IP address ("169.254.169.254", "::1"), a host name ("db.example.com") or a
// pattern ("*.internal"); "*" means every target. Names are case-insensitive; a trailing dot is
// ignored.
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Rule{}, errors.New("empty target")
	case s == "*":
		return Rule{Target: "*", all: true}, nil
	}
	if p, err := netip.ParsePrefix(strings.Trim(s, "[]")); err == nil {
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		p = p.Masked()
		return Rule{Target: p.String(), prefix: p}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		a = a.WithZone("").Unmap()
		p := netip.PrefixFrom(a, a.BitLen())
		return Rule{Target: a.String(), prefix: p}, nil
	}
	if strings.Contains(s, "/") {
		return Rule{}, fmt.Errorf("%q is not a valid CIDR (e.g. 10.0.0.0/8 or fd00::/8)", s)
	}
	name := strings.TrimSuffix(strings.ToLower(s), ".")
	suffix := false
	if strings.HasPrefix(name, "*.") {
		name, suffix = name[1:], true // ".internal"
	}
	if !validName(strings.TrimPrefix(name, ".")) {
		return Rule{}, fmt.Errorf("%q is not a CIDR, an IP address, a host name or a pattern such as *.internal", s)
	}
	if _, ok := Literal(name); ok && !suffix {
		return Rule{}, fmt.Errorf("%q is a numeric address in a non-canonical spelling; write it as a dotted IP or CIDR", s)
	}
	t := name
	if suffix {
		t = "*" + name
	}
	return Rule{Target: t, name: name, suffix: suffix}, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func (r *Rule) matchAddr(a netip.Addr) bool {
	return r.all || r.prefix.IsValid() && r.prefix.Contains(a)
}

func (r *Rule) matchName(n string) bool {
	switch {
	case r.all:
		return true
	case r.name == "":
		return false
	case r.suffix:
		return strings.HasSuffix(n, r.name)
	}
	return n == r.name
}

// builtin is the default deny list. Each entry is justified where it is written; the IP rules
// are what protects (names can be re-pointed), the names give early, clear validation errors.
var builtin = []struct{ target, reason string }{
	// "This network": connect(2) to 0.0.0.0 reaches the local host on Linux, bypassing a
	// loopback deny; nothing legitimate is addressed there.
	{"0.0.0.0/8", "unspecified"},
	{"::/128", "unspecified"}, // same for IPv6 (connects to ::1 on Linux)
	// Link-local: never routed, holds the metadata services of AWS, GCP, Azure, Oracle,
	// DigitalOcean, OpenStack, Hetzner (169.254.169.254), AWS ECS task credentials
	// (169.254.170.2), EKS Pod Identity (169.254.170.23), Scaleway (169.254.42.42), Tencent
	// (169.254.0.23), and routers' configuration pages.
	{"169.254.0.0/16", "link-local"},
	{"fe80::/10", "link-local"},
	{"169.254.169.254/32", "cloud metadata"}, // named as such too, for a clearer message
	// Cloud metadata outside link-local: an HTTP load test never targets these.
	{"fd00:ec2::254/128", "cloud metadata"},      // AWS instance metadata over IPv6 (Nitro)
	{"fd00:ec2::23/128", "cloud metadata"},       // AWS EKS Pod Identity Agent over IPv6
	{"fd20:ce::254/128", "cloud metadata"},       // Google Cloud metadata server over IPv6
	{"fd00:c1::a9fe:a9fe/128", "cloud metadata"}, // Oracle Cloud (OCI) metadata over IPv6
	{"fd00:42::42/128", "cloud metadata"},        // Scaleway metadata over IPv6
	{"100.100.100.200/32", "cloud metadata"},     // Alibaba Cloud metadata (in 100.64/10 CGNAT space)
	{"192.0.0.192/32", "cloud metadata"},         // Oracle Cloud Classic metadata
	// Azure's WireServer / host virtual IP: VM agent channel, extension settings and
	// certificates, DNS and DHCP; a public address Microsoft owns, the same in every region.
	{"168.63.129.16/32", "cloud metadata"},
	{"224.0.0.0/4", "multicast"},
	{"ff00::/8", "multicast"},
	{"255.255.255.255/32", "broadcast"},
	// Names of metadata services (they resolve to the addresses above inside the cloud).
	{"metadata.google.internal", "cloud metadata"}, // Google Cloud
	{"metadata.goog", "cloud metadata"},            // Google Cloud (newer name)
	{"metadata", "cloud metadata"},                 // Google Cloud short name (search domain google.internal)
	{"instance-data", "cloud metadata"},            // AWS EC2 (search domain ec2.internal)
	{"instance-data.ec2.internal", "cloud metadata"},
	{"metadata.tencentyun.com", "cloud metadata"}, // Tencent Cloud
}

// Builtin returns the built-in deny rules, in the order Policy applies them.
func Builtin() []Rule {
	out := make([]Rule, len(builtin))
	for i, b := range builtin {
		r, err := ParseRule(b.target)
		if err != nil {
			panic("netpolicy: bad built-in rule " + b.target)
		}
		r.Reason = b.reason
		out[i] = r
	}
	return out
}

// Policy decides which targets runs may connect to. Build it with New; the zero value and nil
// are not valid (use Default). A Policy is immutable and safe for concurrent use.
type Policy struct {
	allow, deny []Rule
	denyAll     bool
	builtin     []Rule
}

// New builds a policy from the administrator's allow and deny lists (see ParseRule for the
// forms). It returns an error naming the first value that is not a rule.
func New(allow, deny []string) (*Policy, error) {
	p := &Policy{builtin: Builtin()}
	for _, s := range allow {
		r, err := ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("allow target: %w", err)
		}
		if r.all {
			return nil, errors.New(`allow target: "*" would allow everything, the built-in denials included; list what to allow instead`)
		}
		p.allow = append(p.allow, r)
	}
	for _, s := range deny {
		r, err := ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("deny target: %w", err)
		}
		if r.all {
			p.denyAll = true
			continue
		}
		p.deny = append(p.deny, r)
	}
	return p, nil
}

// Default is the policy with no administrator rules: the built-in denials only.
func Default() *Policy {
	p, _ := New(nil, nil)
	return p
}

// Summary is a policy as the settings API shows it.
type Summary struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
	// DenyAll: the deny list holds "*": only explicitly allowed targets may be reached.
	DenyAll bool   `json:"deny_all"`
	Builtin []Rule `json:"builtin_deny"`
	Order   string `json:"order"`
}

// Order describes the decision order (Summary.Order).
const Order = `explicit deny > explicit allow > built-in deny > allowed host name > ("*" denied ? deny : allow)`

// Summary returns the policy's rules.
func (p *Policy) Summary() Summary {
	s := Summary{Allow: []string{}, Deny: []string{}, DenyAll: p.denyAll, Builtin: slices.Clone(p.builtin), Order: Order}
	for _, r := range p.allow {
		s.Allow = append(s.Allow, r.Target)
	}
	for _, r := range p.deny {
		s.Deny = append(s.Deny, r.Target)
	}
	if p.denyAll {
		s.Deny = append(s.Deny, "*")
	}
	return s
}

// Denied is the error of a target the policy refuses (the engine's error kind blocked_target).
type Denied struct {
	Target string // the host as written or dialled ("169.254.169.254", "0xA9FEA9FE", "meta.test")
	Addr   string // the address it denotes or resolved to, when it differs from Target
	Reason string // "link-local / cloud metadata", "denied by rule 10.0.0.0/8", …
}

func (d *Denied) Error() string {
	t := d.Target
	if d.Addr != "" && d.Addr != d.Target {
		t += " (" + d.Addr + ")"
	}
	return t + " is denied by the server's target policy (" + d.Reason + ")"
}

// CheckHost judges a host as a plan spells it (a URL host or an http.hosts value, with or
// without port and brackets). A numeric host in any spelling (see the package doc) is judged by
// the address it denotes; a name by the deny, allow and built-in patterns only (what it resolves
// to is judged when connecting). It returns nil or a *Denied.
func (p *Policy) CheckHost(host string) error {
	_, err := p.judgeHost(stripPort(host))
	return err
}

// judgeHost judges a host without port: the error is a *Denied; allowed reports an explicit
// allow by name (decision step 4).
func (p *Policy) judgeHost(host string) (allowed bool, err error) {
	canon, bad := canonicalHost(host)
	if bad != "" {
		return false, &Denied{Target: host, Reason: bad}
	}
	if canon != host {
		// The name a resolver would look up (IDNA-mapped: full-width digits, ideographic full
		// stops, …) is judged, and named in the answer beside what the plan wrote.
		allowed, err := p.judgeHost(canon)
		if d, ok := err.(*Denied); ok {
			d.Target = host
		}
		return allowed, err
	}
	if a, ok := Literal(host); ok {
		if reason := p.judgeAddr(a, false); reason != "" {
			return false, &Denied{Target: host, Addr: a.String(), Reason: reason}
		}
		return false, nil
	}
	n := normName(host)
	for i := range p.deny {
		if p.deny[i].matchName(n) {
			return false, &Denied{Target: host, Reason: "denied by rule " + p.deny[i].Target}
		}
	}
	for i := range p.allow {
		if p.allow[i].matchName(n) {
			return true, nil
		}
	}
	for i := range p.builtin {
		if p.builtin[i].matchName(n) {
			return false, &Denied{Target: host, Reason: p.builtin[i].Reason}
		}
	}
	return false, nil
}

// AllowedByRule reports whether host (as CheckHost takes it: a URL host or http.hosts value,
// with or without port and brackets, in any spelling the package doc lists) is matched by one of
// the policy's allow rules: a numeric host by a CIDR or IP rule (any of its forms), a name by a
// name or "*.suffix" rule. Built-in and deny rules play no part: it answers "did the
// administrator list this host?", e.g. for an agent's own --allow-target list.
func (p *Policy) AllowedByRule(host string) bool {
	canon, bad := canonicalHost(stripPort(host))
	if bad != "" {
		return false
	}
	if a, ok := Literal(canon); ok {
		forms := Forms(a)
		for i := range p.allow {
			for _, f := range forms {
				if p.allow[i].matchAddr(f) {
					return true
				}
			}
		}
		return false
	}
	n := normName(canon)
	for i := range p.allow {
		if p.allow[i].matchName(n) {
			return true
		}
	}
	return false
}

// CheckAddr judges one IP address (decision order in the package doc). It returns nil or a
// *Denied.
func (p *Policy) CheckAddr(a netip.Addr) error {
	if reason := p.judgeAddr(a, false); reason != "" {
		return &Denied{Target: a.String(), Reason: reason}
	}
	return nil
}

// judgeAddr returns why a is denied, or "".
func (p *Policy) judgeAddr(a netip.Addr, nameAllowed bool) string {
	forms := Forms(a)
	for i := range p.deny {
		for _, f := range forms {
			if p.deny[i].matchAddr(f) {
				return "denied by rule " + p.deny[i].Target
			}
		}
	}
	for i := range p.allow {
		for _, f := range forms {
			if p.allow[i].matchAddr(f) {
				return ""
			}
		}
	}
	var reasons []string
	for i := range p.builtin {
		r := &p.builtin[i]
		for _, f := range forms {
			if r.matchAddr(f) && !contains(reasons, r.Reason) {
				reasons = append(reasons, r.Reason)
			}
		}
	}
	if len(reasons) > 0 {
		return strings.Join(reasons, " / ")
	}
	if p.denyAll && !nameAllowed {
		return "not in the allow list"
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Control is the type of net.Dialer.Control.
type Control = func(network, address string, c syscall.RawConn) error

// Guard prepares a dial to host (a name or literal, without port, as it is about to be dialled:
// before resolution). It returns the *Denied error if the host itself is denied; otherwise a
// Control hook for net.Dialer that judges each address the dialer is about to connect to (after
// resolution, for every address it tries) and refuses a denied one with a *Denied before any
// packet is sent. It costs a few small allocations per connect, none per request.
func (p *Policy) Guard(host string) (Control, error) {
	nameAllowed, err := p.judgeHost(host)
	if err != nil {
		return nil, err
	}
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &Denied{Target: host, Addr: address, Reason: "not an IP address"}
		}
		if reason := p.judgeAddr(ap.Addr(), nameAllowed); reason != "" {
			return &Denied{Target: host, Addr: ap.Addr().WithZone("").Unmap().String(), Reason: reason}
		}
		return nil
	}, nil
}

// DialGuard is Guard for a "host:port" dial address.
func (p *Policy) DialGuard(addr string) (Control, error) { return p.Guard(stripPort(addr)) }

// stripPort removes a port and brackets: "[::1]:80" → "::1", "a.test:80" → "a.test"; a host
// without port is returned as is (an IPv6 literal keeps its colons).
func stripPort(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// canonicalHost returns the host a resolver would be given for a plan's host spelling — lower
// case, percent-escapes decoded, Unicode mapped to ASCII as browsers and resolvers do (IDNA
// UTS #46: "１６９。２５４。１６９。２５４" is 169.254.169.254), one trailing dot dropped — or, for a spelling no
// resolver takes as a host (empty labels such as "metadata.google.internal..", a numeric host that
// is no IPv4 address such as 4294967296 or 0xA9FEA9FE00, invalid characters), a reason to refuse it.
// Numeric and IPv6 spellings Literal reads are returned as they are.
func canonicalHost(host string) (string, string) {
	if _, ok := Literal(host); ok {
		return host, ""
	}
	h := host
	if strings.Contains(h, "%") {
		u, err := url.PathUnescape(h)
		if err != nil {
			return "", "not a valid host name (bad percent-encoding)"
		}
		h = u
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return "", "not a valid host name (an empty label)"
	}
	ascii, err := idna.Lookup.ToASCII(h)
	if err != nil || ascii == "" {
		return "", "not a valid host name"
	}
	if a, ok := Literal(ascii); ok {
		return a.String(), ""
	}
	if numericLabels(ascii) {
		return "", "a numeric host that is no IPv4 address"
	}
	if ascii != strings.TrimSuffix(strings.ToLower(host), ".") {
		return ascii, ""
	}
	return host, ""
}

// numericLabels reports whether every label of a host is a number as inet_aton reads one —
// decimal digits, or 0x and hex digits: such a host is an IPv4 spelling to a resolver, never a
// name ("a1.b2" is a name; "4294967296" and "0xA9FEA9FE00" are numbers too large for IPv4).
func numericLabels(h string) bool {
	for _, l := range strings.Split(h, ".") {
		digits, hex := l, false
		if len(l) > 2 && (l[:2] == "0x" || l[:2] == "0X") {
			digits, hex = l[2:], true
		}
		if digits == "" {
			return false
		}
		for _, c := range digits {
			if !(c >= '0' && c <= '9' || hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) {
				return false
			}
		}
	}
	return true
}

// normName lower-cases a host name, decodes percent-escapes and drops one trailing dot.
func normName(h string) string {
	if strings.Contains(h, "%") {
		if u, err := url.PathUnescape(h); err == nil {
			h = u
		}
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// Literal reports the IP address a host spelling denotes, if it is numeric in any form a
// resolver accepts: a canonical IPv4 or IPv6 address, bracketed or not, with an IPv6 zone, a
// trailing dot, percent-encoded, or an inet_aton form (decimal, 0x hex, 0-prefixed octal, and
// the 1-, 2- and 3-part short forms). The result has no zone; IPv4-mapped addresses stay mapped
// (Forms unmaps them).
func Literal(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.Contains(h, "%") {
		if u, err := url.PathUnescape(h); err == nil {
			if a, err := netip.ParseAddr(u); err == nil {
				return a.WithZone(""), true
			}
			h = u
		}
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.WithZone(""), true
	}
	h = strings.TrimSuffix(h, ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.WithZone(""), true
	}
	return inetAton(h)
}

// inetAton parses the numeric IPv4 forms of C's inet_aton.
func inetAton(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals [4]uint64
	for i, part := range parts {
		base, digits := 10, part
		switch {
		case len(part) > 2 && (part[:2] == "0x" || part[:2] == "0X"):
			base, digits = 16, part[2:]
		case len(part) > 1 && part[0] == '0':
			base, digits = 8, part[1:]
		}
		if digits == "" || digits[0] == '+' || digits[0] == '-' {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(parts)
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
	}
	last := vals[n-1]
	if last >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	var v uint32
	for i := 0; i < n-1; i++ {
		v |= uint32(vals[i]) << (24 - 8*i)
	}
	v |= uint32(last)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
	v4compat   = netip.MustParsePrefix("::/96")
	v4trans    = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// Forms returns a (unmapped if IPv4-mapped, without zone) followed by the IPv4 addresses it
// embeds: IPv4-compatible (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d, RFC 2765), NAT64 (64:ff9b::/96; 64:ff9b:1::/48 in its /96 and /48
// layouts, RFC 6052), 6to4 (2002:aabb:ccdd::/48), Teredo (server and de-obfuscated client).
func Forms(a netip.Addr) []netip.Addr {
	a = a.WithZone("").Unmap()
	forms := []netip.Addr{a}
	if !a.Is6() {
		return forms
	}
	b := a.As16()
	v4 := func(x, y, z, w byte) netip.Addr { return netip.AddrFrom4([4]byte{x, y, z, w}) }
	switch {
	case v4compat.Contains(a):
		if b[12]|b[13]|b[14] != 0 || b[15] > 1 { // not :: or ::1
			forms = append(forms, v4(b[12], b[13], b[14], b[15]))
		}
	case v4trans.Contains(a):
		forms = append(forms, v4(b[12], b[13], b[14], b[15]))
	case nat64.Contains(a):
		forms = append(forms, v4(b[12], b[13], b[14], b[15]))
	case nat64Local.Contains(a):
		forms = append(forms, v4(b[12], b[13], b[14], b[15]), v4(b[6], b[7], b[9], b[10]))
	case sixToFour.Contains(a):
		forms = append(forms, v4(b[2], b[3], b[4], b[5]))
	case teredo.Contains(a):
		forms = append(forms, v4(b[4], b[5], b[6], b[7]), v4(^b[12], ^b[13], ^b[14], ^b[15]))
	}
	return forms
}
