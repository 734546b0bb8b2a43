// Package agent is the `volley agent` loop: it joins the controller's broker with a join token,
// says hello (refused on an incompatible protocol or histogram geometry) and publishes its
// presence every bus.PresenceInterval. It reconnects forever (but to a listener whose certificate
// stays another than its token's: Config.CertGiveUp); after a reconnect, or when a
// controller that does not know it asks (bus.HelloAgainSubject), it says hello again.
//
// It runs its share of a plan when the controller asks (run.go; docs/scale-out.md): Prepare →
// Ready, start at one instant on the controller's clock, one JetStream snapshot per second
// (spooled in order while the broker is away, spool.go) and a final one; it fences itself (stops
// its load) when the broker has acknowledged nothing for the run's fence_after. An agent in the
// controller's process (Config.Handoff: a single-machine run's) hands its snapshots over in
// memory instead, and neither probes the clock nor fences.
package agent

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/procstat"
)

// Config is an agent's identity and where it joins.
type Config struct {
	URL     string // nats://host:port of the controller's agents listener
	Token   bus.Token
	ID      string // agent id (bus.ValidAgentID)
	Labels  map[string]string
	Weight  int    // share in a weighted split; 0: its cores
	Version string // this binary's version
	Log     *slog.Logger
	// Hello overrides the hello sent (tests of refusals); nil: the agent's own.
	Hello func(bus.Hello) bus.Hello
	// AllowTargets is the agent's --allow-target list: HOST or HOST:PORT entries (see Targets for
	// the matching rule); a plan aimed at any other host is refused at Prepare. Empty: no
	// restriction beyond the engine's built-in target policy (netpolicy.Default).
	AllowTargets []string
	// ClockOffset moves this agent's wall clock by that much (tests of the synchronized start: an
	// agent whose clock is 2 s ahead must still start with the others); 0 in production.
	ClockOffset time.Duration
	// Policy is the target policy the agent's engine enforces at connect time (and a plan is
	// checked against at Prepare) in place of netpolicy.Default: a single-machine run's
	// in-process agent takes the server's (localagent). nil: netpolicy.Default. AllowTargets,
	// when given, takes the place of either.
	Policy *netpolicy.Policy
	// Connect connects to the broker with the agent's options (reconnects, handlers); nil:
	// bus.ConnectAgent(URL, ID, Token, …). An external NATS: bus.ConnectExternalAgent.
	Connect func(opts ...nats.Option) (*nats.Conn, error)
	// Handoff makes the agent one in the controller's process (localagent): its snapshots go to
	// the coordinator in memory (cluster.Handoff; the run's RunSpec.Handoff is the same one) instead
	// of JSON on the snapshot stream, it probes no clock (one process, one clock: offset and round
	// trip 0) and watches no lease (it cannot be cut off from its own process, so it never
	// fences). Prepare, start, stop and live changes still come over the broker. nil: a remote agent.
	Handoff *cluster.Handoff
	// CertGiveUp is how long, once joined, the agents listener may keep presenting another
	// certificate than the join token's (every reconnection attempt in a row refused for it)
	// before Run gives up with a *CertGoneError; 0: DefaultCertGiveUp. Only with the pinned TLS
	// of a join token (Connect nil).
	CertGiveUp time.Duration
}

// DefaultCertGiveUp is Config.CertGiveUp's default. A controller restarted with its state
// (--agents-state) keeps its certificate, so a mismatch that lasts is not transient: the token
// will never join again. Another process briefly on the port could be, hence not at once.
const DefaultCertGiveUp = 30 * time.Second

// CertGoneError is Run's end when the listener has presented another certificate than the join
// token's for Config.CertGiveUp: the token will not join it again.
type CertGoneError struct {
	URL  string
	For  time.Duration
	Last *bus.CertMismatchError
}

func (e *CertGoneError) Error() string {
	return fmt.Sprintf("giving up on %s: %v, for %s (%s)", e.URL, e.Last, e.For, hintCertMismatch)
}

func (e *CertGoneError) Unwrap() error { return e.Last }

// Hints for an agent that cannot join, by the broker's or its own refusal (joinHint).
const (
	// the same words as the controller's log when it sees this agent refuse its certificate
	hintCertMismatch  = bus.StaleTokenHint + "; or this is not that controller (another server, a volley run --agents that has ended)"
	hintAuthorization = "a wrong join secret, or an agent with this id is already connected: the controller's log names which; " +
		"give each agent its own --id"
	hintUnreachable = "is the controller listening there (volley serve --agents-listen), and can this host reach it?"
)

// joinHint is what err, an agent's failure to connect, most likely means.
func joinHint(err error) string {
	var cm *bus.CertMismatchError
	switch {
	case errors.As(err, &cm):
		return hintCertMismatch
	case errors.Is(err, nats.ErrAuthorization):
		return hintAuthorization
	case errors.Is(err, nats.ErrNoServers):
		return hintUnreachable
	}
	return ""
}

// shutdownDrain is how long a stopping agent waits for its unacknowledged snapshots to reach the
// broker.
const shutdownDrain = 5 * time.Second

// RefusedError is the controller's refusal of the agent at hello.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "the controller refused this agent: " + e.Reason }

// Run joins and beats until ctx ends (nil) or the controller refuses the agent (*RefusedError).
// A connection that cannot be made at first (unreachable, wrong token, id in use) is an error at
// once, with a hint by its cause; once joined, the agent reconnects forever, unless the listener
// keeps presenting another certificate than the token's for Config.CertGiveUp (*CertGoneError).
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	allow, err := ParseTargets(cfg.AllowTargets)
	if err != nil {
		return err
	}
	rejoin := make(chan struct{}, 1) // say hello again: after a reconnect, or when the controller asks
	askRejoin := func() {
		select {
		case rejoin <- struct{}{}:
		default:
		}
	}
	// Why reconnecting fails is logged once in a row (an attempt every 500 ms): the broker
	// unreachable, or a controller back with another certificate (restarted without its
	// --agents-state), which this token never joins again. Not before the agent has joined: the
	// first connection's error is Run's.
	var (
		reconnMu      sync.Mutex
		joined        bool
		lastReconnErr string
		mismatchSince time.Time // the first of the reconnection attempts in a row refused for the certificate
	)
	reconnErr := func(err error) {
		reconnMu.Lock()
		defer reconnMu.Unlock()
		if msg := err.Error(); joined && msg != lastReconnErr {
			lastReconnErr = msg
			args := []any{"err", err}
			if hint := joinHint(err); hint != "" {
				args = append(args, "hint", hint)
			}
			log.Warn("cannot reconnect to the controller; trying again every 500 ms", args...)
		}
	}
	// A listener whose certificate stays another one than the token's for giveUp ends the agent
	// (certGone): attempt is one attempt's certificate check (nil: it passed).
	giveUp := cfg.CertGiveUp
	if giveUp <= 0 {
		giveUp = DefaultCertGiveUp
	}
	certGone := make(chan error, 1)
	certChecked := func(err error) {
		reconnMu.Lock()
		defer reconnMu.Unlock()
		var cm *bus.CertMismatchError
		switch now := time.Now(); {
		case !joined || !errors.As(err, &cm):
			mismatchSince = time.Time{}
		case mismatchSince.IsZero():
			mismatchSince = now
		case now.Sub(mismatchSince) >= giveUp:
			select {
			case certGone <- &CertGoneError{URL: cfg.URL, For: now.Sub(mismatchSince).Round(time.Second), Last: cm}:
			default:
			}
		}
	}
	connect := cfg.Connect
	if connect == nil {
		connect = func(o ...nats.Option) (*nats.Conn, error) {
			// The certificate check's error is not handed to any nats handler: it is seen here.
			tc := cfg.Token.AgentTLS()
			if verify := tc.VerifyPeerCertificate; verify != nil {
				tc.VerifyPeerCertificate = func(raw [][]byte, chains [][]*x509.Certificate) error {
					err := verify(raw, chains)
					if err != nil {
						reconnErr(err)
					}
					certChecked(err)
					return err
				}
			}
			return bus.ConnectAgent(cfg.URL, cfg.ID, cfg.Token, append(o, nats.Secure(tc))...)
		}
	}
	nc, err := connect(
		nats.MaxReconnects(-1), nats.ReconnectWait(500*time.Millisecond), nats.Timeout(5*time.Second),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
			if err == nil && c.IsClosed() {
				return // closed on purpose: the agent's end (a server's in-process agent at its shutdown)
			}
			log.Warn("lost the controller; reconnecting", "err", err)
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			reconnErr(err)
			certChecked(nil) // not refused for the certificate: the broker unreachable
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			reconnMu.Lock()
			lastReconnErr = ""
			reconnMu.Unlock()
			log.Info("reconnected to the controller")
			askRejoin()
		}))
	if err != nil {
		err = fmt.Errorf("cannot join %s as %q: %w", cfg.URL, cfg.ID, err)
		if hint := joinHint(err); hint != "" {
			err = fmt.Errorf("%w (%s)", err, hint)
		}
		return err
	}
	defer nc.Close()
	reconnMu.Lock()
	joined = true
	reconnMu.Unlock()

	hello := bus.Hello{ID: cfg.ID, Version: cfg.Version, Protocol: bus.Protocol, Cores: runtime.NumCPU(),
		Labels: cfg.Labels, Weight: cfg.Weight, Histogram: cluster.Geometry}
	hello.Host, _ = os.Hostname()
	if cfg.Hello != nil {
		hello = cfg.Hello(hello)
	}
	if err := sayHello(ctx, nc, hello, log); err != nil || ctx.Err() != nil {
		return err
	}
	log.Info("joined the controller", "url", cfg.URL, "id", cfg.ID)
	// A controller that does not know this agent (it restarted on an external NATS, where the
	// agent stayed connected) asks it to say hello again.
	if _, err := nc.Subscribe(bus.HelloAgainSubject(cfg.ID), func(*nats.Msg) { askRejoin() }); err != nil {
		return fmt.Errorf("agent %s: cannot follow its hello-again subject: %w", cfg.ID, err)
	}

	ctx, endRuns := context.WithCancel(ctx) // ends a running run when the agent gives up (certGone)
	defer endRuns()
	w, err := newWorker(ctx, nc, cfg.ID, allow, log)
	if err != nil {
		return err
	}
	w.skew = cfg.ClockOffset
	w.policy = cfg.Policy
	w.handoff = cfg.Handoff
	pubCtx, stopPub := context.WithCancel(context.Background())
	defer stopPub()
	sub, err := w.start(pubCtx)
	if err != nil {
		return fmt.Errorf("agent %s: cannot follow its prepare subject: %w", cfg.ID, err)
	}
	defer func() {
		// At the agent's end: no new run; a running one ends (its engine's context is the
		// agent's); its final and any spooled seconds get shutdownDrain to reach the broker.
		_ = sub.Unsubscribe()
		w.runs.Wait()
		deadline := time.Now().Add(shutdownDrain)
		for w.sp.len() > 0 && time.Now().Before(deadline) && !nc.IsClosed() {
			time.Sleep(50 * time.Millisecond)
		}
	}()

	ps := procstat.New()
	subject := bus.PresenceSubject(cfg.ID)
	beat := func() {
		st := ps.Read()
		state, run := w.state()
		b, _ := json.Marshal(bus.Presence{State: state, Run: run, Cores: hello.Cores, CPUPercent: st.CPUPercent, RSSBytes: st.RSSBytes})
		_ = nc.Publish(subject, b) // while cut off, nats.go buffers it; a stale beat is harmless
	}
	beat()
	t := time.NewTicker(bus.PresenceInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-certGone:
			endRuns()
			return err
		case <-w.beat:
			beat()
		case <-rejoin:
			if err := sayHello(ctx, nc, hello, log); err != nil {
				return err
			}
			beat()
		case <-t.C:
			beat()
		}
	}
}

// sayHello sends the hello until the controller answers: nil when accepted, *RefusedError when
// refused, ctx's end otherwise (no controller answering yet is retried every second).
func sayHello(ctx context.Context, nc *nats.Conn, h bus.Hello, log *slog.Logger) error {
	body, err := json.Marshal(h)
	if err != nil {
		return err
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := nc.RequestWithContext(rctx, bus.SubjectHello, body)
		cancel()
		if err == nil {
			var r bus.HelloReply
			if err := json.Unmarshal(m.Data, &r); err != nil {
				return &RefusedError{Reason: "unreadable reply: " + err.Error()}
			}
			if !r.OK {
				return &RefusedError{Reason: r.Error}
			}
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			log.Warn("hello not answered; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}
