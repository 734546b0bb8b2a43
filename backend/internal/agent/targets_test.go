package agent

import (
	"errors"
	"strings"
	"testing"
)

// An empty or blank entry is refused (never a smaller list, never "no restriction"), and so is a
// host of digits and dots that is no IPv4 address, named; real addresses and names still parse.
func TestParseTargetsRefusesEmptyAndBogusIPv4(t *testing.T) {
	for _, list := range [][]string{{""}, {" "}, {"a.test", "", "b.test"}, {"a.test", "\t"}} {
		if tl, err := ParseTargets(list); !errors.Is(err, ErrEmptyTarget) {
			t.Errorf("%q: %v %v, want ErrEmptyTarget", list, tl, err)
		}
	}
	for _, bad := range []string{"999.1.1.1", "999.1.1.1:80", "1.2.3.4.5", "256.0.0.1.", "300.300.300.300"} {
		_, err := ParseTargets([]string{bad})
		host, _ := splitTarget(bad)
		if err == nil || !strings.Contains(err.Error(), `"`+host+`"`) {
			t.Errorf("%q: %v, want an error naming %q", bad, err, host)
		}
	}
	for _, good := range []string{"10.0.0.1", "10.0.0.1:8080", "10.0.0.0/8", "host-1.test", "1a.2.3.4", "*.10.internal", "[::1]:80"} {
		if _, err := ParseTargets([]string{good}); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}
