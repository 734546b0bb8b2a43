package agent

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/volley-load/volley/backend/internal/netpolicy"
)

// Targets is an agent's own --allow-target list: the only hosts a plan sent to this agent may
// aim at. It judges what a plan spells literally through plan.CheckTargets (the same reading of
// request URL hosts — ws:// and wss:// included —, http.hosts values, the http.proxy host and
// monitor URLs that `volley serve` applies with its target policy), and its Policy enforces the
// hosts again at every connect, which covers templated hosts and redirects.
//
// # Matching
//
// Each entry is HOST or HOST:PORT. HOST takes the forms of a server --allow-target rule
// (netpolicy.ParseRule): an IP address, a CIDR, a host name or a pattern "*.suffix"; an IPv6
// address with a port is bracketed ("[::1]:8080"). A host the plan spells is allowed when an
// entry's HOST matches it — a numeric host in any spelling by its address (netpolicy.Literal), a
// name case-insensitively — and the entry has no port or the same port as the plan spells. A URL
// without a port matches only entries without one ("api.test" allows every port of api.test;
// "api.test:8080" only http://api.test:8080/…). Names are matched as written, never resolved.
// At connect time (Policy) ports are not judged: the entries' hosts form an allow list with
// everything else denied ("*" in netpolicy's deny list).
type Targets struct {
	list    []string
	entries []targetEntry
	dial    *netpolicy.Policy
}

type targetEntry struct {
	host *netpolicy.Policy // its allow list is this entry's HOST
	port string            // "": any port
}

// ErrEmptyTarget is ParseTargets' error for an empty (or blank) entry, and the agent command's
// for an --allow-target given empty: an empty list would mean no restriction at all, which a
// flag given with an unset variable ("$ALLOWED") must not turn on silently.
var ErrEmptyTarget = errors.New("an empty entry (give host names or IPs, or leave the flag out to allow any target)")

// ParseTargets parses an --allow-target list (see Targets); nil for an empty list (no
// restriction beyond the engine's target policy). An empty or blank entry is ErrEmptyTarget; a
// host of digits and dots only that is no IPv4 address ("999.1.1.1") is refused, not taken for a
// name. The error names the bad entry.
func ParseTargets(list []string) (*Targets, error) {
	if len(list) == 0 {
		return nil, nil
	}
	t := &Targets{}
	var hosts []string
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, ErrEmptyTarget
		}
		host, port := splitTarget(s)
		if port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
				return nil, fmt.Errorf("%q: port %q is not 1–65535", s, port)
			}
		}
		if _, err := netpolicy.ParseRule(host); err != nil || host == "*" {
			if err == nil {
				err = errors.New(`"*" would allow every host: leave the list out instead`)
			}
			return nil, err
		}
		if looksIPv4(host) {
			if a, err := netip.ParseAddr(host); err != nil || !a.Is4() {
				return nil, fmt.Errorf("%q looks like an IPv4 address but is not one (four numbers 0–255)", host)
			}
		}
		pol, err := netpolicy.New([]string{host}, nil)
		if err != nil {
			return nil, err
		}
		t.list = append(t.list, s)
		t.entries = append(t.entries, targetEntry{host: pol, port: port})
		hosts = append(hosts, host)
	}
	var err error
	if t.dial, err = netpolicy.New(hosts, []string{"*"}); err != nil {
		return nil, err
	}
	return t, nil
}

// looksIPv4 reports whether host is digits and dots only, with a digit: an IPv4 address or a
// mistyped one, never a name anyone means.
func looksIPv4(host string) bool {
	host = strings.TrimSuffix(host, ".")
	return host != "" && strings.Trim(host, "0123456789.") == "" && strings.Trim(host, ".") != ""
}

// splitTarget splits "host:port", "[v6]:port", "cidr:port" into host and port; a host with no
// port (including a bare IPv6 address or CIDR, which hold several colons) comes back whole.
func splitTarget(s string) (host, port string) {
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		if h, p, err := net.SplitHostPort(s); err == nil {
			return h, p
		}
	}
	return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), ""
}

// CheckHost implements plan.TargetJudge: nil when an entry allows host (host[:port] as a plan
// spells it), else an error naming the host and the list.
func (t *Targets) CheckHost(hostport string) error {
	host, port := splitTarget(hostport)
	for _, e := range t.entries {
		if (e.port == "" || e.port == port) && e.host.AllowedByRule(host) {
			return nil
		}
	}
	return fmt.Errorf("%s is not in this agent's --allow-target list (%s)", hostport, strings.Join(t.list, ", "))
}

// Policy is the connect-time policy of a run on this agent: the entries' hosts allowed,
// everything else denied (ports are not judged at connect time).
func (t *Targets) Policy() *netpolicy.Policy { return t.dial }

// String is the list as given, comma-separated.
func (t *Targets) String() string { return strings.Join(t.list, ",") }
