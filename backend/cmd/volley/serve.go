package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/localagent"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/promexp"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
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
		lim        = defaultServeOpts()
		admin      = adminInit{name: "admin"}
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
			lim.caps = caps
			return serve(cmd.Context(), addr, db, demoTarget, admin, lim)
		},
	}
	c.Flags().StringArrayVar(&lim.publicURLs, "public-url", nil, "URL browsers use to reach Volley through a proxy or another name, e.g. https://volley.example.com (repeatable); its host is accepted as Host and its origin as Origin")
	c.Flags().IntVar(&lim.maxConnsPerClient, "max-conns-per-client", lim.maxConnsPerClient, "open connections allowed per client address (IPv6: per /64); more are closed at once (0: no cap)")
	c.Flags().StringVar(&addr, "addr", addr, "address to listen on (keep it on loopback unless you add a proxy with authentication)")
	c.Flags().StringVar(&db, "db", db, "SQLite database file (created if missing)")
	c.Flags().StringVar(&demoTarget, "demo-target", demoTarget, `address of the built-in demo target ("" to disable)`)
	targetPolicy.flag(c) // --allow-target, --deny-target (targetpolicy.go)
	c.Flags().StringVar(&admin.passwordFile, "admin-password-file", "", "when the database has no user: create the first admin with the password in this file (first line), e.g. a Docker secret")
	c.Flags().StringVar(&admin.name, "admin-user", admin.name, "the name of the admin --admin-password-file creates")
	c.Flags().StringVar(&lim.agentsListen, "agents-listen", "", "open a TLS listener for remote load generators (volley agent) on HOST:PORT and print their join token; default: none, no port")
	c.Flags().StringVar(&lim.agentsState, "agents-state", "", "with --agents-listen: keep the listener's certificate and the join secret in this directory (made on the first start), so the join token stays the same across restarts, and the runs' snapshots (DIR/jetstream), so a run over agents goes on after a restart of this server")
	c.Flags().BoolVar(&lim.directEngine, "direct-engine", false, "run single-machine runs on this process's engine directly instead of through the in-process agent (the path before agents; for comparing the two)")
	c.Flags().StringVar(&lim.joinTokenFile, "join-token-file", "", "with --agents-listen: write the join token to this file (mode 0600) for agents that read it (volley agent --token-file), e.g. on a shared volume")
	// --nats, --nats-creds, --nats-nkey: an external NATS instead of the embedded broker (natsflags.go)
	controllerNATSFlags(c, &lim.nats)
	limits.register(c) // --max-vus, --max-rate, --max-duration, --max-requests, --memory-budget (limits.go)
	return c
}

// serveOpts are the web server's guards and limits: flags of volley serve, shortened by tests.
type serveOpts struct {
	publicURLs        []string
	maxConnsPerClient int
	readHeaderTimeout time.Duration // request line and headers
	readTimeout       time.Duration // whole request, body included
	writeTimeout      time.Duration // from the end of the headers to the end of the answer (not websockets: the upgrade clears it)
	idleTimeout       time.Duration // keep-alive wait for the next request
	maxHeaderBytes    int
	ready             func(net.Addr) // tests: called with the bound address once serving
	log               *slog.Logger   // tests: nil logs to stderr
	caps              plan.Caps      // --max-* and --memory-budget (limits.go); zero: the plan's own ranges only
	agentsListen      string         // --agents-listen (agent.go); "": no broker, no port
	agentsState       string         // --agents-state: bus.Config.StateDir, StoreDir DIR/jetstream; "": a new join token each start
	joinTokenFile     string         // --join-token-file: where the join token is written; "": nowhere
	nats              bus.External   // --nats, --nats-creds, --nats-nkey (natsflags.go): an external NATS
	directEngine      bool           // --direct-engine: single-machine runs on the engine, not the in-process agent
}

func defaultServeOpts() serveOpts {
	return serveOpts{
		maxConnsPerClient: 128,
		readHeaderTimeout: 10 * time.Second,
		readTimeout:       30 * time.Second,
		writeTimeout:      60 * time.Second,
		idleTimeout:       120 * time.Second,
		maxHeaderBytes:    64 << 10,
	}
}

func serve(parent context.Context, addr, dbPath, demoAddr string, admin adminInit, lim serveOpts) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := lim.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}

	if lim.agentsListen == "" && (lim.agentsState != "" || lim.joinTokenFile != "") {
		return usageError{errors.New("--agents-state and --join-token-file need --agents-listen")}
	}
	if err := checkControllerNATS(lim.nats, lim.agentsListen); err != nil {
		return err
	}
	if lim.agentsListen != "" {
		if err := checkListen("--agents-listen", lim.agentsListen); err != nil {
			return err // before the bind: nothing starts
		}
	}
	if lim.maxConnsPerClient < 0 {
		return fmt.Errorf("--max-conns-per-client must be 0 (no cap) or more, not %d", lim.maxConnsPerClient)
	}
	guard, err := api.NewGuard(api.GuardConfig{PublicURLs: lim.publicURLs})
	if err != nil {
		return fmt.Errorf("--public-url: %w", err)
	}

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
	if fi, err := os.Stat(dbPath); err == nil && fi.Size() > 256<<20 {
		log.Info("checking the database before use (PRAGMA integrity_check reads all of it: 0.5-2 s per 100 MB)",
			"db", dbPath, "mb", fi.Size()>>20)
	}
	st, err := store.Open(dbPath)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer st.Close()
	authSvc := auth.New(st, auth.Config{})
	loopback := isLoopback(ln.Addr())
	if err := admin.apply(ctx, authSvc, log); err != nil {
		return err
	}
	hasUsers, err := authSvc.HasUsers(ctx)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	if !hasUsers && !loopback {
		return usageError{fmt.Errorf(`--addr %s is not a loopback address and %s has no users: anyone who can reach the port would control Volley.
Add an admin first, then start again (everyone then logs in):
    volley user add admin --role admin --db %s
or keep the server on loopback (--addr 127.0.0.1:8080)`, addr, dbPath, dbPath)}
	}
	if u := remotePublicURL(lim.publicURLs); !hasUsers && u != "" {
		// A proxy on this machine publishing a loopback server is as open as a public bind.
		return usageError{fmt.Errorf(`--public-url %s publishes Volley beyond this machine and %s has no users: anyone who can reach that URL would control Volley.
Add an admin first, then start again (everyone then logs in):
    volley user add admin --role admin --db %s`, u, dbPath, dbPath)}
	}
	if !loopback {
		log.Warn("listening beyond loopback: every user logs in; put a TLS proxy in front (--public-url https://…) so passwords and sessions are not sent in clear", "addr", ln.Addr().String())
	}
	if !st.Reserved() {
		log.Warn("no room for the database's reserve file: if the disk fills during a run, its failed status may not be saved",
			"file", dbPath+".reserve", "bytes", store.ReserveBytes)
	}
	// Runs left running by a process that died are marked interrupted, except the runs over agents
	// this server's cluster takes over (ResumeRuns, below, before it serves).
	resumable, err := st.ResumableRuns(ctx)
	if err != nil {
		return fmt.Errorf("recover runs: %w", err)
	}
	keep := make([]int64, len(resumable))
	for i, r := range resumable {
		keep[i] = r.ID
	}
	if why := cannotResume(lim); why != "" {
		if len(keep) > 0 {
			log.Warn("runs over agents left running by a previous process cannot be taken over: "+why, "runs", keep)
		}
		resumable, keep = nil, nil
	}
	if ids, err := st.MarkInterrupted(ctx, time.Now(), keep...); err != nil {
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

	apiOpts := []api.Option{api.WithGuard(guard)}
	var steer *cluster.Coordinator // live control of the runs over agents
	if lim.agentsListen != "" {
		ag, err := startAgents(lim.agentsListen, lim.agentsState, log)
		if err != nil {
			return err
		}
		defer ag.Close()
		if lim.joinTokenFile != "" {
			if err := ag.b.WriteJoinToken(lim.joinTokenFile); err != nil {
				return fmt.Errorf("--join-token-file: %w", err)
			}
		}
		opts, co, err := agentsAPI(ag, log, lim.agentsState != "")
		if err != nil {
			return fmt.Errorf("--agents-listen: %w", err)
		}
		steer = co
		apiOpts = append(apiOpts, opts...)
		// The command as given, to copy (as volley run --agents prints it and the Agents page shows
		// it); the token in the environment, not on the command line: the process list shows
		// arguments. The token was in this line before too (a token= field): the log holds it.
		log.Info("agents listener (TLS); join a machine with: VOLLEY_JOIN_TOKEN="+ag.JoinToken()+" volley agent --nats "+ag.URL(),
			"addr", ag.b.AgentsAddr())
	}
	if lim.nats.URL != "" {
		ag, err := startAgentsExternal(lim.nats, log)
		if err != nil {
			return err
		}
		defer ag.Close()
		opts, co, err := agentsAPI(ag, log, true)
		if err != nil {
			return fmt.Errorf("--nats: %w", err)
		}
		steer = co
		apiOpts = append(apiOpts, opts...)
		log.Info("agents over the external NATS; each joins with its own credentials: volley agent --nats URL --nkey SEED_FILE --id ID", "url", ag.URL())
	}

	if steer != nil {
		// An agent still running a run that ended before this process (cut off when the last one
		// died) is told to stop from the id it was prepared with.
		steer.SetEndedLookup(func(run int64) (string, bool) {
			c, ok, err := st.EndedRunController(context.Background(), run)
			if err != nil {
				log.Warn("looking up an ended run", "run", run, "err", err)
			}
			return c, ok
		})
	}

	h := hub.New(guard.CheckOrigin)
	pol := targetPolicy.policy()
	// The runner with its sinks (the store, then the live hub) and the run service over it.
	prom := promexp.New(version, h.Clients) // GET /metrics, fed as the runner's last sink
	// A single-machine run is a run over one in-process agent (no port: the broker has no
	// listener), unless --direct-engine; if that agent cannot start, the engine directly.
	var local *localagent.Local
	if !lim.directEngine {
		if local, err = localagent.Start(localagent.Config{Version: version, Policy: pol, Log: log}); err != nil {
			log.Warn("single-machine runs use the engine directly: the in-process agent did not start", "err", err)
			local = nil
		} else {
			defer local.Close()
		}
	}
	svc, rn := runs.Wire(runs.Config{Store: st, Hub: h, Log: log, Policy: pol, Sinks: []runner.Sink{prom}})
	if local != nil {
		svc.SetLocal(local.Run)
	}
	rn.SetDriveControl(driveControl(ctx, local, steer))
	as := api.New(st, svc, h, frontend.Dist(), log, append(apiOpts, api.WithMetrics(prom.Handler()))...)
	as.SetTargetPolicy(pol)
	as.SetCaps(lim.caps)
	if ps := pol.Summary(); len(ps.Allow)+len(ps.Deny) > 0 {
		log.Info("target policy", "allow", ps.Allow, "deny", ps.Deny)
	}
	if len(resumable) > 0 {
		as.ResumeRuns(ctx, resumable) // before serving: nothing can start another run first
	}
	srv := &http.Server{
		Handler:           as.UseAuth(api.AuthConfig{Service: authSvc, AllowLocal: loopback, SecureCookie: httpsPublicURL(lim.publicURLs)}).Handler(),
		ReadHeaderTimeout: lim.readHeaderTimeout,
		ReadTimeout:       lim.readTimeout,
		WriteTimeout:      lim.writeTimeout,
		IdleTimeout:       lim.idleTimeout,
		MaxHeaderBytes:    lim.maxHeaderBytes,
	}
	abs, _ := filepath.Abs(dbPath)
	if hasUsers {
		log.Info("Volley is up; users log in", "url", "http://"+ln.Addr().String()+"/", "db", abs)
	} else {
		log.Info("Volley is up; no users, so the local user is the admin (volley user add turns logins on)", "url", "http://"+ln.Addr().String()+"/", "db", abs)
	}
	log.Info("plan caps", "max_vus", lim.caps.MaxVUs, "max_rate", lim.caps.MaxRate, "max_duration", lim.caps.MaxDuration.String(),
		"max_requests", lim.caps.MaxRequests, "memory_budget_mib", lim.caps.MemoryBudget>>20)
	errc := make(chan error, 1)
	sln := limitPerClient(ln, lim.maxConnsPerClient, log)
	go func() { errc <- srv.Serve(sln) }()
	if lim.ready != nil {
		lim.ready(ln.Addr())
	}
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

// driveControl is live control of the driven runs (runner.SetDriveControl): a single-machine
// run's, through the local agent (its refusal speaks of the local engine: ControlError.Local),
// else a run over agents', through their coordinator; nil with neither.
func driveControl(ctx context.Context, local *localagent.Local, remote *cluster.Coordinator) runner.DriveControl {
	if local == nil && remote == nil {
		return nil
	}
	return func(id int64, ch runner.Change) (metrics.RunEvent, error) {
		c := cluster.Change{VUs: ch.VUs, Rate: ch.Rate, By: ch.By}
		if local != nil {
			ev, err := local.Control(ctx, id, c)
			if ce := (*cluster.ControlError)(nil); errors.As(err, &ce) && ce.Agent == localagent.ID {
				ce.Local = true // the local engine refused: no remote machine named "local"
			}
			if remote == nil || !errors.Is(err, engine.ErrNotRunning) {
				return ev, err
			}
		}
		return remote.Control(ctx, id, c)
	}
}

// clusterRuns is the API's cluster (api.Cluster): the registry picks agents, the coordinator runs
// plans on them.
type clusterRuns struct {
	*cluster.Registry
	*cluster.Coordinator
}

// cannotResume says why this server cannot take over the runs over agents a previous process
// left running ("": it can): that needs agents that can rejoin it and the runs' snapshots kept
// on disk — --agents-listen with --agents-state, or --nats.
func cannotResume(lim serveOpts) string {
	switch {
	case lim.nats.URL != "" || (lim.agentsListen != "" && lim.agentsState != ""):
		return ""
	case lim.agentsListen != "":
		return "without --agents-state the join token is new at every start, so their agents cannot rejoin, and the broker kept no snapshots; they are marked interrupted"
	}
	return "this server has no agents (--agents-listen with --agents-state, or --nats); they are marked interrupted"
}

// agentsAPI is the API's view of the agents: the list (api.WithAgents) and runs over them — the
// registry picks them, the coordinator runs the plan on them (api.WithCluster) and changes their
// load while they run (the coordinator returned, for runner.SetDriveControl); fileStore keeps
// the snapshot stream on disk (cluster.FileStore: the broker has a store dir, or an external NATS).
func agentsAPI(ag *agentsCtl, log *slog.Logger, fileStore bool) ([]api.Option, *cluster.Coordinator, error) {
	co, err := cluster.NewCoordinator(ag.nc, ag.Registry, log, cluster.FileStore(fileStore))
	if err != nil {
		return nil, nil, err
	}
	return []api.Option{api.WithAgents(ag), api.WithCluster(clusterRuns{ag.Registry, co})}, co, nil
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

// adminInit is serve's --admin-password-file: the first admin of a database with no user, for
// containers that bind beyond loopback.
type adminInit struct{ name, passwordFile string }

func (a adminInit) apply(ctx context.Context, svc *auth.Service, log *slog.Logger) error {
	if a.passwordFile == "" {
		return nil
	}
	if has, err := svc.HasUsers(ctx); err != nil || has {
		return err
	}
	b, err := os.ReadFile(a.passwordFile)
	if err != nil {
		return usageError{fmt.Errorf("the database has no user and --admin-password-file %s cannot be read (%w): give the first admin's password in that file (a Docker secret: set VOLLEY_ADMIN_PASSWORD for docker compose), or add a user with volley user add", a.passwordFile, err)}
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimRight(pw, "\r")
	u, err := svc.AddUser(ctx, a.name, auth.Admin, pw)
	if err != nil {
		return usageError{fmt.Errorf("--admin-password-file %s: the first admin's %w", a.passwordFile, err)}
	}
	_ = svc.Audit(ctx, auth.Entry{Actor: auth.CLIActor, Action: auth.ActUserCreate, Target: "user " + u.Name,
		Detail: map[string]any{"role": u.Role, "from": "--admin-password-file"}})
	log.Info("created the first admin from --admin-password-file", "user", u.Name)
	return nil
}

// httpsPublicURL reports whether browsers reach Volley over https (a TLS proxy in front): then the
// session cookie is marked Secure even though the proxy talks plain HTTP to Volley.
func httpsPublicURL(urls []string) bool {
	for _, u := range urls {
		if strings.HasPrefix(strings.ToLower(u), "https://") {
			return true
		}
	}
	return false
}

// remotePublicURL returns the first public URL whose host is not a loopback name or address
// ("" when every one is local, e.g. a development server on http://localhost:5173).
func remotePublicURL(urls []string) string {
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return raw
		}
		h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if h == "localhost" || strings.HasSuffix(h, ".localhost") {
			continue
		}
		if ip, err := netip.ParseAddr(h); err == nil && ip.Unmap().IsLoopback() {
			continue
		}
		return raw
	}
	return ""
}
