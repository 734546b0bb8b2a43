package auth

import (
	"net/http"
	"strings"
)

// Rule says which role a route needs. Method "" matches any method; a Route ending in "/*"
// matches that path and everything under it. Routes are gin's patterns ("/api/users/:name").
type Rule struct {
	Method string
	Route  string
	Role   Role
}

// Policy maps a route to the role it needs: the first matching rule, else the default — GET and
// HEAD need Viewer, any other method Tester. A route added later that needs another role is one
// more Rule (or, to raise it, api's Require middleware on the route).
type Policy []Rule

// RoleFor returns the role a request for method on the gin route pattern needs.
func (p Policy) RoleFor(method, route string) Role {
	for _, r := range p {
		if r.Method != "" && r.Method != method {
			continue
		}
		if prefix, ok := strings.CutSuffix(r.Route, "/*"); ok {
			if route == prefix || strings.HasPrefix(route, prefix+"/") {
				return r.Role
			}
		} else if route == r.Route {
			return r.Role
		}
	}
	if method == http.MethodGet || method == http.MethodHead {
		return Viewer
	}
	return Tester
}
