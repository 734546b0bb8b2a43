package api

import (
	"io/fs"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

const notBuilt = `<!doctype html><meta charset="utf-8"><title>Volley</title>
<p>Volley's web UI is not built into this binary. Run <code>make build</code> (needs Node 20 and npm), or use the API under <code>/api</code>.</p>`

// spa serves the embedded single-page app: existing files as they are, any other non-API path as
// index.html (the app routes on the client).
func (s *Server) spa() gin.HandlerFunc {
	files := http.FileServer(http.FS(s.ui))
	index, _ := fs.ReadFile(s.ui, "index.html")
	return func(c *gin.Context) {
		p := c.Request.URL.Path
		if strings.HasPrefix(p, "/api/") || p == "/api" {
			s.fail(c, errf(http.StatusNotFound, "not_found", "no API route %s %s", c.Request.Method, p))
			return
		}
		if c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead {
			s.fail(c, errf(http.StatusMethodNotAllowed, "bad_request", "method %s not allowed", c.Request.Method))
			return
		}
		name := strings.TrimPrefix(p, "/")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(s.ui, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					c.Header("Cache-Control", "public, max-age=31536000, immutable")
				}
				files.ServeHTTP(c.Writer, c.Request)
				return
			}
		}
		c.Header("Cache-Control", "no-cache")
		if index == nil {
			c.Data(http.StatusOK, "text/html; charset=utf-8", []byte(notBuilt))
			return
		}
		c.Data(http.StatusOK, "text/html; charset=utf-8", index)
	}
}
