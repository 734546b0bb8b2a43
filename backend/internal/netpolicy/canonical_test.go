package netpolicy

import (
	"errors"
	"testing"
)

// Spellings a resolver or browser maps to another host, or takes as no host at all, are judged at
// validation as what they become — or refused — never passed because they look unusual.
func TestCheckHostCanonicalSpellings(t *testing.T) {
	p := Default()
	for _, c := range []struct {
		host   string
		denied bool
	}{
		{"metadata.google.internal..", true},                                                  // empty label: no resolver takes it
		{"METADATA.GOOGLE.INTERNAL.", true},                                                   // case and one trailing dot
		{"\u2460\u2465\u2468.\u2461\u2464\u2463.\u2460\u2465\u2468.\u2461\u2464\u2463", true}, // circled digits
		{"169\u3002254\u3002169\u3002254", true},                                              // ideographic full stops
		{"\uff11\uff16\uff19.\uff12\uff15\uff14.\uff11\uff16\uff19.\uff12\uff15\uff14", true}, // full-width digits
		{"4294967296", true}, // over 32 bits: no IPv4 address
		{"6147006462", true},
		{"0xA9FEA9FE00", true},
		{"169.254.169.254%2500", true}, // a zone-like escape on an IPv4 literal
		{"bad host", true},
		{"a1.b2", false}, // hex-looking labels without 0x are names
		{"cafe.example", false},
		{"b\u00fccher.example", false}, // IDNA name → xn--bcher-kva.example
		{"2130706433", false},          // 127.0.0.1 by value
		{"localhost", false},
		{"127.0.0.1", false},
	} {
		err := p.CheckHost(c.host)
		var d *Denied
		if got := errors.As(err, &d); got != c.denied {
			t.Errorf("CheckHost(%q) = %v, want denied %v", c.host, err, c.denied)
		}
	}
}
