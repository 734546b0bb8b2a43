package metrics

// Protocol names in Summary.Protocols and Sample.Protocols (their ALPN identifiers).
const (
	ProtoHTTP11 = "http/1.1"
	ProtoH2     = "h2"
)

// H2Response counts a response that came over HTTP/2 (the shard's Record counts it as any other).
func (s *Shard) H2Response() { s.h2.Add(1) }

// ProtocolMap splits the responses (requests with a status) into those over HTTP/2 (H2Response)
// and the rest, HTTP/1.1; protocols without a response are left out, and nil is returned when
// there is none.
func (c *Counts) ProtocolMap() map[string]int64 {
	var responses int64
	for _, n := range c.Status {
		responses += n
	}
	return ProtocolsOf(responses, c.H2)
}

// ProtocolsOf splits responses into the h2 ones and the rest, HTTP/1.1 (ProtocolMap's rule):
// nil without a response, a protocol without a response left out.
func ProtocolsOf(responses, h2 int64) map[string]int64 {
	if responses == 0 {
		return nil
	}
	m := make(map[string]int64, 2)
	if n := responses - h2; n > 0 {
		m[ProtoHTTP11] = n
	}
	if h2 > 0 {
		m[ProtoH2] = h2
	}
	return m
}

// AddCounts adds the counts of src into dst by key (status codes, error kinds, protocols of
// several generators).
func AddCounts(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}
