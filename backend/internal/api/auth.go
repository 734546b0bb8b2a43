package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
)

// SessionCookie is the name of the login session cookie (HttpOnly, SameSite=Strict, Path=/).
const SessionCookie = "volley_session"

// AuthConfig turns authentication on for a Server (see UseAuth).
type AuthConfig struct {
	Service *auth.Service
	// AllowLocal: while no user exists the local user is the admin. Set it only for a server bound
	// to loopback; without it, no users means nobody gets in.
	AllowLocal bool
	// SecureCookie marks the session cookie Secure for every request (an https public URL behind a
	// TLS-terminating proxy). It is always Secure on a TLS request.
	SecureCookie bool
}

// routePolicy is the role each API route needs beyond the default (GET and HEAD: viewer; any
// other method: tester). Admin-only routes added later take one line here, or
// Require(auth.Admin) on the route.
var routePolicy = auth.Policy{
	{Method: http.MethodPost, Route: "/api/auth/logout", Role: auth.Viewer},
	{Method: http.MethodPost, Route: "/api/tokens", Role: auth.Viewer},       // one's own tokens
	{Method: http.MethodDelete, Route: "/api/tokens/:id", Role: auth.Viewer}, // own, or any for an admin
	{Route: "/api/users/*", Role: auth.Admin},
	{Route: "/api/audit/*", Role: auth.Admin},
	// Secret names and times: testers read them to write {{secret.NAME}} in plans (and a run start
	// naming an unknown secret tells them as much). Values are write-only; setting and deleting
	// are an admin's.
	{Method: http.MethodGet, Route: "/api/secrets", Role: auth.Tester},
	{Method: http.MethodHead, Route: "/api/secrets", Role: auth.Tester},
	{Route: "/api/secrets/*", Role: auth.Admin},
	// A CLI run uploaded into the history (runimport.go): a tester's, as starting a run is.
	{Method: http.MethodPost, Route: "/api/runs/import", Role: auth.Tester},
	// A test request of a plan (send.go) goes to its target as a run would: a tester's.
	{Method: http.MethodPost, Route: "/api/plans/send", Role: auth.Tester},
	// Another tool's test turned into a plan (sourceimport.go): a tester's, as creating a plan is.
	{Method: http.MethodPost, Route: "/api/import", Role: auth.Tester},
	// The agents' join token lets a machine join as a load generator: an admin's (agents.go).
	{Route: "/api/agents/token", Role: auth.Admin},
}

// publicRoutes answer without a session or token.
var publicRoutes = map[string]bool{
	"GET /api/health":      true,
	"HEAD /api/health":     true,
	"POST /api/auth/login": true,
}

const principalKey = "volley.principal"

// UseAuth turns authentication on: every /api route but the public ones needs a session cookie
// or an API token (`Authorization: Bearer …`) and the role routePolicy names. Without it (tests
// of other parts) every caller is the local admin. It returns s.
func (s *Server) UseAuth(cfg AuthConfig) *Server {
	s.auth = &cfg
	return s
}

// Require is route middleware that raises the role a route needs above the default, e.g.
// a.PUT("/settings", Require(auth.Admin), s.wrap(h)).
func Require(role auth.Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !principal(c).Role.Allows(role) {
			abortWith(c, forbidden(role))
			return
		}
		c.Next()
	}
}

func forbidden(need auth.Role) *Error {
	return errf(http.StatusForbidden, "forbidden", "this needs the %s role", need)
}

func unauthorized(msg string) *Error {
	return errf(http.StatusUnauthorized, "unauthorized", "%s", msg)
}

// principal is the caller of a request that went through authenticate (the local admin otherwise).
func principal(c *gin.Context) *auth.Principal {
	if v, ok := c.Get(principalKey); ok {
		return v.(*auth.Principal)
	}
	return auth.Local()
}

// authenticate is the middleware that finds who calls and checks the route's role. It composes
// after the guard (Host/Origin values): here an Origin header is only required to be present on
// cookie-authenticated state-changing requests. Non-API paths (the SPA, login page included) stay
// public.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		path := c.Request.URL.Path
		if path != "/api" && !strings.HasPrefix(path, "/api/") {
			c.Next()
			return
		}
		route := c.FullPath()
		if publicRoutes[c.Request.Method+" "+route] {
			c.Next()
			return
		}
		p, err := s.identify(c)
		if err != nil {
			if c.Request.Header.Get("Upgrade") == "" {
				c.Header("WWW-Authenticate", `Bearer realm="volley"`)
			}
			s.fail(c, err)
			return
		}
		c.Set(principalKey, p)
		if need := routePolicy.RoleFor(c.Request.Method, route); !p.Role.Allows(need) {
			s.fail(c, forbidden(need))
			return
		}
		c.Next()
	}
}

// identify returns the caller: an API token, else a session cookie, else the local admin while no
// user exists on a loopback server. Errors are API errors (401, 403) or storage errors.
func (s *Server) identify(c *gin.Context) (*auth.Principal, error) {
	if s.auth == nil {
		return auth.Local(), nil
	}
	ctx := c.Request.Context()
	svc := s.auth.Service
	var bad *Error
	if h := c.GetHeader("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			bad = unauthorized("the Authorization header must be Bearer TOKEN")
		} else {
			p, err := svc.TokenPrincipal(ctx, strings.TrimSpace(tok))
			if err == nil {
				return p, nil
			}
			if !errors.Is(err, auth.ErrUnauthenticated) {
				return nil, err
			}
			bad = unauthorized("the API token is unknown or revoked")
		}
	} else if ck, err := c.Cookie(SessionCookie); err == nil && ck != "" {
		p, err := svc.Session(ctx, ck)
		if err == nil {
			if m := c.Request.Method; m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions &&
				c.GetHeader("Origin") == "" {
				return nil, errf(http.StatusForbidden, "origin_required",
					"a request authenticated by the session cookie that changes state must carry an Origin header")
			}
			return p, nil
		}
		if !errors.Is(err, auth.ErrUnauthenticated) {
			return nil, err
		}
		bad = unauthorized("the session has ended; log in again")
	}
	has, err := svc.HasUsers(ctx)
	if err != nil {
		return nil, err
	}
	if !has && s.auth.AllowLocal {
		return auth.Local(), nil
	}
	if bad != nil {
		return nil, bad
	}
	return nil, unauthorized("log in, or send Authorization: Bearer TOKEN")
}

// authError maps the auth package's errors to API errors; others go to toError unchanged.
func authError(err error) error {
	var ie *auth.InputError
	var le *auth.LimitedError
	switch {
	case errors.As(err, &ie):
		e := badRequest("%s", ie.Error())
		e.Fields = map[string]string{ie.Field: ie.Msg}
		return e
	case errors.As(err, &le):
		return errf(http.StatusTooManyRequests, "too_many_attempts", "%s", le.Error())
	case errors.Is(err, auth.ErrExists):
		return errf(http.StatusConflict, "exists", "a user of that name already exists")
	case errors.Is(err, auth.ErrLastAdmin):
		return errf(http.StatusConflict, "last_admin", "the last admin cannot be deleted or demoted")
	case errors.Is(err, auth.ErrBadCredentials):
		return errf(http.StatusUnauthorized, "bad_credentials", "wrong user name or password")
	case errors.Is(err, auth.ErrUnauthenticated):
		return unauthorized("log in, or send Authorization: Bearer TOKEN")
	}
	return err
}

// decodeBody reads a JSON object into v, refusing unknown fields (named in fields) and values of
// the wrong type ("rate: must be a number", the field named in fields; mustBe).
func decodeBody(c *gin.Context, v any, what string) error {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return unreadableBody()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" { // the field and what it must be, in words
			e := badRequest("%s: %s", te.Field, mustBe(te.Type))
			e.Fields = map[string]string{te.Field: mustBe(te.Type)}
			return e
		}
		if errors.As(err, &te) { // the body itself is of another JSON type: say which, never Go's type
			return badRequest("the body must be a JSON object with %s, not a JSON %s", what, te.Value)
		}
		e := badRequest("the body must be a JSON object with %s: %v", what, err)
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			e.Fields = map[string]string{strings.Trim(f, `"`): "unknown field"}
		}
		return e
	}
	if dec.More() {
		return badRequest("unexpected data after the JSON object")
	}
	return nil
}

func (s *Server) audit(c *gin.Context, action, target string, detail map[string]any) {
	s.auditAs(c, principal(c).User, action, target, detail)
}

func (s *Server) auditAs(c *gin.Context, actor, action, target string, detail map[string]any) {
	if s.auth == nil {
		return
	}
	if err := s.auth.Service.Audit(c.Request.Context(), auth.Entry{Actor: actor, Action: action, Target: target,
		Detail: detail, Addr: c.RemoteIP()}); err != nil {
		s.log.Error("audit log", "action", action, "err", err)
	}
}

// auditRun records a run started or stopped, with its plan and the hosts its requests target.
func (s *Server) auditRun(c *gin.Context, action string, runID, planID int64, planName string, spec []byte) {
	s.audit(c, action, fmt.Sprintf("run %d", runID),
		map[string]any{"run_id": runID, "plan_id": planID, "plan_name": planName, "hosts": planHosts(spec)})
}

// planHosts returns the distinct host[:port] of a plan's request URLs, sorted.
func planHosts(spec []byte) []string {
	var p struct {
		Requests []struct {
			URL string `json:"url"`
		} `json:"requests"`
		HTTP struct {
			Hosts map[string]string `json:"hosts"`
		} `json:"http"`
	}
	_ = json.Unmarshal(spec, &p)
	hosts := []string{}
	for _, r := range p.Requests {
		if u, err := url.Parse(r.URL); err == nil && u.Host != "" {
			hosts = append(hosts, u.Host)
		}
	}
	// http.hosts sends requests to other addresses than their URLs name: those are targets too.
	for name, addrs := range p.HTTP.Hosts {
		for _, a := range strings.Split(addrs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				hosts = append(hosts, name+"→"+a)
			}
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

type meJSON struct {
	User        string `json:"user"`
	Role        string `json:"role"`
	AuthEnabled bool   `json:"auth_enabled"`
	Via         string `json:"via"`
}

func toMe(p *auth.Principal) meJSON {
	return meJSON{User: p.User, Role: string(p.Role), AuthEnabled: p.Via != auth.ViaLocal, Via: p.Via}
}

func (s *Server) me(c *gin.Context) (int, any, error) {
	return http.StatusOK, toMe(principal(c)), nil
}

func (s *Server) secureRequest(c *gin.Context) bool {
	return c.Request.TLS != nil || (s.auth != nil && s.auth.SecureCookie)
}

func (s *Server) login(c *gin.Context) (int, any, error) {
	if s.auth == nil {
		return 0, nil, errf(http.StatusNotFound, "not_found", "this server has no users")
	}
	var in struct {
		Username *string `json:"username"`
		Password *string `json:"password"`
	}
	if err := decodeBody(c, &in, "username and password (strings)"); err != nil {
		return 0, nil, err
	}
	fields := map[string]string{}
	if in.Username == nil || *in.Username == "" {
		fields["username"] = "required"
	} else if len(*in.Username) > 64 {
		fields["username"] = "at most 64 characters"
	}
	if in.Password == nil || *in.Password == "" {
		fields["password"] = "required"
	}
	if len(fields) > 0 {
		e := badRequest("username and password are required")
		e.Fields = fields
		return 0, nil, e
	}
	svc := s.auth.Service
	secret, u, err := svc.Login(c.Request.Context(), c.RemoteIP(), *in.Username, *in.Password)
	if err != nil {
		var le *auth.LimitedError
		if errors.As(err, &le) {
			c.Header("Retry-After", strconv.Itoa(int(math.Ceil(le.RetryAfter.Seconds()))))
		} else if errors.Is(err, auth.ErrBadCredentials) {
			s.auditAs(c, *in.Username, auth.ActLoginFailed, "user "+*in.Username, nil)
		}
		return 0, nil, authError(err)
	}
	http.SetCookie(c.Writer, &http.Cookie{Name: SessionCookie, Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secureRequest(c), MaxAge: int(svc.MaxAge() / time.Second)})
	s.auditAs(c, u.Name, auth.ActLogin, "user "+u.Name, nil)
	return http.StatusOK, toMe(&auth.Principal{UserID: u.ID, User: u.Name, Role: u.Role, Via: auth.ViaSession}), nil
}

func (s *Server) logout(c *gin.Context) (int, any, error) {
	if s.auth != nil {
		if ck, err := c.Cookie(SessionCookie); err == nil && ck != "" {
			if err := s.auth.Service.Logout(c.Request.Context(), ck); err != nil {
				return 0, nil, err
			}
		}
		if p := principal(c); p.Via == auth.ViaSession {
			s.audit(c, auth.ActLogout, "user "+p.User, nil)
		}
	}
	http.SetCookie(c.Writer, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secureRequest(c), MaxAge: -1})
	return http.StatusNoContent, nil, nil
}

// ---- users (admin) --------------------------------------------------------------------------

type userJSON struct {
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toUserJSON(u *auth.User) userJSON {
	return userJSON{Name: u.Name, Role: string(u.Role), CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

func (s *Server) authService() (*auth.Service, error) {
	if s.auth == nil {
		return nil, errf(http.StatusNotFound, "not_found", "this server has no user management")
	}
	return s.auth.Service, nil
}

func (s *Server) listUsers(c *gin.Context) (int, any, error) {
	svc, err := s.authService()
	if err != nil {
		return 0, nil, err
	}
	us, err := svc.ListUsers(c.Request.Context())
	if err != nil {
		return 0, nil, err
	}
	out := list[userJSON]{Items: make([]userJSON, len(us)), Total: int64(len(us))}
	for i := range us {
		out.Items[i] = toUserJSON(&us[i])
	}
	return http.StatusOK, out, nil
}

func (s *Server) createUser(c *gin.Context) (int, any, error) {
	svc, err := s.authService()
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		Name     string `json:"name"`
		Role     string `json:"role"`
		Password string `json:"password"`
	}
	if err := decodeBody(c, &in, "name, role and password (strings)"); err != nil {
		return 0, nil, err
	}
	role, err := auth.ParseRole(in.Role)
	if err != nil {
		return 0, nil, authError(err)
	}
	u, err := svc.AddUser(c.Request.Context(), in.Name, role, in.Password)
	if err != nil {
		return 0, nil, authError(err)
	}
	s.audit(c, auth.ActUserCreate, "user "+u.Name, map[string]any{"role": u.Role})
	return http.StatusCreated, toUserJSON(u), nil
}

func (s *Server) updateUser(c *gin.Context) (int, any, error) {
	svc, err := s.authService()
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		Role     *string `json:"role"`
		Password *string `json:"password"`
	}
	if err := decodeBody(c, &in, "role and/or password (strings)"); err != nil {
		return 0, nil, err
	}
	var role *auth.Role
	detail := map[string]any{}
	if in.Role != nil {
		r, err := auth.ParseRole(*in.Role)
		if err != nil {
			return 0, nil, authError(err)
		}
		role = &r
		detail["role"] = r
	}
	if in.Password != nil {
		detail["password"] = "changed"
	}
	u, err := svc.UpdateUser(c.Request.Context(), c.Param("name"), role, in.Password)
	if err != nil {
		return 0, nil, authError(err)
	}
	s.audit(c, auth.ActUserUpdate, "user "+u.Name, detail)
	return http.StatusOK, toUserJSON(u), nil
}

func (s *Server) deleteUser(c *gin.Context) (int, any, error) {
	svc, err := s.authService()
	if err != nil {
		return 0, nil, err
	}
	name := c.Param("name")
	if err := svc.DeleteUser(c.Request.Context(), name, false); err != nil {
		return 0, nil, authError(err)
	}
	s.audit(c, auth.ActUserDelete, "user "+name, nil)
	return http.StatusNoContent, nil, nil
}

// ---- API tokens -----------------------------------------------------------------------------

type tokenJSON struct {
	ID         int64      `json:"id"`
	User       string     `json:"user"`
	Role       string     `json:"role"`
	Label      string     `json:"label"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	// Token is the secret, only in the answer that created it.
	Token string `json:"token,omitempty"`
}

func toTokenJSON(t *auth.Token) tokenJSON {
	return tokenJSON{ID: t.ID, User: t.User, Role: string(t.Role), Label: t.Label, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt}
}

func (s *Server) listTokens(c *gin.Context) (int, any, error) {
	svc, err := s.authService()
	if err != nil {
		return 0, nil, err
	}
	p := principal(c)
	owner := p.UserID
	if p.Role == auth.Admin {
		owner = 0 // every token
	}
	ts, err := svc.ListTokens(c.Request.Context(), owner)
	if err != nil {
		return 0, nil, err
	}
	out := list[tokenJSON]{Items: make([]tokenJSON, len(ts)), Total: int64(len(ts))}
	for i := range ts {
		out.Items[i] = toTokenJSON(&ts[i])
	}
	return http.StatusOK, out, nil
}

func (s *Server) createToken(c *gin.Context) (int, any, error) {
	svc, err := s.authService()
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		Label string `json:"label"`
		User  string `json:"user"`
	}
	if err := decodeBody(c, &in, "label and, for an admin, user (strings)"); err != nil {
		return 0, nil, err
	}
	p := principal(c)
	owner := p.User
	if in.User != "" && !strings.EqualFold(in.User, p.User) {
		if p.Role != auth.Admin {
			return 0, nil, errf(http.StatusForbidden, "forbidden", "only an admin makes tokens for other users")
		}
		owner = in.User
	}
	if p.Via == auth.ViaLocal && in.User == "" {
		e := badRequest("a token belongs to a user: add one (volley user add) and name it in user")
		e.Fields = map[string]string{"user": "required while no user is logged in"}
		return 0, nil, e
	}
	secret, t, err := svc.CreateToken(c.Request.Context(), owner, in.Label)
	if errors.Is(err, auth.ErrNotFound) {
		e := badRequest("no user %q", owner)
		e.Fields = map[string]string{"user": "no such user"}
		return 0, nil, e
	}
	if err != nil {
		return 0, nil, authError(err)
	}
	s.audit(c, auth.ActTokenCreate, fmt.Sprintf("token %d", t.ID), map[string]any{"user": t.User, "label": t.Label})
	out := toTokenJSON(t)
	out.Token = secret
	return http.StatusCreated, out, nil
}

func (s *Server) revokeToken(c *gin.Context) (int, any, error) {
	svc, err := s.authService()
	if err != nil {
		return 0, nil, err
	}
	id, err := idParam(c)
	if err != nil {
		return 0, nil, err
	}
	t, err := svc.GetToken(c.Request.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	if p := principal(c); p.Role != auth.Admin && t.UserID != p.UserID {
		return 0, nil, errf(http.StatusNotFound, "not_found", "not found") // others' tokens are not shown
	}
	if err := svc.RevokeToken(c.Request.Context(), id); err != nil {
		return 0, nil, err
	}
	s.audit(c, auth.ActTokenRevoke, fmt.Sprintf("token %d", id), map[string]any{"user": t.User, "label": t.Label})
	return http.StatusNoContent, nil, nil
}

// ---- audit log (admin) ----------------------------------------------------------------------

type auditJSON struct {
	ID     int64          `json:"id"`
	At     time.Time      `json:"at"`
	Actor  string         `json:"actor"`
	Action string         `json:"action"`
	Target string         `json:"target"`
	Detail map[string]any `json:"detail"`
	Addr   string         `json:"addr"`
}

func (s *Server) auditLog(c *gin.Context) (int, any, error) {
	svc, err := s.authService()
	if err != nil {
		return 0, nil, err
	}
	limit, offset := 50, 0
	for name := range c.Request.URL.Query() {
		if name != "limit" && name != "offset" {
			e := badRequest("unknown parameter %q (use limit, offset)", name)
			e.Fields = map[string]string{name: "unknown parameter"}
			return 0, nil, e
		}
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			e := badRequest("limit must be 1-500")
			e.Fields = map[string]string{"limit": "an integer from 1 to 500"}
			return 0, nil, e
		}
		limit = n
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			e := badRequest("offset must be a non-negative integer")
			e.Fields = map[string]string{"offset": "a non-negative integer"}
			return 0, nil, e
		}
		offset = n
	}
	es, total, err := svc.AuditLog(c.Request.Context(), limit, offset)
	if err != nil {
		return 0, nil, err
	}
	out := list[auditJSON]{Items: make([]auditJSON, len(es)), Total: total}
	for i, e := range es {
		d := e.Detail
		if d == nil {
			d = map[string]any{}
		}
		out.Items[i] = auditJSON{ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target, Detail: d, Addr: e.Addr}
	}
	return http.StatusOK, out, nil
}
