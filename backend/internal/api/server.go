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

	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/store"
)

// Store is the storage the handlers need (implemented by *store.Store).
type Store interface {
	CreatePlan(ctx context.Context, name string, spec []byte) (*store.Plan, error)
	UpdatePlan(ctx context.Context, id int64, name string, spec []byte) (*store.Plan, error)
	GetPlan(ctx context.Context, id int64) (*store.Plan, error)
	ListPlans(ctx context.Context) ([]store.Plan, error)
	DeletePlan(ctx context.Context, id int64) error
	CreateRun(ctx context.Context, planID int64, planName string, planSpec []byte, startedAt time.Time) (*store.Run, error)
	GetRun(ctx context.Context, id int64) (*store.Run, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, int64, error)
	Samples(ctx context.Context, runID int64) ([]store.Sample, error)
	DeleteRun(ctx context.Context, id int64) error
	UpdateRunMeta(ctx context.Context, id int64, notes *string, tags *[]string) (*store.Run, error)
	PreviousRun(ctx context.Context, id int64) (*store.Run, error)
	PlanTrend(ctx context.Context, planID int64, limit int) ([]store.Run, error)
	RunHistogram(ctx context.Context, runID int64) ([]byte, error)
}

// Runner is the run lifecycle the handlers need (implemented by *runner.Runner).
type Runner interface {
	Start(p *plan.Plan, create func(started time.Time) (int64, error)) (int64, error)
	Stop(id int64) error
	Active() (int64, bool)
	Done(id int64) <-chan struct{}
}

// Server holds the handlers' dependencies.
type Server struct {
	store  Store
	runner Runner
	hub    *hub.Hub
	ui     fs.FS
	log    *slog.Logger
	caps   plan.Caps
}

// SetCaps sets the server's limits on plans (the --max-* and --memory-budget flags), applied when
// a plan is created or updated and when a run starts; call it before Handler.
func (s *Server) SetCaps(c plan.Caps) { s.caps = c }

// New makes the API server. ui is the built SPA (may hold no index.html, then a hint is served).
func New(st Store, rn Runner, h *hub.Hub, ui fs.FS, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{store: st, runner: rn, hub: h, ui: ui, log: log}
}

// maxBody bounds request bodies (plans are small).
const maxBody = 1 << 20

// Handler returns the HTTP handler: /api routes and the SPA for everything else.
func (s *Server) Handler() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.NoMethod(func(c *gin.Context) {
		s.fail(c, errf(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", c.Request.Method, c.Request.URL.Path))
	})
	r.Use(s.recovery())
	r.Use(func(c *gin.Context) {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
		c.Next()
	})
	a := r.Group("/api")
	a.GET("/health", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	a.GET("/plans", s.wrap(s.listPlans))
	a.POST("/plans", s.wrap(s.createPlan))
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
	a.GET("/runs/:id/report", s.runReport)
	a.POST("/runs/:id/stop", s.wrap(s.stopRun))
	a.DELETE("/runs/:id", s.wrap(s.deleteRun))
	a.GET("/runs/:id/samples", s.wrap(s.samples))
	a.GET("/runs/:id/live", s.live)
	a.GET("/compare", s.wrap(s.compareRuns))
	r.NoRoute(s.spa())
	return r
}
