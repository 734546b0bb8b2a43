package monitor

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// The monitors run inside the engine: the Prometheus parsing libraries and Volley's own plan,
// metrics and target policy only.
func TestMonitorImportsOnlyAllowedPackages(t *testing.T) {
	testutil.CheckImports(t,
		"github.com/prometheus/client_model/go",
		"github.com/prometheus/common/expfmt",
		"github.com/prometheus/common/model",
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/volley-load/volley/backend/internal/netpolicy",
		"github.com/volley-load/volley/backend/internal/plan",
	)
}
