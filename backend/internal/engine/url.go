package engine

// URLs as browsers send them (RFC 3986; the WHATWG URL standard's percent-encode sets).
//
// A plan's URL is written by a person or pasted from a browser's address bar, so it may hold
// non-ASCII text, spaces or quotes; a data row rendered into a templated URL may too. fasthttp
// sends the path and query exactly as given (the engine turns its path normalization off, so
// that existing escapes and dot segments stay byte-exact), which would put raw UTF-8 and spaces
// on the request line — a space breaks it. So the request target is percent-encoded first, as a
// browser encodes what is typed into its address bar:
//
//   - path: C0 controls, space, " # < > ? ` { } and every byte ≥ 0x7F (the path percent-encode
//     set; non-ASCII as its UTF-8 bytes);
//   - query: C0 controls, space, " # < > ' and every byte ≥ 0x7F (the special-query set);
//   - '%' is never touched, so existing escapes (and a lone '%') go out byte-exact; the scheme and
//     authority are left alone (an IDN host is not converted to punycode); the fragment is never
//     sent (fasthttp drops it).
//
// A URL that needs none of it — the usual case — is used as it is, without a copy.

// escapeClass: 1 the byte is encoded in the path, 2 in the query.
var escapeClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		if c < 0x20 || c >= 0x7f {
			t[c] = 3
		}
	}
	for _, c := range " \"#<>" {
		t[c] = 3
	}
	for _, c := range "?`{}" {
		t[c] |= 1
	}
	t['\''] |= 2
	return t
}()

// targetStart returns where url's request target (path and query) begins: after "scheme://host".
func targetStart[T string | []byte](url T) int {
	i := 0
	for j := 0; j+2 < len(url); j++ {
		if url[j] == ':' && url[j+1] == '/' && url[j+2] == '/' {
			i = j + 3
			break
		}
		if url[j] == '/' || url[j] == '?' {
			break
		}
	}
	for i < len(url) && url[i] != '/' && url[i] != '?' && url[i] != '#' {
		i++
	}
	return i
}

// appendBrowserURL appends url to dst with its request target percent-encoded as above; ok is
// false (and dst unchanged) when nothing needed encoding.
func appendBrowserURL[T string | []byte](dst []byte, url T) (out []byte, ok bool) {
	const hex = "0123456789ABCDEF"
	start := targetStart(url)
	class := uint8(1) // path
	first := -1
	for i := start; i < len(url); i++ {
		c := url[i]
		if c == '#' {
			break
		}
		if c == '?' && class == 1 {
			class = 2
			continue
		}
		if escapeClass[c]&class != 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return dst, false
	}
	dst = append(dst, url[:first]...)
	for i := first; i < len(url); i++ {
		c := url[i]
		if c == '#' {
			dst = append(dst, url[i:]...)
			break
		}
		if c == '?' && class == 1 {
			class = 2
			dst = append(dst, c)
			continue
		}
		if escapeClass[c]&class != 0 {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst, true
}

// browserURL is url as a browser sends it (static URLs, once per run).
func browserURL(url string) string {
	if b, ok := appendBrowserURL(nil, url); ok {
		return string(b)
	}
	return url
}

// browserURLBytes is url as a browser sends it, encoded into the VU's own buffer when it needs
// encoding (templated URLs, each request: no allocation once the buffer has grown).
func (v *vu) browserURLBytes(url []byte) []byte {
	b, ok := appendBrowserURL(v.urlBuf[:0], url)
	if !ok {
		return url
	}
	v.urlBuf = b
	return b
}
