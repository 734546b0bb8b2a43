package netpolicy

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
)

// fakeResolver answers A and AAAA queries from a map over in-memory pipes (Go's resolver speaks
// DNS over TCP framing on a non-packet connection): no lookup leaves the process.
func fakeResolver(names map[string][]string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveDNS(server, names)
		return client, nil
	}}
}

func serveDNS(c net.Conn, names map[string][]string) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil || len(q) < 12 {
			return
		}
		// question: labels, type, class
		i := 12
		var labels []string
		for i < len(q) && q[i] != 0 {
			l := int(q[i])
			labels = append(labels, string(q[i+1:i+1+l]))
			i += 1 + l
		}
		i++
		qtype := binary.BigEndian.Uint16(q[i:])
		question := q[12 : i+4]
		name := strings.ToLower(strings.Join(labels, "."))
		var answers [][]byte
		for _, s := range names[name] {
			a := netip.MustParseAddr(s)
			if a.Is4() && qtype == 1 {
				b := a.As4()
				answers = append(answers, b[:])
			}
			if a.Is6() && qtype == 28 {
				b := a.As16()
				answers = append(answers, b[:])
			}
		}
		resp := binary.BigEndian.AppendUint16(nil, binary.BigEndian.Uint16(q))
		flags := uint16(0x8180)
		if _, known := names[name]; !known {
			flags |= 3 // NXDOMAIN
		}
		resp = binary.BigEndian.AppendUint16(resp, flags)
		resp = binary.BigEndian.AppendUint16(resp, 1)
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(answers)))
		resp = append(resp, 0, 0, 0, 0)
		resp = append(resp, question...)
		for _, rd := range answers {
			resp = append(resp, 0xc0, 12) // pointer to the question's name
			resp = binary.BigEndian.AppendUint16(resp, qtype)
			resp = binary.BigEndian.AppendUint16(resp, 1)
			resp = binary.BigEndian.AppendUint32(resp, 60)
			resp = binary.BigEndian.AppendUint16(resp, uint16(len(rd)))
			resp = append(resp, rd...)
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}
