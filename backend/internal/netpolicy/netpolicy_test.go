package netpolicy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// names the fake resolver knows (no lookup or connection leaves the process in these tests)
var testNames = map[string][]string{
	"meta.test":                {"169.254.169.254"},
	"metadata.google.internal": {"169.254.169.254"},
	"v6meta.test":              {"fd00:ec2::254"},
	"gcp6.test":                {"fd20:ce::254"},
	"nat64meta.test":           {"64:ff9b::a9fe:a9fe"},
	"sixtofour.test":           {"2002:a9fe:a9fe::1"},
	"ll.test":                  {"169.254.10.20"},
	"ll6.test":                 {"fe80::1"},
	"alibaba.test":             {"100.100.100.200"},
	"azure.test":               {"168.63.129.16"},
	"zero.test":                {"0.0.0.0"},
	"mcast.test":               {"239.1.2.3"},
	"mcast6.test":              {"ff02::1"},
	"bcast.test":               {"255.255.255.255"},
	"private.test":             {"10.1.2.3"},
	"ula.test":                 {"fd12:3456:789a::1"},
	"loop.test":                {"127.0.0.1"},
	"loop6.test":               {"::1"},
	"public.test":              {"93.184.216.34"},
	"app.corp.test":            {"127.0.0.1"},
}

// strict is an administrator's policy denying loopback, private and ULA ranges and a domain.
func strict(t *testing.T) *Policy {
	p, err := New(nil, []string{"127.0.0.0/8", "::1", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "*.corp.test"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var errPassed = errors.New("the policy let this address through (test stops before connect)")

// TestTargetSpellings runs every spelling through CheckHost (validation) and through a real
// net.Dialer whose Control hook is the policy's guard, with a fake resolver: a denied target
// must fail with *Denied, an allowed one must reach the point of connecting (where the test's
// own hook stops it, so nothing is sent anywhere).
func TestTargetSpellings(t *testing.T) {
	const (
		allow = false
		deny  = true
	)
	rows := []struct {
		host   string
		strict bool // judged by the strict policy instead of the default one
		denied bool
		reason string // part of the message, for denied rows
	}{
		// cloud metadata, every spelling
		{"169.254.169.254", false, deny, "link-local / cloud metadata"},
		{"169.254.169.254.", false, deny, "cloud metadata"},
		{"2852039166", false, deny, "cloud metadata"},
		{"0xA9FEA9FE", false, deny, "cloud metadata"},
		{"0xa9fea9fe.", false, deny, "cloud metadata"},
		{"0251.0376.0251.0376", false, deny, "cloud metadata"},
		{"0xA9.0xFE.0xA9.0xFE", false, deny, "cloud metadata"},
		{"169.254.43518", false, deny, "cloud metadata"},
		{"169.16689662", false, deny, "cloud metadata"},
		{"0xA9.0376.43518", false, deny, "cloud metadata"},
		{"[::ffff:169.254.169.254]", false, deny, "cloud metadata"},
		{"::ffff:a9fe:a9fe", false, deny, "cloud metadata"},
		{"[0:0:0:0:0:ffff:a9fe:a9fe]", false, deny, "cloud metadata"},
		{"::169.254.169.254", false, deny, "cloud metadata"},
		{"::ffff:0:a9fe:a9fe", false, deny, "cloud metadata"},
		{"64:ff9b::169.254.169.254", false, deny, "cloud metadata"},
		{"[64:FF9B::A9FE:A9FE]", false, deny, "cloud metadata"},
		{"64:ff9b:1::a9fe:a9fe", false, deny, "cloud metadata"},
		{"2002:a9fe:a9fe::1", false, deny, "cloud metadata"},
		{"2001:0:a9fe:a9fe::1", false, deny, "cloud metadata"},          // Teredo server
		{"2001:0:102:304::5601:5601", false, deny, "cloud metadata"},    // Teredo client ^169.254.169.254
		{"%31%36%39.254.169.254", false, deny, "cloud metadata"},        // percent-encoded
		{"fd00:ec2::254", false, deny, "cloud metadata"},                // AWS IPv6
		{"[FD00:EC2::254]", false, deny, "cloud metadata"},              //
		{"fd20:ce::254", false, deny, "cloud metadata"},                 // GCP IPv6
		{"100.100.100.200", false, deny, "cloud metadata"},              // Alibaba
		{"168.63.129.16", false, deny, "cloud metadata"},                // Azure WireServer
		{"192.0.0.192", false, deny, "cloud metadata"},                  // Oracle
		{"metadata.google.internal", false, deny, "cloud metadata"},     // by name, before resolving
		{"METADATA.Google.Internal.", false, deny, "cloud metadata"},    //
		{"metadata.goog", false, deny, "cloud metadata"},                //
		{"metadata%2egoogle%2einternal", false, deny, "cloud metadata"}, //
		{"meta.test", false, deny, "cloud metadata"},                    // resolves to it
		{"v6meta.test", false, deny, "cloud metadata"},
		{"gcp6.test", false, deny, "cloud metadata"},
		{"nat64meta.test", false, deny, "cloud metadata"},
		{"sixtofour.test", false, deny, "cloud metadata"},
		{"alibaba.test", false, deny, "cloud metadata"},
		{"azure.test", false, deny, "cloud metadata"},
		// link-local
		{"169.254.10.20", false, deny, "link-local"},
		{"fe80::1", false, deny, "link-local"},
		{"[fe80::1%25eth0]", false, deny, "link-local"},
		{"fe80::1%eth0", false, deny, "link-local"},
		{"ll.test", false, deny, "link-local"},
		{"ll6.test", false, deny, "link-local"},
		// unspecified, multicast, broadcast
		{"0.0.0.0", false, deny, "unspecified"},
		{"0", false, deny, "unspecified"},
		{"0x0", false, deny, "unspecified"},
		{"[::]", false, deny, "unspecified"},
		{"zero.test", false, deny, "unspecified"},
		{"224.0.0.1", false, deny, "multicast"},
		{"239.1.2.3", false, deny, "multicast"},
		{"ff02::1", false, deny, "multicast"},
		{"::ffff:224.0.0.251", false, deny, "multicast"},
		{"mcast.test", false, deny, "multicast"},
		{"mcast6.test", false, deny, "multicast"},
		{"255.255.255.255", false, deny, "broadcast"},
		{"4294967295", false, deny, "broadcast"},
		{"bcast.test", false, deny, "broadcast"},
		// loopback, private and ULA: allowed by default …
		{"127.0.0.1", false, allow, ""},
		{"2130706433", false, allow, ""},
		{"0x7f000001", false, allow, ""},
		{"127.1", false, allow, ""},
		{"017700000001", false, allow, ""},
		{"[::1]", false, allow, ""},
		{"::ffff:127.0.0.1", false, allow, ""},
		{"10.1.2.3", false, allow, ""},
		{"192.168.1.1", false, allow, ""},
		{"172.16.0.1", false, allow, ""},
		{"fd12:3456:789a::1", false, allow, ""},
		{"loop.test", false, allow, ""},
		{"loop6.test", false, allow, ""},
		{"private.test", false, allow, ""},
		{"ula.test", false, allow, ""},
		{"public.test", false, allow, ""},
		{"93.184.216.34", false, allow, ""},
		{"2606:2800:220:1::1", false, allow, ""},
		{"app.corp.test", false, allow, ""},
		// … and denied when the administrator says so, in every spelling
		{"127.0.0.1", true, deny, "127.0.0.0/8"},
		{"2130706433", true, deny, "127.0.0.0/8"},
		{"0x7f.1", true, deny, "127.0.0.0/8"},
		{"[::1]", true, deny, "::1"},
		{"::ffff:127.0.0.1", true, deny, "127.0.0.0/8"},
		{"::127.0.0.1", true, deny, "127.0.0.0/8"},
		{"64:ff9b::10.1.2.3", true, deny, "10.0.0.0/8"},
		{"2002:c0a8:0101::1", true, deny, "192.168.0.0/16"},
		{"012.1.2.3", true, deny, "10.0.0.0/8"},
		{"172.16.0.1", true, deny, "172.16.0.0/12"},
		{"fd12:3456:789a::1", true, deny, "fc00::/7"},
		{"loop.test", true, deny, "127.0.0.0/8"},
		{"loop6.test", true, deny, "::1"},
		{"private.test", true, deny, "10.0.0.0/8"},
		{"ula.test", true, deny, "fc00::/7"},
		{"app.corp.test", true, deny, "*.corp.test"},
		{"APP.CORP.TEST.", true, deny, "*.corp.test"},
		{"public.test", true, allow, ""},
		{"93.184.216.34", true, allow, ""},
	}
	if len(rows) < 40 {
		t.Fatalf("only %d rows", len(rows))
	}
	def := Default()
	str := strict(t)
	res := fakeResolver(testNames)
	for _, r := range rows {
		pol := def
		if r.strict {
			pol = str
		}
		name := r.host
		if r.strict {
			name += " (strict)"
		}
		t.Run(name, func(t *testing.T) {
			// validation
			err := pol.CheckHost(r.host)
			_, known := testNames[normName(stripPort(r.host))]
			if !known || r.denied && err != nil { // names are judged at validation by patterns only
				checkVerdict(t, "CheckHost", err, r.denied, r.reason)
			}
			// dial: the guard refuses a denied host before resolving, or the hook refuses the
			// resolved address before connecting
			host := stripPort(r.host)
			ctrl, err := pol.Guard(host)
			if err == nil {
				if _, literal := Literal(host); literal && !canonical(host) {
					// a resolver-dependent spelling the guard let through: its value is allowed
					// (checked above); Go's resolver would look it up as a name
					return
				}
				var seen atomic.Value
				d := net.Dialer{Timeout: 2 * time.Second, Resolver: res, Control: func(network, address string, c syscall.RawConn) error {
					seen.Store(address)
					if err := ctrl(network, address, c); err != nil {
						return err
					}
					return errPassed
				}}
				_, err = d.DialContext(context.Background(), "tcp", net.JoinHostPort(dialHost(host), "80"))
				if errors.Is(err, errPassed) {
					err = nil
				} else if err != nil && !isDenied(err) {
					t.Fatalf("dial %s: unexpected error %v", host, err)
				}
				if seen.Load() == nil {
					t.Fatalf("dial %s: the Control hook never ran (%v)", host, err)
				}
			}
			checkVerdict(t, "dial", err, r.denied, r.reason)
		})
	}
}

// canonical: what net.Dialer parses as an IP itself (no resolver involved).
func canonical(h string) bool {
	_, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil
}

// dialHost turns a %25-escaped zone into the form net.Dial takes.
func dialHost(h string) string { return strings.ReplaceAll(strings.Trim(h, "[]"), "%25", "%") }

func isDenied(err error) bool {
	var d *Denied
	return errors.As(err, &d)
}

func checkVerdict(t *testing.T, stage string, err error, denied bool, reason string) {
	t.Helper()
	var d *Denied
	switch {
	case denied && !errors.As(err, &d):
		t.Fatalf("%s: want denied (%s), got %v", stage, reason, err)
	case denied && !strings.Contains(err.Error(), reason):
		t.Fatalf("%s: message %q does not give the reason %q", stage, err, reason)
	case denied && !strings.Contains(err.Error(), "is denied by the server's target policy"):
		t.Fatalf("%s: message %q", stage, err)
	case !denied && err != nil:
		t.Fatalf("%s: want allowed, got %v", stage, err)
	}
}

// TestGuardRefusesBeforeConnect dials a real loopback listener that the policy denies: the dial
// fails with *Denied and the listener never sees a connection, while an allowed address on the
// same listener connects.
func TestGuardRefusesBeforeConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	p, err := New(nil, []string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	res := fakeResolver(map[string][]string{"target.test": {"127.0.0.1"}})
	// A literal is refused by the guard itself, before any socket exists.
	if _, err := p.Guard("127.0.0.1"); !isDenied(err) {
		t.Fatalf("Guard(127.0.0.1): want *Denied, got %v", err)
	}
	// A name passes the guard; the address it resolves to is refused by the Control hook,
	// which runs after socket(2) and before connect(2).
	for _, host := range []string{"target.test"} {
		ctrl, err := p.Guard(host)
		if err != nil {
			t.Fatal(err)
		}
		d := net.Dialer{Timeout: 2 * time.Second, Resolver: res, Control: ctrl}
		c, err := d.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			c.Close()
			t.Fatalf("%s: connected to a denied address", host)
		}
		if !isDenied(err) {
			t.Fatalf("%s: want *Denied, got %v", host, err)
		}
	}
	// A name resolving to a denied and an allowed address connects to the allowed one only.
	res = fakeResolver(map[string][]string{"mixed.test": {"169.254.169.254", "127.0.0.1"}})
	ctrl, err := Default().Guard("mixed.test")
	if err != nil {
		t.Fatal(err)
	}
	var tried []string
	d := net.Dialer{Timeout: 2 * time.Second, Resolver: res, Control: func(n, a string, c syscall.RawConn) error {
		tried = append(tried, a)
		return ctrl(n, a, c)
	}}
	c, err := d.Dial("tcp", net.JoinHostPort("mixed.test", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("mixed.test: %v (tried %v)", err, tried)
	}
	if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.1" {
		t.Fatalf("connected to %s", got)
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for accepted.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("the listener accepted %d connections, want exactly 1 (the allowed dial)", n)
	}
}

// AllowedByRule answers whether an allow rule names the host — by address in any spelling, by
// name or pattern — whatever the built-in and deny rules say.
func TestAllowedByRule(t *testing.T) {
	p, err := New([]string{"127.0.0.1", "10.0.0.0/8", "*.internal", "api.test", "169.254.169.254"}, []string{"api.test"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:8080": true, "2130706433": true, "[::ffff:127.0.0.1]:80": true, "127.0.0.2": false,
		"10.200.0.1:443": true, "db.internal": true, "DB.Internal.:5432": true, "internal": false,
		"api.test": true, "api.test.evil": false, "169.254.169.254": true, "0xA9FEA9FE": true,
		"metadata.google.internal": true, "evil.test": false, "bad..name": false,
	} {
		if got := p.AllowedByRule(host); got != want {
			t.Errorf("AllowedByRule(%q) = %v, want %v", host, got, want)
		}
	}
	if Default().AllowedByRule("127.0.0.1") {
		t.Error("the default policy has no allow rule")
	}
}
