package bus

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// IdentityFile is the file in Config.StateDir that keeps the agents listener's identity: its
// certificate, its private key and the join secret, as PEM blocks (CERTIFICATE, PRIVATE KEY in
// PKCS #8, VOLLEY JOIN SECRET). Delete it to change the join token (every agent then needs the
// new one).
const IdentityFile = "agents-identity.pem"

const pemSecret = "VOLLEY JOIN SECRET"

// secretForm is a join secret as randomSecret makes it (base64url) and a token can carry it
// (no '.', at least the 16 characters ParseToken wants).
var secretForm = regexp.MustCompile(`^[A-Za-z0-9_-]{16,}$`)

// loadIdentity reads the listener's certificate (with its SHA-256 fingerprint) and the join
// secret from dir/IdentityFile, or, when there is no such file, makes them (selfSigned(host),
// randomSecret) and writes it (mode 0600; dir is created 0700). A file that is unreadable,
// incomplete, expired or whose key is not the certificate's is an error naming the file: it is
// never silently replaced, which would change the token under every agent.
func loadIdentity(dir, host string) (tls.Certificate, [32]byte, string, error) {
	var fp [32]byte
	file := filepath.Join(dir, IdentityFile)
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return makeIdentity(dir, file, host)
	}
	if err != nil {
		return tls.Certificate{}, fp, "", fmt.Errorf("bus: agents identity: %w", err)
	}
	bad := func(why string) error {
		return fmt.Errorf("bus: agents identity %s: %s (delete it to make a new one; agents then need the new join token)", file, why)
	}
	var certPEM, keyPEM []byte
	secret := ""
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		switch blk.Type {
		case "CERTIFICATE":
			certPEM = pem.EncodeToMemory(blk)
		case "PRIVATE KEY":
			keyPEM = pem.EncodeToMemory(blk)
		case pemSecret:
			secret = string(blk.Bytes)
		}
	}
	if certPEM == nil || keyPEM == nil || secret == "" {
		return tls.Certificate{}, fp, "", bad("want a CERTIFICATE, a PRIVATE KEY and a " + pemSecret + " block")
	}
	if !secretForm.MatchString(secret) {
		return tls.Certificate{}, fp, "", bad("the join secret is not 16 or more of A-Z, a-z, 0-9, '-', '_'")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fp, "", bad(err.Error())
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return tls.Certificate{}, fp, "", bad(err.Error())
	}
	if time.Now().After(leaf.NotAfter) {
		return tls.Certificate{}, fp, "", bad("the certificate expired on " + leaf.NotAfter.UTC().Format(time.DateOnly))
	}
	return cert, sha256.Sum256(cert.Certificate[0]), secret, nil
}

func makeIdentity(dir, file, host string) (tls.Certificate, [32]byte, string, error) {
	cert, fp, err := selfSigned(host)
	if err != nil {
		return tls.Certificate{}, fp, "", err
	}
	secret, err := randomSecret()
	if err != nil {
		return tls.Certificate{}, fp, "", err
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return tls.Certificate{}, fp, "", fmt.Errorf("bus: agents identity: %w", err)
	}
	var out []byte
	for _, blk := range []*pem.Block{{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}, {Type: "PRIVATE KEY", Bytes: key},
		{Type: pemSecret, Bytes: []byte(secret)}} {
		out = append(out, pem.EncodeToMemory(blk)...)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, fp, "", fmt.Errorf("bus: agents identity: %w", err)
	}
	if err := writeFileAtomic(file, out); err != nil {
		return tls.Certificate{}, fp, "", fmt.Errorf("bus: agents identity: %w", err)
	}
	return cert, fp, secret, nil
}

// WriteJoinToken writes JoinToken and a newline to file (mode 0600), replacing it atomically, so
// an agent that reads it (volley agent --token-file) sees the old token or the new one, never a
// part. Without an agents listener it is an error.
func (b *Bus) WriteJoinToken(file string) error {
	tok := b.JoinToken()
	if tok == "" {
		return errors.New("bus: no agents listener, no join token")
	}
	if err := writeFileAtomic(file, []byte(tok+"\n")); err != nil {
		return fmt.Errorf("bus: join token file: %w", err)
	}
	return nil
}

// writeFileAtomic writes data to file (mode 0600) through a temporary file in the same directory
// that is synced and renamed over it: a crash leaves the old file or the new one.
func writeFileAtomic(file string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), file)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
