package bus

import (
	"errors"
	"fmt"
	"strings"
)

// brokerLog is the embedded broker's logger (server.Logger). The broker's own lines stay out of
// Volley's log (its notices of every start and client), but for a connection to the agents
// listener that fails its TLS handshake — a plain (non-TLS) NATS client, a port scanner, an
// agent given a URL of another scheme, an agent whose join token pins an earlier certificate —
// which is logged as a refused agent connection with a hint by its reason (handshakeHint; rate-
// limited with the others, Refusals), and a fatal error, which is logged as such.
type brokerLog struct{ b *Bus }

func (l brokerLog) Noticef(string, ...any) {}
func (l brokerLog) Warnf(string, ...any)   {}
func (l brokerLog) Tracef(string, ...any)  {}

// Debugf: the broker logs a non-TLS client's failed handshake (a probe, in its view) at debug
// level, other failed handshakes as errors. Debug logging is on for this alone; every other line
// is dropped before it is formatted.
func (l brokerLog) Debugf(format string, v ...any) { l.Errorf(format, v...) }

func (l brokerLog) Errorf(format string, v ...any) {
	if !strings.Contains(format, "TLS handshake error") {
		return
	}
	// "127.0.0.1:51234 - cid:7 - TLS handshake error: tls: first record does not look like a TLS handshake"
	msg := fmt.Sprintf(format, v...)
	remote, reason := "", msg
	if i := strings.Index(msg, " - "); i > 0 {
		remote = msg[:i]
		if j := strings.Index(msg[i+3:], " - "); j >= 0 {
			reason = msg[i+3+j+3:]
		}
	}
	hint := handshakeHint(reason)
	if len(reason) > 200 {
		reason = strings.ToValidUTF8(reason[:200], "") + "…"
	}
	l.b.refusals.Refused("agent connection refused", "remote", clipID(remote), "reason", reason+" ("+hint+")")
}

// StaleTokenHint is what a join token that does not pin the listener's certificate means, in the
// same words on both sides: in the controller's log when an agent refuses the listener's
// certificate (brokerLog), and in the agent's error when its check of the certificate fails
// (*CertMismatchError; internal/agent).
const StaleTokenHint = "the join token is for another (earlier) certificate of this controller, as after a restart " +
	"without its --agents-state or with a new one: take the current token from volley serve's log or GET /api/agents/token"

// handshakeHint says what a failed handshake on the agents listener most likely means, by the
// broker's reason: a first record that is not TLS is a plain client (a NATS client without TLS,
// a probe); a certificate alert from the client is an agent that refused the listener's
// certificate, which its join token does not pin (ConnectAgent sends "bad certificate"; a client
// checking a CA says "unknown certificate authority").
func handshakeHint(reason string) string {
	if _, alert, ok := strings.Cut(reason, "remote error: tls: "); ok && strings.Contains(alert, "certificate") {
		return "the agent refused this listener's certificate: " + StaleTokenHint
	}
	return "the agents listener takes TLS only: volley agent with the join token"
}

// Fatalf: the broker could not go on (e.g. "Error listening on port: 127.0.0.1:4222, \"listen
// tcp 127.0.0.1:4222: bind: address already in use\""). The first one is handed to Start, which
// returns it; every one is logged.
func (l brokerLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	select {
	case l.b.fatal <- errors.New(msg):
	default:
	}
	if l.b.log != nil {
		l.b.log.Error("embedded broker: " + msg)
	}
}
