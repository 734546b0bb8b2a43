// Package bus is Volley's only importer of NATS (nats-server and nats.go): the broker that links
// the controller (`volley serve`) and its agents, embedded in the binary.
//
// By default the embedded server opens no port at all (nats-server's DontListen): the controller
// and a single-machine run's in-process agent talk over in-process connections. With an agents
// listener (Config.AgentsListen) it also accepts remote agents over TLS on that address, with a
// certificate generated at start (or kept in Config.StateDir, so the token survives restarts); agents authenticate with a join token (the secret and the
// certificate's SHA-256 fingerprint, as kubeadm and k3s join tokens carry a CA hash), which lets
// them pin the certificate without a CA.
//
// Every connection is authenticated by the bus itself (nats-server's custom client
// authentication): the controller with a secret that never leaves the process; an agent with the
// join secret and its agent id as user name. Each agent gets permissions for its own subjects only
// (SubjectsFor): it can publish its presence, events and snapshots, answer requests sent to it,
// and subscribe to its own and its runs' control subjects — never another agent's subjects, never
// the controller's, never the JetStream API. A second connection with an id already connected is
// refused. No `no_auth_user`, no anonymous access.
package bus

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Config configures the embedded broker.
type Config struct {
	// AgentsListen is the host:port of the TLS listener for remote agents; empty (the default):
	// no listener, no port.
	AgentsListen string
	// StoreDir is where JetStream keeps its file store (snapshots survive a crash); empty: a
	// memory store (tests, single-machine runs without durability needs).
	StoreDir string
	// Secret is the join secret; empty: a random 32-byte one made at start (or the StateDir's).
	Secret string
	// StateDir keeps the agents listener's certificate, key and join secret (IdentityFile), made
	// on the first start with it, so the join token stays the same across restarts; empty: new
	// ones at every start. Only used with AgentsListen; a set Secret overrides the file's.
	StateDir string
	// Log receives a warning for each refused connection (wrong join secret, invalid or taken
	// agent id), rate-limited (Refusals); nil: not logged.
	Log *slog.Logger
}

// Bus is a running embedded broker.
type Bus struct {
	srv        *server.Server
	secret     string
	ctlSecret  string
	cert       tls.Certificate
	fp         [32]byte
	agentsAddr string

	refusals *Refusals
	log      *slog.Logger // Config.Log (nil: none)
	fatal    chan error   // the broker's first fatal error (brokerLog.Fatalf), which Start waits for

	mu     sync.Mutex
	agents map[string]uint64 // agent id → its connection's client id, while connected
}

// controllerUser is the controller's user name; agents cannot take it (an agent id is checked
// against agentID, which it does not match).
const controllerUser = "$volley-controller"

// agentID is the form of an agent id: the user name an agent connects with and the token its
// subjects carry.
var agentID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidAgentID reports whether id can name an agent (1–63 of a-z, 0-9, '-', not starting with '-').
func ValidAgentID(id string) bool { return agentID.MatchString(id) }

// Start starts the embedded broker and waits until it accepts connections (≤ 10 s).
func Start(cfg Config) (*Bus, error) {
	b := &Bus{secret: cfg.Secret, agents: map[string]uint64{}, refusals: NewRefusals(cfg.Log), log: cfg.Log,
		fatal: make(chan error, 1)}
	var err error
	if b.secret == "" {
		if b.secret, err = randomSecret(); err != nil {
			return nil, err
		}
	}
	if b.ctlSecret, err = randomSecret(); err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName:                 "volley",
		DontListen:                 cfg.AgentsListen == "",
		NoSigs:                     true,
		NoLog:                      true,
		JetStream:                  true,
		StoreDir:                   cfg.StoreDir,
		CustomClientAuthentication: (*authenticator)(b),
		MaxPayload:                 MaxPayload,
		// Agents on a slow link must not stall the broker: a slow consumer is cut, not waited for.
		WriteDeadline: 10 * time.Second,
	}
	if cfg.StoreDir == "" {
		opts.JetStreamMaxStore = 0
		opts.StoreDir = ""
		opts.JetStreamMaxMemory = 256 << 20
	}
	if cfg.AgentsListen != "" {
		host, port, err := net.SplitHostPort(cfg.AgentsListen)
		if err != nil {
			return nil, fmt.Errorf("bus: agents listen address %q: %w", cfg.AgentsListen, err)
		}
		opts.Host = host
		if opts.Port, err = parsePort(port); err != nil {
			return nil, fmt.Errorf("bus: agents listen address %q: %w", cfg.AgentsListen, err)
		}
		if opts.Port == 0 {
			opts.Port = server.RANDOM_PORT // nats-server reads port 0 as its default, 4222
		}
		if cfg.StateDir != "" {
			var secret string
			if b.cert, b.fp, secret, err = loadIdentity(cfg.StateDir, host); err != nil {
				return nil, err
			}
			if cfg.Secret == "" {
				b.secret = secret
			}
		} else if b.cert, b.fp, err = selfSigned(host); err != nil {
			return nil, err
		}
		opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{b.cert}, MinVersion: tls.VersionTLS13}
		opts.TLS = true
		opts.TLSTimeout = 5
	} else {
		opts.Port = server.RANDOM_PORT // never used: DontListen
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	srv.SetLoggerV2(brokerLog{b}, true, false, false) // debug: brokerLog.Debugf
	srv.Start()
	// The broker reports a failure to start (the agents listener's port taken, JetStream's store
	// unusable) only to its logger (brokerLog.Fatalf), and then never becomes ready: wait for
	// either, so the bind error comes at once rather than after the 10 s.
	for deadline := time.Now().Add(10 * time.Second); !srv.ReadyForConnections(50 * time.Millisecond); {
		select {
		case err := <-b.fatal:
			srv.Shutdown()
			return nil, fmt.Errorf("bus: the embedded broker could not start: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			return nil, errors.New("bus: the embedded broker did not start within 10 s")
		}
	}
	b.srv = srv
	if cfg.AgentsListen != "" {
		b.agentsAddr = srv.Addr().String()
	}
	return b, nil
}

// MaxPayload bounds one message (a second's snapshot with its encoded histograms is ≤ 64 KiB at
// 100 000 req/s; a plan with its CSV data is bounded by the plan's own limits).
const MaxPayload = 8 << 20

// Close shuts the broker down and waits for it.
func (b *Bus) Close() {
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
}

// AgentsAddr is the agents listener's address (host:port as bound), "" without one.
func (b *Bus) AgentsAddr() string { return b.agentsAddr }

// Listening reports whether the broker has any network listener (false without AgentsListen).
func (b *Bus) Listening() bool { return b.agentsAddr != "" }

// Controller connects the controller in-process, with every permission. name labels the
// connection (e.g. "controller").
func (b *Bus) Controller(name string, opts ...nats.Option) (*nats.Conn, error) {
	o := append([]nats.Option{nats.InProcessServer(b.srv), nats.UserInfo(controllerUser, b.ctlSecret), nats.Name(name)}, opts...)
	return nats.Connect("", o...)
}

// LocalAgent connects an agent in-process (a single-machine run's agent: no port, no TLS), with
// the same per-agent permissions as a remote one.
func (b *Bus) LocalAgent(id string, opts ...nats.Option) (*nats.Conn, error) {
	if !ValidAgentID(id) {
		return nil, fmt.Errorf("bus: %q is not an agent id", id)
	}
	o := append([]nats.Option{nats.InProcessServer(b.srv), nats.UserInfo(id, b.secret), nats.Name("agent " + id),
		nats.CustomInboxPrefix(InboxPrefix(id))}, opts...)
	return nats.Connect("", o...)
}

// TokenPrefix starts every join token: a string starting with it is a secret (never echo it).
const TokenPrefix = "vly1."

// JoinToken is what a remote agent needs to join: "vly1.<secret>.<sha256 of the listener's
// certificate, hex>". Empty without an agents listener.
func (b *Bus) JoinToken() string {
	if b.agentsAddr == "" {
		return ""
	}
	return TokenPrefix + b.secret + "." + hex.EncodeToString(b.fp[:])
}

// Token is a parsed join token.
type Token struct {
	Secret      string
	Fingerprint [32]byte // SHA-256 of the broker certificate's DER
}

// ParseToken parses a join token (JoinToken's form); the error says what is wrong without
// repeating the secret.
func ParseToken(s string) (Token, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 3 || parts[0]+"." != TokenPrefix {
		return Token{}, errors.New(`a join token has the form vly1.<secret>.<fingerprint> (volley serve prints it; GET /api/agents/token)`)
	}
	if len(parts[1]) < 16 {
		return Token{}, errors.New("the join token's secret is too short")
	}
	var t Token
	fp, err := hex.DecodeString(parts[2])
	if err != nil || len(fp) != len(t.Fingerprint) {
		return Token{}, errors.New("the join token's fingerprint is not 64 hex digits")
	}
	t.Secret = parts[1]
	copy(t.Fingerprint[:], fp)
	return t, nil
}

// AgentTLS is the TLS configuration an agent dials the broker with: the certificate is accepted
// only when its SHA-256 fingerprint is the token's (no CA, no host name check: the pin is the
// trust).
func (t Token) AgentTLS() *tls.Config {
	want := t.Fingerprint
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // replaced by the pin below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the broker sent no certificate")
			}
			got := sha256.Sum256(raw[0])
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				return &CertMismatchError{Got: got, Want: want}
			}
			return nil
		},
	}
}

// CertMismatchError is an agent's refusal of a broker whose certificate is not the one its join
// token pins (AgentTLS): another server, or the controller's listener with a new certificate (it
// restarted without its state, or it was a `volley run --agents` that ended). The agent's own
// refusal, never sent to the broker; nats.go hands it back wrapped (errors.As finds it).
type CertMismatchError struct{ Got, Want [32]byte }

func (e *CertMismatchError) Error() string {
	return fmt.Sprintf("the broker's certificate (sha256 %x…) is not the join token's (%x…)", e.Got[:4], e.Want[:4])
}

// ConnectAgent connects a remote agent to url (nats://host:port) with a join token.
func ConnectAgent(url, id string, t Token, opts ...nats.Option) (*nats.Conn, error) {
	if !ValidAgentID(id) {
		return nil, fmt.Errorf("bus: %q is not an agent id", id)
	}
	o := append([]nats.Option{nats.Secure(t.AgentTLS()), nats.UserInfo(id, t.Secret), nats.Name("agent " + id),
		nats.CustomInboxPrefix(InboxPrefix(id))}, opts...)
	return nats.Connect(url, o...)
}

// InboxPrefix is agent id's reply-inbox prefix: the only inbox it may subscribe to.
func InboxPrefix(id string) string { return "_INBOX_" + id }

// SubjectsFor are agent id's permissions. Publish: the hello and clock requests, its own subject
// tree but for its change subject (live control: the controller's alone, cluster.ChangeSubject),
// its runs' snapshots (JetStream, with a per-second message id) and its presence key; and
// replies to requests it received (one each, within a minute). Subscribe: its own subject tree,
// every run's broadcast control subject, and its own inbox.
func SubjectsFor(id string) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"volley.ctl.hello", "volley.ctl.time",
			"volley.agent." + id + ".>",
			"volley.run.*.snap." + id,
			"$KV.volley_agents." + id,
		}, Deny: []string{"volley.agent." + id + ".change"}},
		Subscribe: &server.SubjectPermission{Allow: []string{
			"volley.agent." + id + ".>",
			"volley.run.*.ctl",
			InboxPrefix(id) + ".>",
		}},
		Response: &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute},
	}
}

// authenticator is the bus's client authentication (server.Authentication).
type authenticator Bus

func (a *authenticator) Check(c server.ClientAuthentication) bool {
	b := (*Bus)(a)
	why, user := b.check(c)
	if why == "" {
		return true
	}
	remote := ""
	if addr := c.RemoteAddress(); addr != nil {
		remote = addr.String()
	}
	b.refusals.Refused("agent connection refused", "remote", remote, "agent", clipID(user), "reason", why)
	return false
}

// check authenticates connection c and registers its user: "" when it may connect, else why not
// (never the secret), with the user name it gave.
func (b *Bus) check(c server.ClientAuthentication) (why, user string) {
	if c.Kind() != server.CLIENT {
		return "not a client connection", ""
	}
	o := c.GetOpts()
	switch {
	case o == nil:
		return "no connect options", ""
	case o.Token != "":
		return "a token instead of an agent id and the join secret (is the join token given whole, with --token?)", ""
	case o.Username == controllerUser:
		if !equal(o.Password, b.ctlSecret) {
			return "wrong controller secret", o.Username
		}
		c.RegisterUser(&server.User{Username: controllerUser})
		return "", o.Username
	case !ValidAgentID(o.Username):
		return "not an agent id (1–63 of a-z, 0-9, '-')", o.Username
	case !equal(o.Password, b.secret):
		return "wrong join secret (the join token changes at each start without --agents-state)", o.Username
	case !b.claim(o.Username, c.GetID()):
		return "an agent with this id is already connected (give each agent its own --id)", o.Username
	}
	c.RegisterUser(&server.User{Username: o.Username, Permissions: SubjectsFor(o.Username)})
	return "", o.Username
}

// claim records agent id as connected on client cid, unless another live connection holds it.
func (b *Bus) claim(id string, cid uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.agents[id]; ok && old != cid && b.connected(old) {
		return false
	}
	b.agents[id] = cid
	return true
}

// connected reports whether client cid still has a connection.
func (b *Bus) connected(cid uint64) bool {
	if b.srv == nil {
		return false
	}
	cz, err := b.srv.Connz(&server.ConnzOptions{CID: cid})
	return err == nil && len(cz.Conns) > 0
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func randomSecret() (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("bus: random secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(buf), nil
}

func parsePort(s string) (int, error) {
	var p int
	if _, err := fmt.Sscanf(s, "%d", &p); err != nil || p < 0 || p > 65535 || fmt.Sprint(p) != s {
		return 0, fmt.Errorf("port %q is not 0–65535", s)
	}
	return p, nil
}

// selfSigned makes the listener's certificate (ECDSA P-256, valid ten years, the listen host as
// its name) and its SHA-256 fingerprint.
func selfSigned(host string) (tls.Certificate, [32]byte, error) {
	var fp [32]byte
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fp, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return tls.Certificate{}, fp, err
	}
	tpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "volley agents broker"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tpl.IPAddresses = []net.IP{ip}
	} else if host != "" {
		tpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fp, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, sha256.Sum256(der), nil
}
