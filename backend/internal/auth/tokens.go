package auth

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Token is an API token's record (the secret itself is never stored; see CreateToken).
type Token struct {
	ID         int64
	UserID     int64
	User       string
	Role       Role // the owner's current role, which the token carries
	Label      string
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

type tokenRow struct {
	ID         int64      `gorm:"column:id"`
	UserID     int64      `gorm:"column:user_id"`
	User       string     `gorm:"column:name"`
	Role       string     `gorm:"column:role"`
	Label      string     `gorm:"column:label"`
	CreatedAt  time.Time  `gorm:"column:created_at"`
	LastUsedAt *time.Time `gorm:"column:last_used_at"`
}

func (r tokenRow) token() Token {
	t := Token{ID: r.ID, UserID: r.UserID, User: r.User, Role: Role(r.Role), Label: r.Label, CreatedAt: r.CreatedAt.UTC()}
	if r.LastUsedAt != nil {
		u := r.LastUsedAt.UTC()
		t.LastUsedAt = &u
	}
	return t
}

const tokenSelect = `SELECT t.id, t.user_id, u.name, u.role, t.label, t.created_at, t.last_used_at
	FROM api_tokens t JOIN users u ON u.id = t.user_id`

// MaxLabel bounds a token label (characters).
const MaxLabel = 100

// CreateToken makes an API token for the user called name. It returns the secret — the only
// time it exists outside the caller — and the token's record. Errors: ErrNotFound, *InputError.
func (s *Service) CreateToken(ctx context.Context, name, label string) (string, *Token, error) {
	if utf8.RuneCountInString(label) > MaxLabel || !utf8.ValidString(label) {
		return "", nil, &InputError{Field: "label", Msg: fmt.Sprintf("at most %d characters", MaxLabel)}
	}
	secret, h := newSecret(TokenPrefix)
	now := s.utcNow()
	var tok Token
	err := s.write(ctx, func(tx *gorm.DB) error {
		u, err := getUser(tx, name)
		if err != nil {
			return err
		}
		var id int64
		if err := tx.Raw("INSERT INTO api_tokens (user_id, label, token_hash, created_at) VALUES (?, ?, ?, ?) RETURNING id",
			u.ID, label, h, now).Scan(&id).Error; err != nil {
			return err
		}
		tok = Token{ID: id, UserID: u.ID, User: u.Name, Role: Role(u.Role), Label: label, CreatedAt: now}
		return nil
	})
	if err != nil {
		return "", nil, wrap("create token", err)
	}
	return secret, &tok, nil
}

// ListTokens returns the tokens of user id userID, or every token when userID is 0, newest first.
func (s *Service) ListTokens(ctx context.Context, userID int64) ([]Token, error) {
	q := s.read(ctx)
	var rows []tokenRow
	var err error
	if userID == 0 {
		err = q.Raw(tokenSelect + " ORDER BY t.id DESC").Scan(&rows).Error
	} else {
		err = q.Raw(tokenSelect+" WHERE t.user_id = ? ORDER BY t.id DESC", userID).Scan(&rows).Error
	}
	if err != nil {
		return nil, wrap("list tokens", err)
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = r.token()
	}
	return out, nil
}

// GetToken returns one token's record, or ErrNotFound.
func (s *Service) GetToken(ctx context.Context, id int64) (*Token, error) {
	var rows []tokenRow
	if err := s.read(ctx).Raw(tokenSelect+" WHERE t.id = ?", id).Scan(&rows).Error; err != nil {
		return nil, wrap("get token", err)
	}
	if len(rows) == 0 {
		return nil, wrap("get token", ErrNotFound)
	}
	t := rows[0].token()
	return &t, nil
}

// RevokeToken deletes a token: it stops working at once. Errors: ErrNotFound.
func (s *Service) RevokeToken(ctx context.Context, id int64) error {
	return wrap("revoke token", s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec("DELETE FROM api_tokens WHERE id = ?", id)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return nil
	}))
}

// TokenPrincipal returns the principal of an API token (its owner, with the owner's current
// role), or ErrUnauthenticated.
func (s *Service) TokenPrincipal(ctx context.Context, secret string) (*Principal, error) {
	if !validSecret(secret, TokenPrefix) {
		return nil, ErrUnauthenticated
	}
	var rows []tokenRow
	if err := s.read(ctx).Raw(tokenSelect+" WHERE t.token_hash = ?", hashSecret(secret)).Scan(&rows).Error; err != nil {
		return nil, wrap("token", err)
	}
	if len(rows) == 0 {
		return nil, ErrUnauthenticated
	}
	r := rows[0]
	now := s.utcNow()
	if r.LastUsedAt == nil || now.Sub(*r.LastUsedAt) >= touchEvery {
		// Best effort: a token that works must not fail because its last-use time could not be written.
		_ = s.write(ctx, func(tx *gorm.DB) error {
			return tx.Exec("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", now, r.ID).Error
		})
	}
	return &Principal{UserID: r.UserID, User: r.User, Role: Role(r.Role), Via: ViaToken, TokenID: r.ID}, nil
}
