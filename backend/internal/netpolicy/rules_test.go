package netpolicy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	good := map[string]string{
		"10.0.0.0/8": "10.0.0.0/8", "10.1.2.3/8": "10.0.0.0/8", "169.254.169.254": "169.254.169.254",
		"[::1]": "::1", "FD00::/8": "fd00::/8", "::ffff:10.0.0.0/104": "10.0.0.0/8",
		"*.Internal.": "*.internal", "db.example.com": "db.example.com", " * ": "*",
	}
	for in, want := range good {
		r, err := ParseRule(in)
		if err != nil || r.Target != want {
			t.Errorf("ParseRule(%q) = %q, %v; want %q", in, r.Target, err, want)
		}
	}
	for _, in := range []string{"", "10.0.0.0/33", "a b", "*.", "**.x", "x.*", "0x7f000001", "2130706433", "a/b", "ex ample.com"} {
		if _, err := ParseRule(in); err == nil {
			t.Errorf("ParseRule(%q) accepted", in)
		}
	}
	if _, err := New([]string{"*"}, nil); err == nil {
		t.Error(`allow "*" accepted`)
	}
	if _, err := New(nil, []string{"10.0.0.0/99"}); err == nil || !strings.Contains(err.Error(), "deny target") {
		t.Errorf("bad deny rule: %v", err)
	}
}

func TestDecisionOrder(t *testing.T) {
	addr := netip.MustParseAddr
	// explicit allow overrides a built-in denial (a link-local test device), for every form
	p, _ := New([]string{"169.254.7.0/24"}, nil)
	for _, a := range []string{"169.254.7.7", "::ffff:169.254.7.7", "64:ff9b::a9fe:707"} {
		if err := p.CheckAddr(addr(a)); err != nil {
			t.Errorf("allowed %s: %v", a, err)
		}
	}
	if err := p.CheckAddr(addr("169.254.169.254")); err == nil {
		t.Error("metadata allowed by an unrelated allow rule")
	}
	// explicit deny beats explicit allow
	p, _ = New([]string{"10.0.0.0/8"}, []string{"10.9.0.0/16"})
	if p.CheckAddr(addr("10.9.1.1")) == nil || p.CheckAddr(addr("10.8.1.1")) != nil {
		t.Error("deny > allow violated")
	}
	// allow-list mode: "*" denies whatever is not allowed; an allowed name still may not
	// resolve to a built-in denial
	p, _ = New([]string{"192.0.2.0/24", "*.staging.test"}, []string{"*"})
	if p.CheckAddr(addr("192.0.2.10")) != nil || p.CheckAddr(addr("198.51.100.1")) == nil {
		t.Error("allow-list mode by address")
	}
	ctrl, err := p.Guard("api.staging.test")
	if err != nil {
		t.Fatal(err)
	}
	if ctrl("tcp", "198.51.100.1:443", nil) != nil {
		t.Error("an explicitly allowed name was refused at its address")
	}
	if ctrl("tcp", "169.254.169.254:80", nil) == nil {
		t.Error("an allowed name rebound to metadata was let through")
	}
	ctrl, err = p.Guard("other.test")
	if err != nil || ctrl("tcp", "198.51.100.1:443", nil) == nil {
		t.Error("allow-list mode let an unlisted name through")
	}
	s := p.Summary()
	if !s.DenyAll || len(s.Allow) != 2 || s.Deny[len(s.Deny)-1] != "*" || len(s.Builtin) != len(builtin) {
		t.Errorf("summary %+v", s)
	}
	// message shape
	err = Default().CheckHost("0xA9FEA9FE:80")
	if err == nil || err.Error() != "0xA9FEA9FE (169.254.169.254) is denied by the server's target policy (link-local / cloud metadata)" {
		t.Errorf("message: %v", err)
	}
}

func TestLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"1": "0.0.0.1", "1.2": "1.0.0.2", "1.2.3": "1.2.0.3", "0x1.0x2.0x3.0x4": "1.2.3.4", "00": "0.0.0.0",
		"4294967295": "255.255.255.255", "[::1]": "::1", "FE80::1%eth0": "fe80::1", "127.0.0.1.": "127.0.0.1",
	} {
		a, ok := Literal(in)
		if !ok || a.String() != want {
			t.Errorf("Literal(%q) = %v, %v; want %s", in, a, ok, want)
		}
	}
	for _, in := range []string{"4294967296", "1.256.0.0", "1.2.65536", "08", "0x", "1..2", "1.2.3.4.5", "example.com", "-1", "+1", "0x-1", ""} {
		if a, ok := Literal(in); ok {
			t.Errorf("Literal(%q) = %v", in, a)
		}
	}
}

// BenchmarkGuardDial is the policy's cost per connect: the guard on the dialled host and the
// Control hook on the address connected to.
func BenchmarkGuardDial(b *testing.B) {
	p, _ := New([]string{"192.0.2.0/24"}, []string{"10.0.0.0/8", "*.corp.test"})
	b.ReportAllocs()
	for b.Loop() {
		ctrl, err := p.DialGuard("127.0.0.1:8080")
		if err != nil || ctrl("tcp4", "127.0.0.1:8080", nil) != nil {
			b.Fatal(err)
		}
	}
}
