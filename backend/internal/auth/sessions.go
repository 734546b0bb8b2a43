package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
)

// touchEvery bounds how often a session's or token's last use is written (not on every request).
const touchEvery = time.Minute

// newSecret returns prefix + 32 random bytes (base64url) and the hex SHA-256 that is stored.
func newSecret(prefix string) (secret, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	secret = prefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, hashSecret(secret)
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// validSecret: only well-formed secrets reach the database.
func validSecret(secret, prefix string) bool {
	rest, ok := strings.CutPrefix(secret, prefix)
	if !ok || len(rest) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

// SessionPrefix and TokenPrefix start session and API tokens, so either is recognisable
// (e.g. by secret scanners).
const (
	SessionPrefix = "vls_"
	TokenPrefix   = "vlt_"
)

// Login checks a user name and password from a client address and opens a session. It returns
// the session token (for the cookie; shown nowhere else) and the user. Errors: *LimitedError
// (too many failures for addr or name; nothing is checked), ErrBadCredentials.
func (s *Service) Login(ctx context.Context, addr, name, password string) (string, *User, error) {
	now := s.now()
	wait, done := s.limiter.begin(now, addr, name)
	if done == nil {
		return "", nil, &LimitedError{RetryAfter: wait}
	}
	r, err := getUser(s.read(ctx), name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		done(true) // not the caller's failure
		return "", nil, wrap("login", err)
	}
	if len(password) > MaxPassword {
		password = password[:MaxPassword] // never valid (checkPassword), but still costs a hash
	}
	if r == nil {
		s.verifyPassword(s.dummy, password)
		done(false)
		return "", nil, ErrBadCredentials
	}
	if !s.verifyPassword(r.PasswordHash, password) {
		done(false)
		return "", nil, ErrBadCredentials
	}
	done(true)
	secret, h := newSecret(SessionPrefix)
	t := now.UTC()
	err = s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec("DELETE FROM sessions WHERE expires_at < ?", t).Error; err != nil {
			return err
		}
		return tx.Exec("INSERT INTO sessions (token_hash, user_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)",
			h, r.ID, t, t, t.Add(s.maxAge)).Error
	})
	if err != nil {
		return "", nil, wrap("login", err)
	}
	u := r.user()
	return secret, &u, nil
}

type sessionRow struct {
	UserID     int64     `gorm:"column:user_id"`
	Name       string    `gorm:"column:name"`
	Role       string    `gorm:"column:role"`
	LastSeenAt time.Time `gorm:"column:last_seen_at"`
	ExpiresAt  time.Time `gorm:"column:expires_at"`
}

// Session returns the principal of a session token, or ErrUnauthenticated when it is unknown,
// idle longer than IdleTimeout or older than MaxAge (an expired session is deleted).
func (s *Service) Session(ctx context.Context, secret string) (*Principal, error) {
	if !validSecret(secret, SessionPrefix) {
		return nil, ErrUnauthenticated
	}
	h := hashSecret(secret)
	var rows []sessionRow
	if err := s.read(ctx).Raw(`SELECT s.user_id, u.name, u.role, s.last_seen_at, s.expires_at
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`, h).Scan(&rows).Error; err != nil {
		return nil, wrap("session", err)
	}
	if len(rows) == 0 {
		return nil, ErrUnauthenticated
	}
	r := rows[0]
	now := s.now().UTC()
	if !now.Before(r.ExpiresAt) || now.Sub(r.LastSeenAt) >= s.idle {
		_ = s.write(ctx, func(tx *gorm.DB) error { return tx.Exec("DELETE FROM sessions WHERE token_hash = ?", h).Error })
		return nil, ErrUnauthenticated
	}
	if now.Sub(r.LastSeenAt) >= touchEvery {
		// Best effort, like a token's last use: at worst the session idles out a minute early.
		_ = s.write(ctx, func(tx *gorm.DB) error {
			return tx.Exec("UPDATE sessions SET last_seen_at = ? WHERE token_hash = ?", now, h).Error
		})
	}
	return &Principal{UserID: r.UserID, User: r.Name, Role: Role(r.Role), Via: ViaSession}, nil
}

// Logout ends the session (nothing happens for an unknown one).
func (s *Service) Logout(ctx context.Context, secret string) error {
	if !validSecret(secret, SessionPrefix) {
		return nil
	}
	return wrap("logout", s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec("DELETE FROM sessions WHERE token_hash = ?", hashSecret(secret)).Error
	}))
}
