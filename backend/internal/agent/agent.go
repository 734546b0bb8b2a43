// Package agent is the `volley agent` loop: it joins the controller's broker with a join token,
// says hello (refused on an incompatible protocol or histogram geometry) and publishes its
// presence every bus.PresenceInterval. It reconnects forever; after a reconnect it says hello
// again (a restarted controller has forgotten it). Running plans on agents comes next.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
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
	// Connect connects to the broker with the agent's options (reconnects, handlers); nil:
	// bus.ConnectAgent(URL, ID, Token, …). An external NATS: bus.ConnectExternalAgent.
	Connect func(opts ...nats.Option) (*nats.Conn, error)
}

// RefusedError is the controller's refusal of the agent at hello.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "the controller refused this agent: " + e.Reason }

// Run joins and beats until ctx ends (nil) or the controller refuses the agent (*RefusedError).
// A connection that cannot be made at first (unreachable, wrong token, id in use) is an error at
// once; once joined, the agent reconnects forever.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	rejoin := make(chan struct{}, 1)
	connect := cfg.Connect
	if connect == nil {
		connect = func(o ...nats.Option) (*nats.Conn, error) { return bus.ConnectAgent(cfg.URL, cfg.ID, cfg.Token, o...) }
	}
	nc, err := connect(
		nats.MaxReconnects(-1), nats.ReconnectWait(500*time.Millisecond), nats.Timeout(5*time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("lost the controller; reconnecting", "err", err) }),
		nats.ReconnectHandler(func(*nats.Conn) {
			log.Info("reconnected to the controller")
			select {
			case rejoin <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		return fmt.Errorf("cannot join %s as %q: %w (a wrong join token, or an agent with this id is connected already: give each agent its own --id)", cfg.URL, cfg.ID, err)
	}
	defer nc.Close()

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

	ps := procstat.New()
	subject := bus.PresenceSubject(cfg.ID)
	beat := func() {
		st := ps.Read()
		b, _ := json.Marshal(bus.Presence{State: "idle", Cores: hello.Cores, CPUPercent: st.CPUPercent, RSSBytes: st.RSSBytes})
		_ = nc.Publish(subject, b) // while cut off, nats.go buffers it; a stale beat is harmless
	}
	beat()
	t := time.NewTicker(bus.PresenceInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
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
