package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHTTP2AgainstNginx runs the volley binary with http.version "2" against Debian's nginx
// serving HTTP/2 over TLS (a self-signed certificate made here, insecure_skip_verify), and with
// "h2c" against nginx's cleartext HTTP/2 listener: Volley's request count equals nginx's
// access-log lines, every one of which nginx logged as HTTP/2.0, and the summary's protocols say h2.
func TestHTTP2AgainstNginx(t *testing.T) {
	requireTool(t, nginxPath)
	tlsPort, h2cPort := freePort(t), freePort(t)
	ng := startNginx(t, func(dir, www string) string {
		cert, key := selfSigned(t, dir)
		// nginx 1.22 (Debian 12) takes http2 on the listen line; "http2 on;" is 1.25.1+
		return fmt.Sprintf(`    server {
        listen 127.0.0.1:%d ssl http2;
        ssl_certificate %s;
        ssl_certificate_key %s;
        root %s;
        location / { }
    }
    server {
        listen 127.0.0.1:%d http2;
        root %s;
        location / { }
    }
`, tlsPort, cert, key, www, h2cPort, www)
	})
	waitTCP(t, fmt.Sprintf("127.0.0.1:%d", tlsPort), ng.proc, 10*time.Second)
	dir := t.TempDir()
	total := 0 // access-log lines so far
	for _, tc := range []struct{ version, url string }{
		{"2", fmt.Sprintf("https://127.0.0.1:%d/", tlsPort)},
		{"h2c", fmt.Sprintf("http://127.0.0.1:%d/", h2cPort)},
	} {
		const vus, iters = 5, 40
		planPath := filepath.Join(dir, "plan-"+tc.version+".json")
		outPath := filepath.Join(dir, "summary-"+tc.version+".json")
		writeJSON(t, planPath, map[string]any{
			"name": "h2 " + tc.version,
			"requests": []map[string]any{{"method": "GET", "url": tc.url,
				"checks": []map[string]any{{"type": "body", "op": "contains", "value": "Volley e2e target"}}}},
			"load": map[string]any{"executor": "per-vu-iterations", "vus": vus, "iterations": iters},
			"http": map[string]any{"version": tc.version, "insecure_skip_verify": true, "timeout": "5s"},
		})
		code, _, stderr := runCLI(t, 60*time.Second, "run", planPath, "--out", outPath, "--quiet")
		if code != 0 {
			t.Fatalf("version %s: exit %d; stderr:\n%s", tc.version, code, stderr)
		}
		b, err := os.ReadFile(outPath)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Requests   int64            `json:"requests"`
			Errors     int64            `json:"errors"`
			ErrorKinds map[string]int64 `json:"error_kinds"`
			Protocols  map[string]int64 `json:"protocols"`
			BytesIn    int64            `json:"bytes_in"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		now := ng.loggedRequests(t, 300*time.Millisecond, 10*time.Second)
		logged := now - total
		total = now
		if s.Requests != vus*iters || int64(logged) != s.Requests || s.Errors != 0 {
			t.Errorf("version %s: volley %d requests (kinds %v), nginx logged %d", tc.version, s.Requests, s.ErrorKinds, logged)
		}
		if len(s.Protocols) != 1 || s.Protocols["h2"] != s.Requests {
			t.Errorf("version %s: protocols %v", tc.version, s.Protocols)
		}
		t.Logf("version %s: %d requests, nginx %d lines, protocols %v, bytes_in %d", tc.version, s.Requests, logged, s.Protocols, s.BytesIn)
	}
	b, err := os.ReadFile(ng.accessLog)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for _, l := range lines {
		if !bytes.Contains(l, []byte(`"GET / HTTP/2.0"`)) {
			t.Fatalf("nginx logged a request that is not HTTP/2: %s", l)
		}
	}
}

// selfSigned writes a fresh self-signed certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "volley-e2e"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}
