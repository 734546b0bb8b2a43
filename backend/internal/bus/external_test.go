package bus

import (
	"crypto/tls"
	"encoding/pem"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// sampleConf is the sample external NATS configuration users start from.
func sampleConf(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "nats", "nats-server.conf")
}

// nkeyUser makes an NKey user: its public key and a file holding its seed.
func nkeyUser(t *testing.T, dir, name string) (pub, seedFile string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ = kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile = filepath.Join(dir, name+".seed")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return pub, seedFile
}

// sampleKeys sets the sample configuration's key variables to fresh users and returns their seed
// files by user ("controller", "agent-1" … "agent-3").
func sampleKeys(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	seeds := map[string]string{}
	for _, u := range []string{"controller", "agent-1", "agent-2", "agent-3"} {
		pub, seed := nkeyUser(t, dir, u)
		t.Setenv("VOLLEY_"+strings.ToUpper(strings.ReplaceAll(u, "-", "_"))+"_NKEY", pub)
		seeds[u] = seed
	}
	return seeds
}

// The sample configuration gives each agent exactly bus.SubjectsFor(its id) and the controller
// the whole account, with JetStream on: the documented permissions cannot drift from the bus's.
func TestSampleConfMirrorsSubjectsFor(t *testing.T) {
	sampleKeys(t)
	o, err := server.ProcessConfigFile(sampleConf(t))
	if err != nil {
		t.Fatal(err)
	}
	if !o.JetStream || o.MaxPayload != MaxPayload {
		t.Errorf("jetstream %v, max_payload %d (want %d)", o.JetStream, o.MaxPayload, MaxPayload)
	}
	byKey := map[string]*server.NkeyUser{}
	for _, u := range o.Nkeys {
		byKey[u.Nkey] = u
		if u.Account == nil || u.Account.Name != "VOLLEY" {
			t.Errorf("user %s in account %v", u.Nkey, u.Account)
		}
	}
	if len(byKey) != 4 {
		t.Fatalf("%d users, want the controller and three agents", len(byKey))
	}
	if ctl := byKey[os.Getenv("VOLLEY_CONTROLLER_NKEY")]; ctl == nil || ctl.Permissions != nil {
		t.Errorf("controller %+v: want every permission of the account", ctl)
	}
	for _, id := range []string{"agent-1", "agent-2", "agent-3"} {
		u := byKey[os.Getenv("VOLLEY_"+strings.ToUpper(strings.ReplaceAll(id, "-", "_"))+"_NKEY")]
		if u == nil || u.Permissions == nil {
			t.Fatalf("%s: no user with permissions", id)
		}
		want, got := SubjectsFor(id), u.Permissions
		if got.Publish == nil || !sameSet(got.Publish.Allow, want.Publish.Allow) || !sameSet(got.Publish.Deny, want.Publish.Deny) {
			t.Errorf("%s publish %+v, want allow %v deny %v", id, got.Publish, want.Publish.Allow, want.Publish.Deny)
		}
		if got.Subscribe == nil || !sameSet(got.Subscribe.Allow, want.Subscribe.Allow) || len(got.Subscribe.Deny) != 0 {
			t.Errorf("%s subscribe %+v, want %v", id, got.Subscribe, want.Subscribe.Allow)
		}
		if got.Response == nil || *got.Response != *want.Response {
			t.Errorf("%s responses %+v, want %+v", id, got.Response, want.Response)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// startSample runs nats-server in-process from the sample configuration with a temporary
// JetStream store, and returns its URL.
func startSample(t *testing.T) string {
	t.Helper()
	o, err := server.ProcessConfigFile(sampleConf(t))
	if err != nil {
		t.Fatal(err)
	}
	o.StoreDir = t.TempDir()
	return runServer(t, o)
}

// runServer runs nats-server in-process with o on a free loopback port until the test ends and
// returns its URL.
func runServer(t *testing.T, o *server.Options) string {
	t.Helper()
	o.Host, o.Port, o.NoSigs, o.NoLog = "127.0.0.1", server.RANDOM_PORT, true, true
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return s.ClientURL()
}

// On the sample configuration, the controller and agents connect with their NKey seeds; an agent
// answers the controller's requests, publishes its own snapshots and is refused another agent's
// subjects; the controller has the JetStream API; no key, a wrong key or both credentials fail.
func TestExternalConnections(t *testing.T) {
	seeds := sampleKeys(t)
	url := startSample(t)

	ctl, err := ConnectController(External{URL: url, NKeyFile: seeds["controller"]}, "controller")
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	js, err := ctl.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "t_snaps", Subjects: []string{"volley.run.*.snap.*"}, Storage: nats.MemoryStorage}); err != nil {
		t.Fatalf("the controller cannot create the snapshot stream: %v", err)
	}
	if _, err := ctl.Subscribe(SubjectHello, func(m *nats.Msg) { _ = m.Respond([]byte("welcome")) }); err != nil {
		t.Fatal(err)
	}
	_ = ctl.Flush()

	onErr, errs := violations()
	a, err := ConnectExternalAgent(External{URL: url, NKeyFile: seeds["agent-1"]}, "agent-1", onErr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Its requests use its own inbox (the only one it may subscribe to).
	if m, err := a.Request(SubjectHello, []byte("hi"), 5*time.Second); err != nil || string(m.Data) != "welcome" {
		t.Fatalf("hello: %v %v", err, m)
	}
	// It answers the controller's request on its prepare subject.
	if _, err := a.Subscribe("volley.agent.agent-1.prepare", func(m *nats.Msg) { _ = m.Respond([]byte("ready")) }); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	if m, err := ctl.Request("volley.agent.agent-1.prepare", nil, 5*time.Second); err != nil || string(m.Data) != "ready" {
		t.Fatalf("prepare: %v %v", err, m)
	}
	// Its own snapshot lands in the controller's stream; another agent's subject is refused.
	ajs, err := a.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ajs.Publish("volley.run.7.snap.agent-1", []byte("s"), nats.MsgId("7-agent-1-1")); err != nil {
		t.Fatalf("own snapshot: %v", err)
	}
	for _, subj := range []string{"volley.run.7.snap.agent-2", "volley.run.7.ctl", "volley.agent.agent-2.presence", "volley.agent.agent-1.change"} {
		_ = a.Publish(subj, []byte("x"))
		_ = a.Flush()
		expectViolation(t, errs, subj)
	}
	si, err := js.StreamInfo("t_snaps")
	if err != nil || si.State.Msgs != 1 {
		t.Fatalf("stream: %v, %+v (want the agent's one snapshot)", err, si)
	}

	// Refused: a key the server does not know, both credentials, none, a bad id.
	_, stranger := nkeyUser(t, t.TempDir(), "stranger")
	if c, err := ConnectExternalAgent(External{URL: url, NKeyFile: stranger}, "agent-2"); err == nil {
		c.Close()
		t.Error("an unknown key connected")
	}
	for _, e := range []External{{URL: url, NKeyFile: seeds["agent-2"], CredsFile: seeds["agent-2"]}, {URL: url}, {NKeyFile: seeds["agent-2"]}} {
		if c, err := ConnectExternalAgent(e, "agent-2"); err == nil {
			c.Close()
			t.Errorf("%+v connected", e)
		}
	}
	if _, err := ConnectExternalAgent(External{URL: url, NKeyFile: seeds["agent-2"]}, "Bad_ID"); err == nil {
		t.Error("a bad agent id connected")
	}
}

// A server in operator (JWT) mode: the controller and an agent connect with .creds files
// (--nats-creds); the agent's user JWT carries SubjectsFor's permissions and the server enforces
// them.
func TestExternalCreds(t *testing.T) {
	okp, _ := nkeys.CreateOperator()
	opub, _ := okp.PublicKey()
	ojwt, err := jwt.NewOperatorClaims(opub).Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	oc, err := jwt.DecodeOperatorClaims(ojwt)
	if err != nil {
		t.Fatal(err)
	}
	akp, _ := nkeys.CreateAccount()
	apub, _ := akp.PublicKey()
	ajwt, err := jwt.NewAccountClaims(apub).Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	res := &server.MemAccResolver{}
	if err := res.Store(apub, ajwt); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	creds := func(name string, perms *server.Permissions) string {
		ukp, _ := nkeys.CreateUser()
		upub, _ := ukp.PublicKey()
		useed, _ := ukp.Seed()
		uc := jwt.NewUserClaims(upub)
		if perms != nil {
			uc.Pub.Allow.Add(perms.Publish.Allow...)
			uc.Pub.Deny.Add(perms.Publish.Deny...)
			uc.Sub.Allow.Add(perms.Subscribe.Allow...)
			uc.Resp = &jwt.ResponsePermission{MaxMsgs: perms.Response.MaxMsgs, Expires: perms.Response.Expires}
		}
		ujwt, err := uc.Encode(akp)
		if err != nil {
			t.Fatal(err)
		}
		b, err := jwt.FormatUserConfig(ujwt, useed)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".creds")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	url := runServer(t, &server.Options{TrustedOperators: []*jwt.OperatorClaims{oc}, AccountResolver: res})

	ctl, err := ConnectController(External{URL: url, CredsFile: creds("controller", nil)}, "controller")
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if _, err := ctl.Subscribe(SubjectHello, func(m *nats.Msg) { _ = m.Respond([]byte("welcome")) }); err != nil {
		t.Fatal(err)
	}
	_ = ctl.Flush()
	onErr, errs := violations()
	a, err := ConnectExternalAgent(External{URL: url, CredsFile: creds("agent-1", SubjectsFor("agent-1"))}, "agent-1", onErr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if m, err := a.Request(SubjectHello, []byte("hi"), 5*time.Second); err != nil || string(m.Data) != "welcome" {
		t.Fatalf("hello: %v %v", err, m)
	}
	for _, subj := range []string{"volley.agent.agent-2.presence", "volley.agent.agent-1.change"} {
		_ = a.Publish(subj, []byte("x"))
		_ = a.Flush()
		expectViolation(t, errs, subj)
	}
	if c, err := ConnectController(External{URL: url, CredsFile: filepath.Join(dir, "missing.creds")}, "controller"); err == nil {
		c.Close()
		t.Error("a missing creds file connected")
	}
}

// A TLS external NATS with its own CA: --nats-ca's file lets the controller and agents check the
// server's certificate; without it (the system's CAs) the connection is refused.
func TestExternalTLSWithCA(t *testing.T) {
	seeds := sampleKeys(t)
	cert, _, err := selfSigned("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := server.ProcessConfigFile(sampleConf(t))
	if err != nil {
		t.Fatal(err)
	}
	o.StoreDir = t.TempDir()
	o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	o.TLS, o.TLSTimeout = true, 5
	url := runServer(t, o)

	ctl, err := ConnectController(External{URL: url, NKeyFile: seeds["controller"], CAFile: ca}, "controller")
	if err != nil {
		t.Fatalf("controller with the CA: %v", err)
	}
	ctl.Close()
	a, err := ConnectExternalAgent(External{URL: url, NKeyFile: seeds["agent-1"], CAFile: ca}, "agent-1")
	if err != nil {
		t.Fatalf("agent with the CA: %v", err)
	}
	if !a.TLSRequired() {
		t.Error("the agent's connection is not TLS")
	}
	a.Close()
	c, err := ConnectExternalAgent(External{URL: strings.Replace(url, "nats://", "tls://", 1), NKeyFile: seeds["agent-1"]}, "agent-1")
	if err == nil {
		c.Close()
		t.Error("connected without the CA: the server's certificate was not checked")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
}
