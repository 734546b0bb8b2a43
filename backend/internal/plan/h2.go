package plan

import "fmt"

// HTTP versions (HTTP.Version).
const (
	HTTP11 = "1.1"
	HTTP2  = "2"
	H2C    = "h2c"
)

// HTTPVersions are the values http.version accepts ("" is HTTP11).
var HTTPVersions = []string{HTTP11, HTTP2, H2C}

// MaxH2Connections bounds http.h2_connections.
const MaxH2Connections = 1024

// H2 reports whether the plan asks for HTTP/2 (http.version "2" or "h2c").
func (h HTTP) H2() bool { return h.Version == HTTP2 || h.Version == H2C }

// validateVersion checks http.version, http.h2_fallback and http.h2_connections.
func (h HTTP) validateVersion(v *ValidationError) {
	switch h.Version {
	case "", HTTP11, HTTP2, H2C:
	default:
		v.add("http.version", fmt.Sprintf("%q is not one of %s", h.Version, oneOf(HTTPVersions)))
	}
	if h.H2Fallback && h.Version != HTTP2 {
		v.add("http.h2_fallback", `applies only with http.version "2"`)
	}
	if n := h.H2Connections; n < 0 || n > MaxH2Connections {
		v.add("http.h2_connections", fmt.Sprintf("must be 0–%d (0: one connection per VU)", MaxH2Connections))
	} else if n > 0 && !h.H2() {
		v.add("http.h2_connections", `applies only with http.version "2" or "h2c"`)
	}
}
