package auth

import (
	"math"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a token bucket of failed logins: Burst failures at once, then one more every Every.
type Limit struct {
	Burst int
	Every time.Duration
}

// Limits are the login rate limits, counted on failures only: a client address and a user name
// each have a bucket; while either is empty a login is refused without checking the password
// (429 with Retry-After in the API). A success refills the user name's bucket.
type Limits struct {
	PerAddr Limit
	PerUser Limit
}

// DefaultLimits: 10 failures from one address, then one a minute; 5 for one user name, then one
// every two minutes.
var DefaultLimits = Limits{PerAddr: Limit{Burst: 10, Every: time.Minute}, PerUser: Limit{Burst: 5, Every: 2 * time.Minute}}

// maxKeys bounds each limiter map; past it, full buckets (nothing to remember) are dropped.
const maxKeys = 10000

type limiter struct {
	cfg  Limits
	mu   sync.Mutex
	addr map[string]*rate.Limiter
	user map[string]*rate.Limiter
}

func newLimiter(cfg Limits) *limiter {
	return &limiter{cfg: cfg, addr: map[string]*rate.Limiter{}, user: map[string]*rate.Limiter{}}
}

// begin starts a login attempt from addr for name. If either bucket is empty it returns how long
// to wait (and done is nil). Otherwise it takes one token from each bucket at once — so that
// concurrent attempts cannot all pass a check made before any of them failed — and done(ok) ends
// the attempt: a success gives the address its token back and forgets the name's failures.
func (l *limiter) begin(now time.Time, addr, name string) (wait time.Duration, done func(ok bool)) {
	name = strings.ToLower(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := max(waitOf(l.addr[addr], now), waitOf(l.user[name], now)); w > 0 {
		return w, nil
	}
	ra := bucket(l.addr, addr, l.cfg.PerAddr, now).ReserveN(now, 1)
	bucket(l.user, name, l.cfg.PerUser, now).ReserveN(now, 1)
	return 0, func(ok bool) {
		if !ok {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		ra.CancelAt(now)
		delete(l.user, name)
	}
}

func waitOf(b *rate.Limiter, now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	tokens := b.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	per := time.Duration(float64(time.Second) / float64(b.Limit()))
	return time.Duration(math.Ceil((1 - tokens) * float64(per)))
}

// bucket returns key's bucket, making it (and first dropping full buckets past maxKeys).
func bucket(m map[string]*rate.Limiter, key string, lim Limit, now time.Time) *rate.Limiter {
	b := m[key]
	if b == nil {
		if len(m) >= maxKeys {
			for k, v := range m {
				if v.TokensAt(now) >= float64(v.Burst()) {
					delete(m, k)
				}
			}
		}
		b = rate.NewLimiter(rate.Every(lim.Every), lim.Burst)
		m[key] = b
	}
	return b
}
