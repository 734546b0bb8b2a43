package bus

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// External is a NATS server or cluster run by the user (`--nats URL` with `--nats-creds` or an
// NKey seed) that the controller and its agents use instead of the embedded broker. The server's
// own configuration then authenticates and authorizes: the controller's user needs the whole
// account (JetStream included), each agent's user exactly SubjectsFor(its id) — the sample
// deploy/nats/nats-server.conf and docs/scale-out.md spell it out.
type External struct {
	// URL is nats://host:port (tls://… for TLS with the system's CAs); a cluster's seed servers
	// separated by commas.
	URL string
	// CredsFile is a .creds file (a user JWT and its NKey seed: nats.UserCredentials), for a
	// server in operator/JWT mode.
	CredsFile string
	// NKeyFile is a file holding an NKey user seed (SU…: nats.NkeyOptionFromSeed), for users
	// listed by public key in the server's configuration file.
	NKeyFile string
	// CAFile is a PEM file of the CA certificates the server's TLS certificate is checked
	// against (nats.RootCAs; TLS then required); empty: the system's CAs for a tls:// URL.
	CAFile string
}

// Check reports a missing URL or credential: exactly one of CredsFile and NKeyFile (the bus
// never connects anonymously).
func (e External) Check() error {
	if strings.TrimSpace(e.URL) == "" {
		return errors.New("an external NATS needs its URL (nats://HOST:PORT)")
	}
	switch {
	case e.CredsFile != "" && e.NKeyFile != "":
		return errors.New("give a creds file or an NKey seed file, not both")
	case e.CredsFile == "" && e.NKeyFile == "":
		return errors.New("an external NATS needs credentials: a creds file (JWT) or an NKey seed file")
	}
	return nil
}

// auth is the connection options that authenticate with e's credential (and check the server's
// certificate against CAFile). A creds file is read at each (re)connect by nats.go, a seed and
// the CA file now (a missing or bad file fails here).
func (e External) auth() ([]nats.Option, error) {
	if err := e.Check(); err != nil {
		return nil, err
	}
	var o []nats.Option
	if e.CAFile != "" {
		o = append(o, nats.RootCAs(e.CAFile))
	}
	if e.CredsFile != "" {
		return append(o, nats.UserCredentials(e.CredsFile)), nil
	}
	seed, err := nats.NkeyOptionFromSeed(e.NKeyFile)
	if err != nil {
		return nil, fmt.Errorf("NKey seed %s: %w", e.NKeyFile, err)
	}
	return append(o, seed), nil
}

// ConnectController connects the controller to the external server. name labels the connection.
// opts come after the bus's own (a caller may add handlers, reconnect settings).
func ConnectController(e External, name string, opts ...nats.Option) (*nats.Conn, error) {
	a, err := e.auth()
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	o := append(append(a, nats.Name(name), nats.MaxReconnects(-1)), opts...)
	return nats.Connect(e.URL, o...)
}

// ConnectExternalAgent connects agent id to the external server with the same options as an
// agent of the embedded broker (ConnectAgent): its name, and its reply inbox under
// InboxPrefix(id) — the only inbox its permissions (SubjectsFor) let it subscribe to.
func ConnectExternalAgent(e External, id string, opts ...nats.Option) (*nats.Conn, error) {
	if !ValidAgentID(id) {
		return nil, fmt.Errorf("bus: %q is not an agent id", id)
	}
	a, err := e.auth()
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	o := append(append(a, nats.Name("agent "+id), nats.CustomInboxPrefix(InboxPrefix(id))), opts...)
	return nats.Connect(e.URL, o...)
}
