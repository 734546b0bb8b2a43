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
	if responses == 0 {
		return nil
	}
	m := make(map[string]int64, 2)
	if n := responses - c.H2; n > 0 {
		m[ProtoHTTP11] = n
	}
	if c.H2 > 0 {
		m[ProtoH2] = c.H2
	}
	return m
}
