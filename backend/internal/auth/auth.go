// Package auth is Volley's access control: users with a role (admin, tester, viewer), login
// sessions, API tokens for CI, login rate limiting and the audit log. Its tables live in Volley's
// SQLite database (migrations/00004_auth.sql) and are reached through the store's single writer.
//
// Secrets are never stored or logged: passwords are kept as argon2id hashes (golang.org/x/crypto),
// session and API tokens (32 random bytes each) as their SHA-256. A token is shown once, when it
// is made.
//
// Auth is on as soon as one user exists. With no user, a server bound to loopback treats its
// local user as the admin (the caller decides that; see Service.HasUsers).
//
// The package knows nothing of HTTP: the API layer (backend/internal/api) reads cookies and
// headers and asks this package who the caller is and what the caller's role allows.
package auth

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"gorm.io/gorm"

	"github.com/volley-load/volley/backend/internal/store"
)

// Role is what a user may do. Each role includes the ones below it.
type Role string

// The roles, from least to most.
const (
	// Viewer reads plans, runs, history and reports.
	Viewer Role = "viewer"
	// Tester also creates, edits and deletes plans and runs, starts and stops runs, annotates them.
	Tester Role = "tester"
	// Admin also manages users, every user's API tokens, the audit log and admin-only settings.
	Admin Role = "admin"
)

// Roles lists the roles from least to most.
var Roles = []Role{Viewer, Tester, Admin}

func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Tester:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether a caller with role r may do what needs role min.
func (r Role) Allows(min Role) bool { return r.rank() > 0 && r.rank() >= min.rank() }

// ParseRole returns the role named s, or an *InputError for field "role".
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !r.Valid() {
		return "", &InputError{Field: "role", Msg: fmt.Sprintf("%q is not a role: use admin, tester or viewer", s)}
	}
	return r, nil
}

// How a caller proved who it is.
const (
	ViaSession = "session"
	ViaToken   = "token"
	// ViaLocal: no user exists and the server is bound to loopback; the local user is the admin.
	ViaLocal = "local"
)

// LocalUser is the name the local user carries (in the audit log too) while auth is off.
const LocalUser = "local"

// Principal is an authenticated caller.
type Principal struct {
	UserID  int64 // 0 for the local user
	User    string
	Role    Role
	Via     string // ViaSession, ViaToken or ViaLocal
	TokenID int64  // the API token used (ViaToken)
}

// Local is the principal of a loopback server with no users: the admin, as before auth existed.
func Local() *Principal { return &Principal{User: LocalUser, Role: Admin, Via: ViaLocal} }

// Errors. Each is returned wrapped; test with errors.Is / errors.As.
var (
	// ErrNotFound: no such user or token (it wraps store.ErrNotFound, so the API answers 404).
	ErrNotFound = fmt.Errorf("auth: %w", store.ErrNotFound)
	// ErrExists: a user of that name already exists (names are case-insensitive).
	ErrExists = errors.New("auth: a user of that name already exists")
	// ErrBadCredentials: unknown user or wrong password (which one is not said).
	ErrBadCredentials = errors.New("auth: wrong user name or password")
	// ErrUnauthenticated: no credentials, or an unknown, expired or revoked session or token.
	ErrUnauthenticated = errors.New("auth: not logged in")
	// ErrLastAdmin: the change would leave no admin.
	ErrLastAdmin = errors.New("auth: the last admin cannot be deleted or demoted")
)

// InputError is a bad value in a named field.
type InputError struct {
	Field string
	Msg   string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Msg }

// LimitedError: too many failed logins from this address or for this user name; try again after
// RetryAfter.
type LimitedError struct{ RetryAfter time.Duration }

func (e *LimitedError) Error() string {
	return fmt.Sprintf("auth: too many failed logins; try again in %s", e.RetryAfter.Round(time.Second))
}

// Config tunes a Service; zero fields take the defaults below.
type Config struct {
	// Now is the clock (tests give a fake one). Default time.Now.
	Now func() time.Time
	// IdleTimeout ends a session unused for this long. Default 12 h.
	IdleTimeout time.Duration
	// MaxAge ends a session this long after login, however active. Default 7 days.
	MaxAge time.Duration
	// Hash is the argon2id cost for new password hashes. Default DefaultHashParams.
	Hash HashParams
	// Limits are the login rate limits. Default DefaultLimits.
	Limits Limits
}

// Service is users, sessions, tokens and the audit log over one database. Safe for concurrent use.
type Service struct {
	st      *store.Store
	now     func() time.Time
	idle    time.Duration
	maxAge  time.Duration
	hash    HashParams
	limiter *limiter
	// hashing bounds concurrent argon2id computations (each takes Hash.MemoryKiB of memory).
	hashing chan struct{}
	dummy   string // a hash to verify against for unknown users, so both take the same time
}

// New returns a Service over st's database.
func New(st *store.Store, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 12 * time.Hour
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 7 * 24 * time.Hour
	}
	if cfg.Hash == (HashParams{}) {
		cfg.Hash = DefaultHashParams
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	s := &Service{st: st, now: cfg.Now, idle: cfg.IdleTimeout, maxAge: cfg.MaxAge, hash: cfg.Hash,
		limiter: newLimiter(cfg.Limits), hashing: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))}
	s.dummy = cfg.Hash.hash([]byte("volley: no such user"))
	return s
}

func (s *Service) read(ctx context.Context) *gorm.DB { return s.st.Read(ctx) }

func (s *Service) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.st.Write(ctx, fn)
}

func (s *Service) utcNow() time.Time { return s.now().UTC() }

// MaxAge is how long a session lasts at most (the cookie's Max-Age).
func (s *Service) MaxAge() time.Duration { return s.maxAge }
