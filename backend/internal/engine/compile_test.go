package engine

import "github.com/volley-load/volley/backend/internal/plan"

// newEngine compiles p (plan.Compile: validated, with its defaults filled) and prepares an engine
// for it, as the runner and `volley run` do.
func newEngine(p *plan.Plan, opts Options) (*Engine, error) {
	c, err := plan.Compile(p)
	if err != nil {
		return nil, err
	}
	return New(c, opts)
}
