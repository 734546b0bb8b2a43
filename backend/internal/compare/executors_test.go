package compare

// The plans these tests parse name executors that package engine registers (plan.RegisterExecutor).
import _ "github.com/volley-load/volley/backend/internal/engine"
