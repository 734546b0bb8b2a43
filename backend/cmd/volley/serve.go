package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/target"
	"github.com/volley-load/volley/examples"
	"github.com/volley-load/volley/frontend"
)

func serveCmd() *cobra.Command {
	var (
		addr       = "127.0.0.1:8080"
		db         = "volley.db"
		demoTarget = "127.0.0.1:8090"
		limits     capFlags
	)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Start the web UI and API (SQLite file storage)",
		Long: `Start Volley's web platform: the browser UI and the REST + websocket API, storing plans
and runs in a SQLite file. By default it also starts the demo target on 127.0.0.1:8090 and, in an
empty database, creates an example plan against it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			caps, err := limits.caps()
			if err != nil {
				return err
			}
			return serve(cmd.Context(), addr, db, demoTarget, caps)
		},
	}
	c.Flags().StringVar(&addr, "addr", addr, "address to listen on (keep it on loopback unless you add a proxy with authentication)")
	c.Flags().StringVar(&db, "db", db, "SQLite database file (created if missing)")
	c.Flags().StringVar(&demoTarget, "demo-target", demoTarget, `address of the built-in demo target ("" to disable)`)
	limits.register(c) // --max-vus, --max-rate, --max-duration, --max-requests, --memory-budget (limits.go)
	return c
}

func serve(parent context.Context, addr, dbPath, demoAddr string, caps plan.Caps) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	// Bind first and lock the database: a second server (same port or same database) must fail
	// before it touches anything — above all before it marks the first one's live run interrupted.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	unlock, err := lockDB(dbPath)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := store.Open(dbPath)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer st.Close()
	if ids, err := st.MarkInterrupted(ctx, time.Now()); err != nil {
		return fmt.Errorf("recover runs: %w", err)
	} else if len(ids) > 0 {
		log.Warn("runs left running by a previous process are marked interrupted (their stored seconds are kept)", "runs", ids)
	}

	if demoAddr != "" {
		tln, err := target.Listen(demoAddr)
		if err != nil {
			log.Warn("demo target not started (is another one running there?)", "addr", demoAddr, "err", err)
		} else {
			go func() { _ = target.ServeListener(ctx, tln) }()
			demoAddr = tln.Addr().String()
			log.Info("demo target", "url", "http://"+demoAddr+"/")
		}
		// The example plan is created even when the port was taken: usually by a demo target
		// already running there (`volley target`), which serves the plan just as well.
		if err := seedDemo(ctx, st, demoAddr); err != nil {
			log.Warn("example plan not created", "err", err)
		}
	}

	h := hub.New(nil)
	rn := runner.New(log, &api.StoreSink{W: st, Log: log}, &api.HubSink{Hub: h, Log: log})
	apiSrv := api.New(st, rn, h, frontend.Dist(), log)
	apiSrv.SetCaps(caps)
	srv := &http.Server{
		Handler:           apiSrv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	abs, _ := filepath.Abs(dbPath)
	log.Info("Volley is up", "url", "http://"+ln.Addr().String()+"/", "db", abs,
		"max_vus", caps.MaxVUs, "max_rate", caps.MaxRate, "max_duration", caps.MaxDuration.String(),
		"max_requests", caps.MaxRequests, "memory_budget_mib", caps.MemoryBudget>>20)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if id, ok := rn.Active(); ok {
		log.Info("shutting down: stopping the active run and saving it", "run", id)
	} else {
		log.Info("shutting down")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rn.Shutdown(sctx); err != nil {
		log.Error("run did not end in time", "err", err)
	}
	_ = srv.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// seedDemo creates the example plan in an empty database so a newcomer can press Run at once.
func seedDemo(ctx context.Context, st *store.Store, targetAddr string) error {
	plans, err := st.ListPlans(ctx)
	if err != nil || len(plans) > 0 {
		return err
	}
	p, err := plan.Parse(examples.Demo)
	if err != nil {
		return err
	}
	for i := range p.Requests {
		p.Requests[i].URL = "http://" + targetAddr + "/"
	}
	spec, err := plan.Marshal(p)
	if err != nil {
		return err
	}
	_, err = st.CreatePlan(ctx, p.Name, spec)
	return err
}
