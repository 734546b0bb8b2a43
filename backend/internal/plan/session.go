package plan

import (
	"fmt"
	"slices"
	"strings"
)

// Sessions and compression (issue 13): the plan's http.cookies and http.compression.

// The values of http.cookies, the scope of each VU's cookie jar (engine/cookies.go).
const (
	// CookiesVU (the default, also written as ""): one jar per VU for the whole run, as a browser
	// per user (k6's and JMeter's cookie manager default).
	CookiesVU = "vu"
	// CookiesIteration: the jar is emptied at the start of each of the VU's iterations, so each
	// iteration starts as a new visitor.
	CookiesIteration = "iteration"
	// CookiesOff: no jar; only the plan's own Cookie headers are sent.
	CookiesOff = "off"
)

// CookieModes are the values http.cookies accepts, the default first.
var CookieModes = []string{CookiesVU, CookiesIteration, CookiesOff}

// Compressions are the content codings http.compression may ask for (RFC 9110 §8.4.1; br RFC
// 7932, zstd RFC 8878), in the order the Accept-Encoding header lists them.
var Compressions = []string{"gzip", "deflate", "br", "zstd"}

// CookieMode is the jar's scope: CookiesVU when the plan leaves http.cookies out.
func (h HTTP) CookieMode() string {
	if h.Cookies == "" {
		return CookiesVU
	}
	return h.Cookies
}

// AcceptEncoding is the Accept-Encoding value http.compression asks for ("gzip, br"), or "" when
// it asks for none. The codings keep the plan's order.
func (h HTTP) AcceptEncoding() string {
	return strings.Join(h.Compression, ", ")
}

func (h HTTP) validateSession(v *ValidationError) {
	if h.Cookies != "" && !slices.Contains(CookieModes, h.Cookies) {
		v.add("http.cookies", fmt.Sprintf("%q is not one of %s", h.Cookies, oneOf(CookieModes)))
	}
	for i, c := range h.Compression {
		if !slices.Contains(Compressions, c) {
			v.add("http.compression", fmt.Sprintf("%q is not one of %s", c, oneOf(Compressions)))
			break
		}
		if slices.Contains(h.Compression[:i], c) {
			v.add("http.compression", fmt.Sprintf("%q is listed twice", c))
			break
		}
	}
}

// validCookieName reports whether s is a cookie name: an RFC 9110 token (RFC 6265 §4.1.1).
func validCookieName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
