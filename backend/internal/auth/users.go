package auth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"
)

// User is a stored user, without its password hash.
type User struct {
	ID        int64
	Name      string
	Role      Role
	CreatedAt time.Time
	UpdatedAt time.Time
}

type userRow struct {
	ID           int64     `gorm:"column:id"`
	Name         string    `gorm:"column:name"`
	Role         string    `gorm:"column:role"`
	PasswordHash string    `gorm:"column:password_hash"`
	CreatedAt    time.Time `gorm:"column:created_at"`
	UpdatedAt    time.Time `gorm:"column:updated_at"`
}

func (r userRow) user() User {
	return User{ID: r.ID, Name: r.Name, Role: Role(r.Role), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// validName: 1–64 characters, letters, digits and . _ @ -, starting with a letter or digit.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// CheckName returns an *InputError for field "name" unless name is a valid user name.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return &InputError{Field: "name", Msg: "1-64 characters of letters, digits and . _ @ -, starting with a letter or digit"}
	}
	if strings.EqualFold(name, LocalUser) {
		return &InputError{Field: "name", Msg: fmt.Sprintf("%q is reserved", LocalUser)}
	}
	return nil
}

// HasUsers reports whether any user exists, i.e. whether auth is on.
func (s *Service) HasUsers(ctx context.Context) (bool, error) {
	var n int64
	if err := s.read(ctx).Raw("SELECT EXISTS (SELECT 1 FROM users)").Scan(&n).Error; err != nil {
		return false, fmt.Errorf("auth: users: %w", err)
	}
	return n == 1, nil
}

// AddUser creates a user. Errors: *InputError (name, role, password), ErrExists.
func (s *Service) AddUser(ctx context.Context, name string, role Role, password string) (*User, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if !role.Valid() {
		_, err := ParseRole(string(role))
		return nil, err
	}
	if err := checkPassword(password); err != nil {
		return nil, err
	}
	h := s.hashPassword(password)
	now := s.utcNow()
	var id int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Raw("SELECT count(*) FROM users WHERE name = ?", name).Scan(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return ErrExists
		}
		return tx.Raw("INSERT INTO users (name, role, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
			name, string(role), h, now, now).Scan(&id).Error
	})
	if err != nil {
		return nil, wrap("add user", err)
	}
	return &User{ID: id, Name: name, Role: role, CreatedAt: now, UpdatedAt: now}, nil
}

// GetUser returns the user called name (case-insensitive), or ErrNotFound.
func (s *Service) GetUser(ctx context.Context, name string) (*User, error) {
	r, err := getUser(s.read(ctx), name)
	if err != nil {
		return nil, wrap("get user", err)
	}
	u := r.user()
	return &u, nil
}

func getUser(db *gorm.DB, name string) (*userRow, error) {
	var rows []userRow
	if err := db.Raw("SELECT id, name, role, password_hash, created_at, updated_at FROM users WHERE name = ?", name).
		Scan(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	return &rows[0], nil
}

// ListUsers returns every user by name.
func (s *Service) ListUsers(ctx context.Context) ([]User, error) {
	var rows []userRow
	if err := s.read(ctx).Raw("SELECT id, name, role, password_hash, created_at, updated_at FROM users ORDER BY name").
		Scan(&rows).Error; err != nil {
		return nil, wrap("list users", err)
	}
	out := make([]User, len(rows))
	for i, r := range rows {
		out[i] = r.user()
	}
	return out, nil
}

// UpdateUser changes a user's role and/or password (nil leaves it as is). A new password ends
// every session of the user. Errors: ErrNotFound, *InputError, ErrLastAdmin.
func (s *Service) UpdateUser(ctx context.Context, name string, role *Role, password *string) (*User, error) {
	if role != nil && !role.Valid() {
		_, err := ParseRole(string(*role))
		return nil, err
	}
	var h string
	if password != nil {
		if err := checkPassword(*password); err != nil {
			return nil, err
		}
		h = s.hashPassword(*password)
	}
	now := s.utcNow()
	var out User
	err := s.write(ctx, func(tx *gorm.DB) error {
		r, err := getUser(tx, name)
		if err != nil {
			return err
		}
		if role != nil && r.Role == string(Admin) && *role != Admin {
			if err := otherAdmin(tx, r.ID); err != nil {
				return err
			}
		}
		if role != nil {
			r.Role = string(*role)
		}
		if password != nil {
			r.PasswordHash = h
			if err := tx.Exec("DELETE FROM sessions WHERE user_id = ?", r.ID).Error; err != nil {
				return err
			}
		}
		r.UpdatedAt = now
		if err := tx.Exec("UPDATE users SET role = ?, password_hash = ?, updated_at = ? WHERE id = ?",
			r.Role, r.PasswordHash, now, r.ID).Error; err != nil {
			return err
		}
		out = r.user()
		return nil
	})
	if err != nil {
		return nil, wrap("update user", err)
	}
	return &out, nil
}

// DeleteUser deletes a user with its sessions and tokens. Errors: ErrNotFound; ErrLastAdmin
// unless force (the CLI may remove the last user of a loopback server).
func (s *Service) DeleteUser(ctx context.Context, name string, force bool) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		r, err := getUser(tx, name)
		if err != nil {
			return err
		}
		if r.Role == string(Admin) && !force {
			if err := otherAdmin(tx, r.ID); err != nil {
				return err
			}
		}
		return tx.Exec("DELETE FROM users WHERE id = ?", r.ID).Error
	})
	return wrap("delete user", err)
}

// otherAdmin returns ErrLastAdmin unless an admin other than user id exists.
func otherAdmin(tx *gorm.DB, id int64) error {
	var n int64
	if err := tx.Raw("SELECT count(*) FROM users WHERE role = 'admin' AND id != ?", id).Scan(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return ErrLastAdmin
	}
	return nil
}

// wrap adds the operation to an error, leaving the package's own errors testable with errors.Is/As.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ie *InputError
	if errors.As(err, &ie) {
		return err
	}
	return fmt.Errorf("auth: %s: %w", op, err)
}
