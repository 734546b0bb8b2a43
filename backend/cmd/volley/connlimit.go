package main

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// limitPerClient wraps ln so that each client address holds at most max open connections
// (IPv6 clients are grouped by their /64, which one host usually owns whole). A connection over
// the cap is closed as soon as it is accepted, before anything is read from it; Accept then
// waits for the next one. max ≤ 0 returns ln unchanged.
//
// Behind a reverse proxy every connection comes from the proxy's address: raise the cap (or set
// 0) there.
func limitPerClient(ln net.Listener, max int, log *slog.Logger) net.Listener {
	if max <= 0 {
		return ln
	}
	return &clientLimitListener{Listener: ln, max: max, log: log, open: map[netip.Prefix]int{}}
}

type clientLimitListener struct {
	net.Listener
	max int
	log *slog.Logger

	mu       sync.Mutex
	open     map[netip.Prefix]int
	refused  int       // since the last warning
	lastWarn time.Time // warnings are at most one every 10 s
}

// clientKey is the address a connection is counted under.
func clientKey(a net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{} // not an IP connection: all counted together
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

func (l *clientLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		k := clientKey(c.RemoteAddr())
		l.mu.Lock()
		if l.open[k] >= l.max {
			l.refused++
			warn := time.Since(l.lastWarn) >= 10*time.Second
			n := l.refused
			if warn {
				l.lastWarn, l.refused = time.Now(), 0
			}
			l.mu.Unlock()
			_ = c.Close()
			if warn && l.log != nil {
				l.log.Warn("connections refused: client over --max-conns-per-client", "client", k.String(), "max", l.max, "refused", n)
			}
			continue
		}
		l.open[k]++
		l.mu.Unlock()
		return &countedConn{Conn: c, done: func() { l.release(k) }}, nil
	}
}

func (l *clientLimitListener) release(k netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[k]--; l.open[k] <= 0 {
		delete(l.open, k)
	}
}

// openConns is the number of connections held (tests).
func (l *clientLimitListener) openConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.open {
		n += v
	}
	return n
}

// countedConn gives its slot back once, on its first Close (a hijacked websocket connection too:
// gorilla closes the same net.Conn).
type countedConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}

// CloseWrite and ReadFrom keep what net/http uses of a *net.TCPConn: a half-close before an error
// answer's close, and sendfile.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *countedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// isLoopback reports whether a listener's address is a loopback one.
func isLoopback(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}
