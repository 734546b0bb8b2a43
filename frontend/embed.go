// Package frontend exposes the built single-page app (frontend/dist) for embedding in the volley binary.
package frontend

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var distFS embed.FS

// Dist returns the built SPA rooted at dist/. It holds only .gitkeep when the UI was not built (run `make build`).
func Dist() fs.FS { sub, _ := fs.Sub(distFS, "dist"); return sub }
