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

// wait returns how long until a login from addr for name may be tried (0: now).
func (l *limiter) wait(now time.Time, addr, name string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(waitOf(l.addr[addr], now), waitOf(l.user[strings.ToLower(name)], now))
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

// fail takes one token from both buckets.
func (l *limiter) fail(now time.Time, addr, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	take(l.addr, addr, l.cfg.PerAddr, now)
	take(l.user, strings.ToLower(name), l.cfg.PerUser, now)
}

// success forgets the user name's failures (an address keeps its own).
func (l *limiter) success(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.user, strings.ToLower(name))
}

func take(m map[string]*rate.Limiter, key string, lim Limit, now time.Time) {
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
	b.AllowN(now, 1)
}
