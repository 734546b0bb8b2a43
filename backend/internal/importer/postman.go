package importer

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/volley-load/volley/backend/internal/plan"
)

// postman: a Postman collection v2.1 (https://schema.postman.com/collection/json/v2.1.0/draft-07/docs/index.html;
// v2.0 reads the same) → a "sequence" plan of its requests in folder order, folders flattened
// ("Folder / Request"). Variables: a collection variable stays {{name}} and becomes a column of a
// one-row data table (data.csv) holding its value; a folder variable is written in place; one
// the collection does not define (an environment's or a global) becomes an empty column to fill.
// A variable that stands for the scheme and host ({{baseUrl}}/users) is written in place, since a
// plan's host cannot be a placeholder.
func init() { register("postman", importPostman, detectPostman) }

func detectPostman(data []byte) bool {
	if impJSONTooDeep(data, impMaxJSONDepth) >= 0 {
		return false
	}
	s := gjson.GetBytes(data, "info.schema").String()
	return strings.Contains(s, "getpostman.com/json/collection") || strings.Contains(s, "schema.postman.com") ||
		gjson.GetBytes(data, "info._postman_id").Exists() && gjson.GetBytes(data, "item").IsArray()
}

// postmanDynamic maps Postman's dynamic variables to Volley's built-ins.
var postmanDynamic = map[string]string{
	"$guid": "{{uuid}}", "$randomUUID": "{{uuid}}", "$randomInt": "{{random_int 0 1000}}",
}

var postmanVarRef = regexp.MustCompile(`\{\{([^{}]*)\}\}`)

type postmanImport struct {
	b        *impPlan
	collVars map[string]string // the collection's variables, by name
	colNames map[string]string // Postman name → data column name (letters, digits, _)
	columns  []string          // the data columns in first-use order
	colValue map[string]string
	noted    map[string]bool
	colUsed  map[string]bool // data column names taken
}

func importPostman(data []byte, o Options) (Result, error) {
	if at := impJSONTooDeep(data, impMaxJSONDepth); at >= 0 {
		return Result{}, &InputError{Format: "postman", Msg: fmt.Sprintf("the collection nests more than %d deep (at byte %d)", impMaxJSONDepth, at)}
	}
	if !gjson.ValidBytes(data) {
		return Result{}, &InputError{Format: "postman", Msg: "not valid JSON"}
	}
	root := gjson.ParseBytes(data)
	if root.Get("requests").IsArray() && !root.Get("item").Exists() {
		return Result{}, &InputError{Format: "postman", Msg: "a collection v1: export it from Postman as Collection v2.1"}
	}
	if !root.Get("item").IsArray() {
		return Result{}, &InputError{Format: "postman", Msg: "no item array: not a Postman collection v2.1"}
	}
	name := root.Get("info.name").String()
	if name == "" {
		name = "Postman collection"
	}
	pi := &postmanImport{b: newImpPlan(name, o), collVars: map[string]string{}, colNames: map[string]string{},
		colValue: map[string]string{}, noted: map[string]bool{}, colUsed: map[string]bool{}}
	for _, v := range root.Get("variable").Array() {
		if v.Get("disabled").Bool() {
			continue
		}
		pi.collVars[v.Get("key").String()] = v.Get("value").String()
	}
	pi.events("collection", root)
	pi.items(root.Get("item"), "", root.Get("auth"), map[string]string{}, 0)
	if len(pi.columns) > 0 {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		row := make([]string, len(pi.columns))
		for i, c := range pi.columns {
			row[i] = pi.colValue[c]
		}
		_ = w.WriteAll([][]string{pi.columns, row})
		text := buf.String()
		if len(row) == 1 && row[0] == "" {
			text = pi.columns[0] + "\n\"\"\n" // an empty line would be no row at all
		}
		pi.b.extra["data"] = map[string]any{"csv": text}
	}
	pi.b.extra["flow"] = "sequence"
	return pi.b.result("postman")
}

// events lists the scripts of a collection, folder or request as skipped.
// A request's test script asserting its status (pm.response.to.have.status(200),
// pm.expect(pm.response.code).to.eql(200)) gives it a status check (returned).
func (pi *postmanImport) events(elem string, node gjson.Result) (checks []map[string]any) {
	for _, e := range node.Get("event").Array() {
		exec := e.Get("script.exec")
		text := exec.String()
		if exec.IsArray() {
			var lines []string
			for _, l := range exec.Array() {
				lines = append(lines, l.String())
			}
			text = strings.Join(lines, "\n")
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		kind := e.Get("listen").String()
		reason := "scripts are not run: write a test script's assertions as checks, a pre-request script's values as data or extraction"
		if kind == "test" {
			if m := postmanStatusTest.FindStringSubmatch(text); m != nil {
				code := m[1] + m[2]
				checks = append(checks, map[string]any{"type": "status", "op": "eq", "value": json.Number(code)})
				reason = "scripts are not run; its status assertion became the check status = " + code + ", the rest is to write as checks"
			}
		}
		pi.b.skip(elem+" "+kind+" script", reason)
	}
	return checks
}

var postmanStatusTest = regexp.MustCompile(`response\.to\.have\.status\((\d{3})\)|expect\(pm\.response\.code\)\.to\.(?:eql|equal|be\.equal)\((\d{3})\)`)

// items walks a list of items in order: folders (an item with an item list) first their own
// items, depth first; auth is inherited from the closest folder, folder variables are written in
// place.
func (pi *postmanImport) items(list gjson.Result, prefix string, auth gjson.Result, local map[string]string, depth int) {
	for _, it := range list.Array() {
		name := it.Get("name").String()
		elem := strings.TrimPrefix(prefix+" / "+name, " / ")
		a := auth
		if x := it.Get("auth"); x.Exists() && x.Get("type").String() != "inherit" {
			a = x
		}
		if it.Get("item").IsArray() {
			vars := local
			if vs := it.Get("variable").Array(); len(vs) > 0 {
				vars = map[string]string{}
				for k, v := range local {
					vars[k] = v
				}
				for _, v := range vs {
					vars[v.Get("key").String()] = v.Get("value").String()
				}
			}
			pi.events("folder "+elem, it)
			if depth >= 16 {
				pi.b.skip("folder "+elem, "folders nest more than 16 deep")
				continue
			}
			pi.items(it.Get("item"), elem, a, vars, depth+1)
			continue
		}
		req := it.Get("request")
		if !req.Exists() {
			pi.b.skip(elem, "neither a request nor a folder")
			continue
		}
		if x := req.Get("auth"); x.Exists() && x.Get("type").String() != "inherit" {
			a = x
		}
		checks := pi.events(elem, it)
		pi.request(elem, req, a, local, checks)
	}
}

func (pi *postmanImport) request(elem string, req gjson.Result, auth gjson.Result, local map[string]string, checks []map[string]any) {
	r := impRequest{name: elem, method: "GET", checks: checks}
	if req.Type == gjson.String { // a request may be its URL alone
		r.url = req.String()
	} else {
		if m := req.Get("method").String(); m != "" {
			r.method = m
		}
		r.url = postmanURL(req.Get("url"))
	}
	var hdrs [][2]string
	if hs := req.Get("header"); hs.IsArray() {
		for _, h := range hs.Array() {
			if !h.Get("disabled").Bool() {
				hdrs = append(hdrs, [2]string{h.Get("key").String(), h.Get("value").String()})
			}
		}
	} else { // a header string: "Name: value" lines
		for _, line := range strings.Split(hs.String(), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				hdrs = append(hdrs, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
			}
		}
	}
	for _, h := range hdrs {
		k, v := h[0], h[1]
		if r.full() {
			r.over++
			continue
		}
		if impEngineHeader(k) {
			pi.b.skip(elem+" header "+k, "the engine sets this header itself")
			continue
		}
		r.setHeader(k, v)
	}
	if !pi.body(elem, req.Get("body"), &r) {
		return
	}
	if !pi.auth(elem, auth, &r, local) {
		return
	}
	// Path variables (/users/:id) take their value from url.variable.
	for _, v := range req.Get("url.variable").Array() {
		if k := v.Get("key").String(); k != "" {
			if val := v.Get("value").String(); val != "" {
				r.url = regexp.MustCompile(`/:`+regexp.QuoteMeta(k)+`(/|\?|#|$)`).ReplaceAllString(r.url, "/"+strings.ReplaceAll(val, "$", "$$")+"$1")
			} else {
				pi.b.skip(elem+" path variable :"+k, "no value in the collection: the URL keeps :"+k)
			}
		}
	}
	r.url = pi.hostVars(elem, r.url, local)
	r.url = pi.vars(elem, r.url, local)
	r.body = pi.vars(elem, r.body, local)
	for i := range r.headers {
		r.headers[i][1] = pi.vars(elem, r.headers[i][1], local)
	}
	pi.b.add(elem, r)
}

// postmanURL is a request's URL: the raw text, or one built from its parts.
func postmanURL(u gjson.Result) string {
	if u.Type == gjson.String {
		return u.String()
	}
	if raw := u.Get("raw").String(); raw != "" {
		return raw
	}
	var sb strings.Builder
	if p := u.Get("protocol").String(); p != "" {
		sb.WriteString(p + "://")
	}
	host := u.Get("host")
	if host.IsArray() {
		var parts []string
		for _, h := range host.Array() {
			parts = append(parts, h.String())
		}
		sb.WriteString(strings.Join(parts, "."))
	} else {
		sb.WriteString(host.String())
	}
	if p := u.Get("port").String(); p != "" {
		sb.WriteString(":" + p)
	}
	path := u.Get("path")
	if path.IsArray() {
		for _, p := range path.Array() {
			sb.WriteString("/" + p.String())
		}
	} else if p := path.String(); p != "" {
		sb.WriteString("/" + strings.TrimPrefix(p, "/"))
	}
	var q []string
	for _, kv := range u.Get("query").Array() {
		if !kv.Get("disabled").Bool() {
			q = append(q, kv.Get("key").String()+"="+kv.Get("value").String())
		}
	}
	if len(q) > 0 {
		sb.WriteString("?" + strings.Join(q, "&"))
	}
	return sb.String()
}

// body maps a request body; false when the request is skipped for it.
func (pi *postmanImport) body(elem string, body gjson.Result, r *impRequest) bool {
	if !body.Exists() || body.Get("disabled").Bool() {
		return true
	}
	ctype := ""
	switch mode := body.Get("mode").String(); mode {
	case "", "none":
	case "raw":
		r.body = body.Get("raw").String()
		switch body.Get("options.raw.language").String() {
		case "json":
			ctype = "application/json"
		case "xml":
			ctype = "application/xml"
		case "html":
			ctype = "text/html"
		case "javascript":
			ctype = "application/javascript"
		case "text":
			ctype = "text/plain"
		}
	case "urlencoded":
		var parts []string
		for _, kv := range body.Get("urlencoded").Array() {
			if !kv.Get("disabled").Bool() {
				parts = append(parts, postmanEscape(kv.Get("key").String())+"="+postmanEscape(kv.Get("value").String()))
			}
		}
		r.body = strings.Join(parts, "&")
		ctype = "application/x-www-form-urlencoded"
	case "graphql":
		q := map[string]any{"query": body.Get("graphql.query").String()}
		if v := strings.TrimSpace(body.Get("graphql.variables").String()); v != "" && gjson.Valid(v) {
			q["variables"] = gjson.Parse(v).Value()
		}
		js, _ := json.Marshal(q)
		r.body = string(js)
		ctype = "application/json"
	default: // formdata, file
		pi.b.skip(elem, fmt.Sprintf("a %s body (a multipart form or a file) is not imported", mode))
		return false
	}
	if _, set := r.header("Content-Type"); !set && ctype != "" {
		r.setHeader("Content-Type", ctype)
	}
	return true
}

// postmanAuthParam is a parameter of a v2.1 auth ([{key, value}]) or a v2.0 one ({key: value}).
func postmanAuthParam(a gjson.Result, kind, key string) string {
	p := a.Get(kind)
	if p.IsArray() {
		for _, kv := range p.Array() {
			if kv.Get("key").String() == key {
				return kv.Get("value").String()
			}
		}
		return ""
	}
	return p.Get(key).String()
}

// auth applies a request's (inherited) auth; false when the request is skipped for it.
func (pi *postmanImport) auth(elem string, a gjson.Result, r *impRequest, local map[string]string) bool {
	switch t := a.Get("type").String(); t {
	case "", "noauth", "inherit":
	case "bearer":
		r.setHeader("Authorization", "Bearer "+postmanAuthParam(a, t, "token"))
	case "basic":
		user, pass := postmanAuthParam(a, t, "username"), postmanAuthParam(a, t, "password")
		cred := pi.inline(user, local) + ":" + pi.inline(pass, local)
		if strings.Contains(cred, "{{") {
			pi.b.skip(elem+" basic auth", "its user or password is a variable the collection does not define, and basic auth is sent encoded: add the Authorization header by hand")
			return true
		}
		r.setHeader("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	case "apikey":
		key, val := postmanAuthParam(a, t, "key"), postmanAuthParam(a, t, "value")
		if key == "" {
			key = "X-API-Key"
		}
		if postmanAuthParam(a, t, "in") == "query" {
			sep := "?"
			if strings.Contains(r.url, "?") {
				sep = "&"
			}
			r.url += sep + postmanEscape(key) + "=" + postmanEscape(val)
		} else {
			r.setHeader(key, val)
		}
	case "oauth2":
		if tok := postmanAuthParam(a, t, "accessToken"); tok != "" && postmanAuthParam(a, t, "addTokenTo") != "queryParams" {
			r.setHeader("Authorization", "Bearer "+tok)
			if !pi.noted["oauth2 "+tok] {
				pi.noted["oauth2 "+tok] = true
				pi.b.skip(elem+" oauth2 auth", "sent as its current access token (Authorization: Bearer) by every request using it: the token is not renewed")
			}
			return true
		}
		fallthrough
	default:
		pi.b.skip(elem+" "+t+" auth", "this kind of auth is not imported: add its header by hand")
	}
	return true
}

// inline writes known variables (folder, then collection) in place.
func (pi *postmanImport) inline(s string, local map[string]string) string {
	return postmanVarRef.ReplaceAllStringFunc(s, func(m string) string {
		n := strings.TrimSpace(m[2 : len(m)-2])
		if v, ok := local[n]; ok {
			return v
		}
		if v, ok := pi.collVars[n]; ok {
			return v
		}
		return m
	})
}

// hostVars writes in place the variables of the URL's scheme and host (a plan's host cannot be a
// placeholder); one the collection does not define gives the host NAME.invalid, to be edited.
func (pi *postmanImport) hostVars(elem, u string, local map[string]string) string {
	end := len(u)
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexAny(u[i+3:], "/?#"); j >= 0 {
			end = i + 3 + j
		}
	} else if j := strings.IndexAny(u, "/?#"); j >= 0 {
		end = j
	}
	head := pi.inline(u[:end], local)
	if m := postmanVarRef.FindStringSubmatch(head); m != nil {
		n := strings.TrimSpace(m[1])
		if !pi.noted["host "+n] {
			pi.noted["host "+n] = true
			pi.b.skip("variable {{"+n+"}}", "stands in the URL's host but the collection does not define it (an environment's?): the URL has the host "+postmanHostLabel(n)+".invalid; edit it")
		}
		head = postmanVarRef.ReplaceAllStringFunc(head, func(m string) string { return postmanHostLabel(m[2:len(m)-2]) + ".invalid" })
	}
	if !strings.Contains(head, "://") {
		head = "http://" + head // Postman's default scheme
	}
	return head + u[end:]
}

func postmanHostLabel(n string) string {
	l := strings.Trim(regexp.MustCompile(`[^A-Za-z0-9-]+`).ReplaceAllString(n, "-"), "-")
	if l == "" {
		l = "host"
	}
	return strings.ToLower(l)
}

// vars rewrites the {{variables}} of s: a folder variable in place, Postman's dynamic ones as
// Volley's built-ins, the others as data columns.
func (pi *postmanImport) vars(elem, s string, local map[string]string) string {
	return postmanVarRef.ReplaceAllStringFunc(s, func(m string) string {
		n := strings.TrimSpace(m[2 : len(m)-2])
		if v, ok := local[n]; ok {
			return v
		}
		if v, ok := postmanDynamic[n]; ok {
			return v
		}
		if c := pi.column(elem, n); c != "" {
			return "{{" + c + "}}"
		}
		return pi.collVars[n]
	})
}

// column returns the data column of a Postman variable, adding it on first use.
func (pi *postmanImport) column(elem, n string) string {
	if c, ok := pi.colNames[n]; ok {
		return c
	}
	if len(pi.columns) >= plan.MaxCSVColumns {
		if !pi.noted["columns "+n] {
			pi.noted["columns "+n] = true
			pi.b.skip("variable {{"+n+"}}", fmt.Sprintf("a data table has at most %d columns: its value is written in place", plan.MaxCSVColumns))
		}
		return ""
	}
	c := harVarName(strings.ReplaceAll(strings.TrimPrefix(n, "$"), ".", "_"), pi.colUsed)
	pi.colNames[n] = c
	pi.columns = append(pi.columns, c)
	v, defined := pi.collVars[n]
	pi.colValue[c] = v
	switch {
	case strings.HasPrefix(n, "$"):
		pi.b.skip("variable {{"+n+"}}", "Postman's dynamic variable has no Volley equivalent: it is the data column "+c+"; give it values in data.csv")
	case !defined:
		pi.b.skip("variable {{"+n+"}}", "not defined in the collection (an environment's or a global?): it is the empty data column "+c+"; fill in its value in data.csv")
	case c != n:
		pi.b.skip("variable {{"+n+"}}", "renamed {{"+c+"}}: a Volley variable is letters, digits and _")
	}
	return c
}

// postmanEscape query-escapes s, leaving its {{variables}} as they are.
func postmanEscape(s string) string {
	var sb strings.Builder
	last := 0
	for _, m := range postmanVarRef.FindAllStringIndex(s, -1) {
		sb.WriteString(url.QueryEscape(s[last:m[0]]))
		sb.WriteString(s[m[0]:m[1]])
		last = m[1]
	}
	sb.WriteString(url.QueryEscape(s[last:]))
	return sb.String()
}
