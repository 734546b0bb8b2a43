package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams is an argon2id cost (RFC 9106). Stored hashes carry their own parameters, so a
// change applies to new and changed passwords only.
type HashParams struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// DefaultHashParams is OWASP's argon2id minimum (19 MiB, 2 passes, 1 lane): ≈ 30–60 ms a hash on
// one core of a small VM.
var DefaultHashParams = HashParams{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
	// MinPassword and MaxPassword bound a password's length in bytes.
	MinPassword = 8
	MaxPassword = 256
)

var b64 = base64.RawStdEncoding

// hash returns the PHC string $argon2id$v=19$m=…,t=…,p=…$salt$key.
func (p HashParams) hash(password []byte) string {
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (it panics if the OS source is broken)
	key := argon2.IDKey(password, salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// verifyHash reports whether password matches the PHC string encoded (in constant time).
func verifyHash(encoded string, password []byte) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false
	}
	var p HashParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil ||
		p.Time == 0 || p.Threads == 0 || p.MemoryKiB > 1<<21 {
		return false
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey(password, salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// checkPassword validates a new password's length.
func checkPassword(pw string) error {
	switch {
	case len(pw) < MinPassword:
		return &InputError{Field: "password", Msg: fmt.Sprintf("at least %d characters", MinPassword)}
	case len(pw) > MaxPassword:
		return &InputError{Field: "password", Msg: fmt.Sprintf("at most %d bytes", MaxPassword)}
	}
	return nil
}

// hashPassword hashes under the service's concurrency bound.
func (s *Service) hashPassword(pw string) string {
	s.hashing <- struct{}{}
	defer func() { <-s.hashing }()
	return s.hash.hash([]byte(pw))
}

func (s *Service) verifyPassword(encoded, pw string) bool {
	s.hashing <- struct{}{}
	defer func() { <-s.hashing }()
	return verifyHash(encoded, []byte(pw))
}
