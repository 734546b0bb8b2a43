// Package api is Volley's HTTP interface: thin Gin handlers over small interfaces (storage, run
// lifecycle, live hub), one error → status mapping (errors.go), the websocket live stream and the
// embedded single-page app. Handlers return a result or an error; no handler writes error JSON.
package api

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/report"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
)

// Store is the storage the handlers need (implemented by *store.Store).
type Store interface {
	CreatePlan(ctx context.Context, name string, spec []byte) (*store.Plan, error)
	UpdatePlan(ctx context.Context, id int64, name string, spec []byte) (*store.Plan, error)
	GetPlan(ctx context.Context, id int64) (*store.Plan, error)
	ListPlans(ctx context.Context) ([]store.Plan, error)
	DeletePlan(ctx context.Context, id int64) error
	GetRun(ctx context.Context, id int64) (*store.Run, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, int64, error)
	UpdateRunMeta(ctx context.Context, id int64, notes *string, tags *[]string) (*store.Run, error)
	PreviousRun(ctx context.Context, id int64) (*store.Run, error)
	PlanTrend(ctx context.Context, planID int64, limit int) ([]store.Run, error)
	ListSecrets(ctx context.Context) ([]store.SecretInfo, error)
	PutSecret(ctx context.Context, name, value string) (*store.SecretInfo, bool, error)
	DeleteSecret(ctx context.Context, name string) error
	SecretValues(ctx context.Context, names []string) (map[string]string, error)
	AppendAgentSecond(ctx context.Context, runID int64, agent string, second int, sample []byte) (bool, error)
	AgentSeconds(ctx context.Context, runID int64, from, limit int) ([]store.AgentSecond, int, error)
	SetRunCluster(ctx context.Context, runID int64, data []byte) error
	MarkRunInterrupted(ctx context.Context, id int64, now time.Time) error
}

// Runs is the run lifecycle the handlers need (implemented by *runs.Service).
type Runs interface {
	Start(ctx context.Context, planID int64, check func(*plan.Plan) error) (int64, *store.Plan, error)
	StartOnAgents(ctx context.Context, planID int64, check func(*plan.Plan) error, drive runs.Drive, agents int) (int64, *store.Plan, error)
	Resume(ctx context.Context, runID int64, drive runs.Drive) error
	Stop(ctx context.Context, id int64) (*store.Run, error)
	Control(ctx context.Context, id int64, ch runner.Change, check func(*plan.Plan) error) (metrics.RunEvent, error)
	Delete(ctx context.Context, id int64) (*store.Run, error)
	Active() (int64, bool)
	Stream(ctx context.Context, id int64) ([][]byte, error)
	// The reads that compute from a stored run.
	Seconds(ctx context.Context, id int64, points int) (runs.Seconds, error)
	Distribution(ctx context.Context, id int64) (runs.Distribution, error)
	Compare(ctx context.Context, ids []int64, base, points int, opt compare.Options) (runs.Comparison, error)
	Report(ctx context.Context, id int64) (report.Report, error)
}

// Live is the live hub the websocket route needs (implemented by *hub.Hub).
type Live interface {
	Serve(w http.ResponseWriter, r *http.Request, runID int64, stored func() ([][]byte, error)) error
}

// Server holds the handlers' dependencies.
type Server struct {
	store  Store
	runs   Runs
	hub    Live
	ui     fs.FS
	log    *slog.Logger
	guard  *Guard
	policy *netpolicy.Policy // the server's target policy (targets.go)
	auth   *AuthConfig       // nil: no authentication, every caller is the local admin (UseAuth)
	caps   plan.Caps

	sendSlots chan struct{} // test requests being sent (send.go)
	metrics   http.Handler  // GET /metrics (prommetrics.go); nil: not served
	agents    Agents        // remote agents (agents.go); nil: no agents listener
	cluster   Cluster       // runs over agents (agentruns.go); nil: no agents listener
}

// Option configures a Server (New).
type Option func(*Server)

// WithGuard sets the guard against hostile web pages (guard.go). Without it, New uses a guard
// with no public URL: loopback names and the connection's own address only.
func WithGuard(g *Guard) Option { return func(s *Server) { s.guard = g } }

// SetCaps sets the server's limits on plans (the --max-* and --memory-budget flags), applied when
// a plan is created or updated and when a run starts; call it before Handler.
func (s *Server) SetCaps(c plan.Caps) { s.caps = c }

// New makes the API server. ui is the built SPA (may hold no index.html, then a hint is served).
func New(st Store, rs Runs, h Live, ui fs.FS, log *slog.Logger, opts ...Option) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{store: st, runs: rs, hub: h, ui: ui, log: log, policy: netpolicy.Default(),
		sendSlots: make(chan struct{}, maxSends)}
	for _, o := range opts {
		o(s)
	}
	if s.guard == nil {
		s.guard, _ = NewGuard(GuardConfig{})
	}
	return s
}

// exportWriteTime is how long the answer of an export (report, samples) may take to write: a
// long run's file to a slow client. The server's WriteTimeout (volley serve: 60 s) bounds the rest.
const exportWriteTime = 10 * time.Minute

// longWrite moves the connection's write deadline to exportWriteTime from now.
func longWrite(c *gin.Context) {
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(exportWriteTime))
	c.Next()
}

// maxBody bounds request bodies (plans are small).
const maxBody = 1 << 20

// Handler returns the HTTP handler: /api routes and the SPA for everything else, all behind the
// guard (Host, Origin, Content-Type; guard.go), which runs before anything else — routing,
// redirects, authentication.
func (s *Server) Handler() http.Handler { return s.Guarded(s.Router()) }

// Guarded wraps h in the server's guard (guard.go): Host, Origin and Content-Type checks; every
// answer, the guard's refusals too, carries a request id (requestid.go).
func (s *Server) Guarded(h http.Handler) http.Handler { return withRequestID(s.guard.Wrap(h)) }

// Router returns the gin engine with every route, without the guard around it: Handler serves it
// guarded; tests add routes to it before wrapping it with Guarded.
func (s *Server) Router() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.NoMethod(func(c *gin.Context) {
		s.fail(c, errf(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", c.Request.Method, c.Request.URL.Path))
	})
	r.Use(func(c *gin.Context) { requestID(c.Writer, c.Request) }) // when served without Guarded
	r.Use(s.recovery())
	r.Use(func(c *gin.Context) {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, bodyLimit(c)) // runimport.go
		c.Next()
	})
	r.Use(s.authenticate()) // after the guard's checks; the roles per route: routePolicy (auth.go)
	a := r.Group("/api")
	a.GET("/health", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	a.POST("/auth/login", s.wrap(s.login))
	a.POST("/auth/logout", s.wrap(s.logout))
	a.GET("/auth/me", s.wrap(s.me))
	a.GET("/users", s.wrap(s.listUsers))
	a.POST("/users", s.wrap(s.createUser))
	a.PATCH("/users/:name", s.wrap(s.updateUser))
	a.DELETE("/users/:name", s.wrap(s.deleteUser))
	a.GET("/tokens", s.wrap(s.listTokens))
	a.POST("/tokens", s.wrap(s.createToken))
	a.DELETE("/tokens/:id", s.wrap(s.revokeToken))
	a.GET("/audit", s.wrap(s.auditLog))
	a.GET("/plans", s.wrap(s.listPlans))
	a.POST("/plans", s.wrap(s.createPlan))
	a.POST("/plans/send", s.wrap(s.sendRequest)) // send.go
	a.GET("/plans/:id", s.wrap(s.getPlan))
	a.PUT("/plans/:id", s.wrap(s.updatePlan))
	a.DELETE("/plans/:id", s.wrap(s.deletePlan))
	a.POST("/plans/:id/runs", s.wrap(s.startRun))
	a.GET("/plans/:id/trend", s.wrap(s.planTrend))
	a.GET("/runs", s.wrap(s.listRuns))
	a.GET("/runs/:id", s.wrap(s.getRun))
	a.PATCH("/runs/:id", s.wrap(s.patchRun))
	a.GET("/runs/:id/previous", s.wrap(s.previousRun))
	a.GET("/runs/:id/distribution", s.wrap(s.distribution))
	a.GET("/runs/:id/report", longWrite, s.runReport)
	a.POST("/runs/import", s.wrap(s.importRun)) // runimport.go
	a.POST("/import", s.wrap(s.importSource))   // sourceimport.go
	a.POST("/runs/:id/stop", s.wrap(s.stopRun))
	a.POST("/runs/:id/control", s.wrap(s.controlRun)) // control.go
	a.DELETE("/runs/:id", s.wrap(s.deleteRun))
	a.GET("/runs/:id/samples", longWrite, s.wrap(s.samples))
	a.GET("/runs/:id/agents", longWrite, s.wrap(s.agentSeconds)) // agentruns.go
	a.GET("/runs/:id/live", s.live)
	a.GET("/compare", s.wrap(s.compareRuns))
	a.GET("/settings/target-policy", s.wrap(s.targetPolicy))
	a.GET("/agents", s.wrap(s.agentList))        // agents.go
	a.GET("/agents/token", s.wrap(s.agentToken)) // an admin's (routePolicy)
	// The secret store: names listed, values write-only (secrets.go).
	sec := a.Group("/secrets")
	sec.GET("", s.wrap(s.listSecrets))
	sec.PUT("/:name", s.wrap(s.putSecret))
	sec.DELETE("/:name", s.wrap(s.deleteSecret))
	if s.metrics != nil {
		r.GET("/metrics", s.metricsAccess, gin.WrapH(s.metrics)) // prommetrics.go
	}
	r.NoRoute(s.spa())
	return r
}
