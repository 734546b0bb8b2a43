package importer

// OpenAPI 3.0/3.1 import. The document (JSON, or YAML read with go.yaml.in/yaml/v3) is
// decoded into plain maps and walked here: one request per operation, parameters and bodies
// filled from the document's examples, defaults and enums, bodies generated from their schema
// when no example is given. An own walk rather than an OpenAPI library: it reads 3.0 and 3.1
// alike (3.1's type arrays, examples arrays and const), needs only local $refs, and every step of
// it is bounded (oasMaxVisits, oasMaxDepth) whatever the document holds. docs/import/openapi.md
// has the mapping table.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/volley-load/volley/backend/internal/plan"
)

func init() { register("openapi", importOpenAPI, detectOpenAPI) }

const (
	// oasMaxInput bounds an OpenAPI document: decoding holds the whole tree in memory, several
	// times the text's size (the largest public API descriptions are about 10 MiB of JSON).
	oasMaxInput = 16 << 20
	// oasMaxYAML is the bound for YAML, whose node tree costs more: decoding 16 MiB of YAML
	// allocates about 0.8 GiB in all, 8 MiB half that.
	oasMaxYAML = 8 << 20
	// oasMaxNesting bounds how deep the document's text nests, checked before it is decoded.
	oasMaxNesting = 128
	// oasMaxDepth bounds a generated body's nesting, and oasMaxVisits the schema nodes one import
	// visits in all (YAML aliases and $refs can make a small document a large graph).
	oasMaxDepth  = 10
	oasMaxVisits = 200_000
	// oasPlaceholderBase stands in for a server URL that is relative or missing.
	oasPlaceholderBase = "https://api.example.invalid"
)

// oasHead finds "openapi: 3.x" at the start of a line (YAML, pretty JSON) or after "{" or ","
// (minified JSON).
var oasHead = regexp.MustCompile(`(?m)(?:^|[{,])\s*["']?openapi["']?\s*:\s*["']?3\.`)

// oasSwaggerHead finds "swagger: 2.x" as oasHead finds "openapi: 3.x".
var oasSwaggerHead = regexp.MustCompile(`(?m)(?:^|[{,])\s*["']?swagger["']?\s*:\s*["']?2\.`)

// oasSwagger2 is why a Swagger 2.0 document is not imported (named or detected).
const oasSwagger2 = "Swagger 2.0 is not OpenAPI 3: convert it first (e.g. with swagger2openapi or editor.swagger.io)"

func detectOpenAPI(data []byte) bool {
	return oasHead.Match(data[:min(len(data), 4096)])
}

// oasMethods are the operation keys of a path item, in the order OpenAPI lists them.
var oasMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

type oasImp struct {
	n      notes
	doc    map[string]any
	visits int
	active map[string]bool // the $refs being generated (sample), to stop recursive schemas
}

func importOpenAPI(data []byte, opts Options) (Result, error) {
	bad := func(msg string) (Result, error) { return Result{}, &InputError{Format: "openapi", Msg: msg} }
	if len(data) > oasMaxInput {
		return bad(fmt.Sprintf("the document is %d bytes; at most %d (16 MiB)", len(data), oasMaxInput))
	}
	if at := nestingOver(data, oasMaxNesting); at >= 0 {
		return bad(fmt.Sprintf("the document nests more than %d deep (at byte %d)", oasMaxNesting, at))
	}
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(data) > oasMaxYAML && (len(t) == 0 || t[0] != '{') {
		return bad(fmt.Sprintf("the YAML document is %d bytes; at most %d (8 MiB; JSON may have 16 MiB)", len(data), oasMaxYAML))
	}
	doc, err := oasDecode(data)
	if err != nil {
		return bad(err.Error())
	}
	ver := oasString(doc["openapi"]) // YAML reads an unquoted 3.1 as a number
	if !strings.HasPrefix(ver, "3.0") && !strings.HasPrefix(ver, "3.1") {
		if _, ok := doc["swagger"]; ok {
			return bad(oasSwagger2)
		}
		return bad(fmt.Sprintf("openapi version %q: 3.0 or 3.1 expected", ver))
	}
	o := &oasImp{doc: doc}
	base := o.server()
	if _, ok := doc["webhooks"]; ok {
		o.n.add("webhooks", "requests the API sends, not ones it answers: not imported")
	}
	paths, _ := doc["paths"].(map[string]any)
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var reqs []map[string]any
	ops := 0
	for _, path := range keys {
		if opts.stopped() {
			break
		}
		item, _ := o.deref(paths[path]).(map[string]any)
		if item == nil {
			continue
		}
		common, _ := item["parameters"].([]any)
		for _, m := range oasMethods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			label := strings.ToUpper(m) + " " + path
			ops++
			if len(reqs) >= plan.MaxRequests {
				o.n.overReq++
				continue
			}
			if r := o.operation(base, path, m, op, common, label); r != nil {
				reqs = append(reqs, r)
			}
		}
	}
	if len(reqs) == 0 {
		return bad(o.why(ops))
	}
	info, _ := doc["info"].(map[string]any)
	title, _ := info["title"].(string)
	if v, ok := info["version"].(string); ok && title != "" && v != "" {
		title += " " + v
	}
	p := map[string]any{
		"name":     planName(title, "Imported OpenAPI plan"),
		"flow":     plan.FlowWeighted,
		"requests": reqs,
		"load":     map[string]any{"executor": plan.ConstantVUs, "vus": 1, "duration": "1m"},
	}
	return o.n.result("openapi", p), nil
}

// why explains an import without requests: no operation, or why the first one was skipped.
func (o *oasImp) why(ops int) string {
	if ops == 0 {
		return "no operation under paths"
	}
	for _, n := range o.n.list {
		if strings.Contains(n.Element, " /") {
			return fmt.Sprintf("none of its %d operation(s) could be imported; %s: %s", ops, n.Element, n.Reason)
		}
	}
	return fmt.Sprintf("none of its %d operation(s) could be imported", ops)
}

// oasDecode reads a JSON or YAML document into maps, slices and scalars.
func oasDecode(data []byte) (map[string]any, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	var doc any
	if len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
	} else {
		var node yaml.Node
		if err := yaml.Unmarshal(data, &node); err != nil {
			return nil, fmt.Errorf("not valid YAML: %s", firstLine(err.Error()))
		}
		conv := yamlConv{memo: map[*yaml.Node]any{}}
		doc = conv.value(&node, 0)
		if conv.err != nil {
			return nil, conv.err
		}
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("the document is not an object")
	}
	return m, nil
}

// yamlConv turns a YAML node tree into maps, slices and scalars. It replaces yaml.v3's own
// decoding into interface{}, whose duplicate-key check is quadratic in a mapping's size (a 15 MiB
// document took minutes); here a later key simply wins. An alias gives the value its anchor was
// converted to, shared (never copied), so an alias bomb costs nothing until something walks it,
// and every walk of the result is bounded (oasMaxVisits).
type yamlConv struct {
	memo map[*yaml.Node]any
	err  error
}

func (c *yamlConv) value(n *yaml.Node, depth int) any {
	if c.err != nil || n == nil {
		return nil
	}
	if depth > oasMaxNesting {
		c.err = fmt.Errorf("the document nests more than %d deep (line %d)", oasMaxNesting, n.Line)
		return nil
	}
	if v, ok := c.memo[n]; ok {
		return v
	}
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			v = c.value(n.Content[0], depth)
		}
	case yaml.AliasNode:
		v = c.value(n.Alias, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			m[k.Value] = c.value(n.Content[i+1], depth+1)
		}
		v = m
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, e := range n.Content {
			l[i] = c.value(e, depth+1)
		}
		v = l
	case yaml.ScalarNode:
		v = yamlScalar(n)
	}
	c.memo[n] = v
	return v
}

// yamlScalar is a scalar's value by its resolved tag: strings and timestamps as text, numbers,
// booleans, null.
func yamlScalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!int":
		if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
			return i
		}
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!null":
		return nil
	}
	return n.Value
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// nestingOver returns the byte offset where data's brackets ([ {) or indentation (in steps of two
// spaces) first nest deeper than limit, or -1. It is a cheap guard, run before a parser that
// recurses: brackets inside quoted strings are skipped, the rest counted as written.
func nestingOver(data []byte, limit int) int {
	depth := 0
	var quote byte
	lineStart := true
	indent := 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		if quote != 0 {
			switch {
			case c == '\\' && quote == '"':
				i++
			case c == quote:
				quote = 0
			case c == '\n' && quote == '\'':
				// YAML single-quoted scalars may span lines; keep going.
			}
			continue
		}
		if lineStart {
			if c == ' ' {
				if indent++; indent/2 > limit {
					return i
				}
				continue
			}
			lineStart = false
		}
		switch c {
		case '\n':
			lineStart, indent = true, 0
		case '"':
			quote = c
		case '\'':
			if i > 0 && (data[i-1] == ' ' || data[i-1] == ':' || data[i-1] == '[' || data[i-1] == ',' || data[i-1] == '{' || data[i-1] == '\n') {
				quote = c
			}
		case '[', '{':
			if depth++; depth > limit {
				return i
			}
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return -1
}

// server is the base URL: the first server's, its {variables} at their defaults. A relative or
// missing one is resolved against oasPlaceholderBase, with a note.
func (o *oasImp) server() string {
	servers, _ := o.doc["servers"].([]any)
	if len(servers) == 0 {
		o.n.note("servers", "none given: requests use "+oasPlaceholderBase+" (edit the URLs)")
		return oasPlaceholderBase
	}
	s, _ := servers[0].(map[string]any)
	raw, _ := s["url"].(string)
	vars, _ := s["variables"].(map[string]any)
	for k, v := range vars {
		vm, _ := v.(map[string]any)
		raw = strings.ReplaceAll(raw, "{"+k+"}", oasString(vm["default"]))
	}
	raw = strings.TrimRight(raw, "/")
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		if !strings.HasPrefix(raw, "/") && raw != "" {
			raw = "/" + raw
		}
		o.n.note("servers[0] "+oasString(s["url"]), "a relative server URL: requests use "+oasPlaceholderBase+raw+" (edit the host)")
		raw = oasPlaceholderBase + raw
	}
	if len(servers) > 1 {
		o.n.add("servers[1:]", "only the first server is used")
	}
	return raw
}

// deref follows local $refs ("#/components/…"); an external or broken one gives nil.
func (o *oasImp) deref(v any) any {
	for hops := 0; hops < 32; hops++ {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		v = o.pointer(ref)
		if v == nil {
			return nil
		}
	}
	return nil
}

func (o *oasImp) pointer(ref string) any {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = o.doc
	for _, part := range strings.Split(p, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		if u, err := url.PathUnescape(part); err == nil {
			part = u
		}
		switch c := cur.(type) {
		case map[string]any:
			cur = c[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

var oasPathParam = regexp.MustCompile(`\{([^{}/]+)\}`)

// operation builds the request of one operation, or lists it as skipped (nil).
func (o *oasImp) operation(base, path, method string, op map[string]any, common []any, label string) map[string]any {
	if method == "trace" {
		o.n.add(label, "TRACE is not a method Volley sends")
		return nil
	}
	params := map[string]map[string]any{} // "in:name" → parameter
	var order []string
	for _, list := range [][]any{common, oasList(op["parameters"])} {
		for _, p := range list {
			pm, _ := o.deref(p).(map[string]any)
			if pm == nil {
				o.n.add(label, "a parameter $ref that is not local (#/…) or does not resolve")
				return nil
			}
			key := oasString(pm["in"]) + ":" + oasString(pm["name"])
			if _, seen := params[key]; !seen {
				order = append(order, key)
			}
			params[key] = pm
		}
	}
	headers := map[string]string{}
	var query, cookies []string
	u := path
	for _, key := range order {
		pm := params[key]
		in, name := oasString(pm["in"]), oasString(pm["name"])
		required, _ := pm["required"].(bool)
		if in != "path" && !required {
			continue
		}
		val, ok := o.paramValue(pm)
		if !ok && in == "path" {
			// As for bodies: a value generated from the schema's type, noted for a look.
			if val, ok = oasParamString(o.sample(pm["schema"], 0)); ok {
				o.n.note(label, fmt.Sprintf("the path parameter %q has no example, default or enum: %q is generated from its schema (edit it)", name, val))
			}
		}
		if !ok {
			o.n.add(label, fmt.Sprintf("needs a value for the %s parameter %q and the document gives no example, default or enum", in, name))
			return nil
		}
		switch in {
		case "path":
			u = strings.ReplaceAll(u, "{"+name+"}", url.PathEscape(val))
		case "query":
			query = append(query, url.QueryEscape(name)+"="+url.QueryEscape(val))
		case "header":
			headers[name] = val
		case "cookie":
			cookies = append(cookies, name+"="+val)
		}
	}
	if m := oasPathParam.FindString(u); m != "" {
		o.n.add(label, "the path parameter "+m+" is not declared")
		return nil
	}
	if len(query) > 0 {
		u += "?" + strings.Join(query, "&")
	}
	if len(cookies) > 0 {
		headers["Cookie"] = strings.Join(cookies, "; ")
	}
	name, _ := op["operationId"].(string)
	if name == "" {
		name = label
	}
	req := map[string]any{"name": impClip(name, plan.MaxNameBytes), "method": strings.ToUpper(method), "url": base + u, "weight": 1}
	if rb, ok := op["requestBody"]; ok {
		body, ctype, ok := o.body(rb, label)
		if !ok {
			return nil
		}
		if ctype != "" {
			req["body"] = body
			headers["Content-Type"] = ctype
		}
	}
	if len(headers) > 0 {
		req["headers"] = headers
	}
	if sec := o.security(op); sec != "" {
		if _, own := op["security"]; own {
			o.n.note(label, "needs credentials ("+sec+"): add them, e.g. a header whose value is {{secret.NAME}}")
		} else {
			o.n.note("security", "the operations need credentials ("+sec+") unless they say otherwise: add them, e.g. a header whose value is {{secret.NAME}}")
		}
	}
	return req
}

// oasRef is the $ref of a schema written as one ("" otherwise).
func oasRef(v any) string {
	m, _ := v.(map[string]any)
	ref, _ := m["$ref"].(string)
	return ref
}

func oasList(v any) []any { l, _ := v.([]any); return l }

// security names the security schemes an operation requires ("" when none).
func (o *oasImp) security(op map[string]any) string {
	reqs, ok := op["security"].([]any)
	if !ok {
		reqs, _ = o.doc["security"].([]any)
	}
	var names []string
	for _, r := range reqs {
		rm, _ := r.(map[string]any)
		if len(rm) == 0 {
			return "" // {} makes authentication optional
		}
		for k := range rm {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return strings.Join(slices.Compact(names), " or ")
}

// paramValue is a parameter's value from its example(s), or its schema's example, default,
// const or first enum value; false when none is given.
func (o *oasImp) paramValue(pm map[string]any) (string, bool) {
	v, ok := o.given(pm)
	if !ok {
		s, _ := o.deref(pm["schema"]).(map[string]any)
		if v, ok = o.given(s); !ok {
			if s != nil {
				v, ok = o.givenSchema(s)
			}
		}
	}
	if !ok {
		return "", false
	}
	return oasParamString(v)
}

// oasParamString writes a parameter value as text (an array comma-separated); an object is not
// one.
func oasParamString(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, oasString(e))
		}
		return strings.Join(parts, ","), true
	case map[string]any:
		return "", false
	}
	return oasString(v), true
}

// given is the example of a parameter or media type: example, else the first of examples (by
// name) holding a value.
func (o *oasImp) given(m map[string]any) (any, bool) {
	if m == nil {
		return nil, false
	}
	if v, ok := m["example"]; ok {
		return v, true
	}
	switch ex := m["examples"].(type) {
	case map[string]any:
		names := make([]string, 0, len(ex))
		for k := range ex {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if e, _ := o.deref(ex[k]).(map[string]any); e != nil {
				if v, ok := e["value"]; ok {
					return v, true
				}
			}
		}
	case []any: // a 3.1 schema's examples
		if len(ex) > 0 {
			return ex[0], true
		}
	}
	return nil, false
}

// givenSchema is a schema's own value: default, const or first enum value.
func (o *oasImp) givenSchema(s map[string]any) (any, bool) {
	if v, ok := s["default"]; ok {
		return v, true
	}
	if v, ok := s["const"]; ok {
		return v, true
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0], true
	}
	return nil, false
}

// body is an operation's request body: a JSON (or form) example, or one generated from the
// schema. ok is false when the operation must be skipped.
func (o *oasImp) body(rb any, label string) (body, ctype string, ok bool) {
	rbm, _ := o.deref(rb).(map[string]any)
	if rbm == nil {
		o.n.add(label, "a requestBody $ref that is not local (#/…) or does not resolve")
		return "", "", false
	}
	required, _ := rbm["required"].(bool)
	content, _ := rbm["content"].(map[string]any)
	types := make([]string, 0, len(content))
	for k := range content {
		types = append(types, k)
	}
	sort.Strings(types)
	pick := ""
	for _, t := range types {
		if oasJSONType(t) {
			pick = t
			break
		}
	}
	if pick == "" && slices.Contains(types, "application/x-www-form-urlencoded") {
		pick = "application/x-www-form-urlencoded"
	}
	if pick == "" {
		if required {
			o.n.add(label, "its request body ("+strings.Join(types, ", ")+") is not JSON or a form: not generated")
			return "", "", false
		}
		if len(types) > 0 {
			o.n.add(label, "its optional request body ("+strings.Join(types, ", ")+") is left out")
		}
		return "", "", true
	}
	media, _ := content[pick].(map[string]any)
	v, ok := o.given(media)
	if ok {
		v = o.plain(v)
	} else {
		schema := media["schema"]
		if o.deref(schema) == nil {
			o.n.add(label, "its request body has neither an example nor a (local) schema")
			return "", "", false
		}
		v = o.sample(schema, 0)
	}
	if o.visits > oasMaxVisits {
		o.n.add(label, "its request body example or schema is too large to write out")
		return "", "", false
	}
	if pick == "application/x-www-form-urlencoded" {
		m, _ := v.(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(oasString(m[k])))
		}
		return strings.Join(parts, "&"), pick, true
	}
	if s, isString := v.(string); isString && json.Valid([]byte(s)) {
		return s, pick, true // an example written as a string of JSON text
	}
	b, err := json.Marshal(v)
	if err != nil {
		o.n.add(label, "its request body example cannot be written as JSON")
		return "", "", false
	}
	return string(b), pick, true
}

func oasJSONType(t string) bool {
	t, _, _ = strings.Cut(t, ";")
	return t == "application/json" || strings.HasSuffix(t, "+json")
}

// sample is a minimal instance of a schema: its example, default, const or first enum value where
// given; else, by type, an object of its required properties (all of them when none is marked
// required) and an array of one item, down to oasMaxDepth.
func (o *oasImp) sample(schema any, depth int) any {
	o.visits++
	if o.visits > oasMaxVisits || depth > oasMaxDepth {
		return nil
	}
	if ref := oasRef(schema); ref != "" {
		if o.active[ref] {
			return nil // a recursive schema: the instance stops here
		}
		if o.active == nil {
			o.active = map[string]bool{}
		}
		o.active[ref] = true
		defer delete(o.active, ref)
	}
	s, _ := o.deref(schema).(map[string]any)
	if s == nil {
		return nil
	}
	if v, ok := o.given(s); ok {
		return o.plain(v)
	}
	if v, ok := o.givenSchema(s); ok {
		return o.plain(v)
	}
	if all, ok := s["allOf"].([]any); ok {
		merged := map[string]any{}
		var last any
		for _, sub := range all {
			last = o.sample(sub, depth+1)
			if m, ok := last.(map[string]any); ok {
				for k, v := range m {
					merged[k] = v
				}
			}
		}
		if len(merged) > 0 || len(all) == 0 {
			return o.withProps(s, merged, depth)
		}
		return last
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			return o.sample(alts[0], depth+1)
		}
	}
	switch oasType(s) {
	case "object":
		return o.withProps(s, map[string]any{}, depth)
	case "array":
		if o.active[oasRef(s["items"])] {
			return []any{} // items of the schema being generated: none
		}
		return []any{o.sample(s["items"], depth+1)}
	case "string":
		return oasStringSample(s)
	case "integer", "number":
		if m, ok := s["minimum"]; ok {
			return o.plain(m)
		}
		return 0
	case "boolean":
		return false
	}
	return nil
}

// withProps adds a schema's properties to obj: the required ones, or all when none is required.
func (o *oasImp) withProps(s map[string]any, obj map[string]any, depth int) map[string]any {
	props, _ := s["properties"].(map[string]any)
	var names []string
	for _, r := range oasList(s["required"]) {
		if n, ok := r.(string); ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		for k := range props {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if _, done := obj[n]; !done {
			if p, ok := props[n]; ok {
				if ro, _ := o.deref(p).(map[string]any)["readOnly"].(bool); ro {
					continue
				}
			}
			obj[n] = o.sample(props[n], depth+1)
		}
	}
	return obj
}

// oasType is a schema's type: 3.1's ["string", "null"] reads as "string"; a schema with
// properties and no type as "object".
func oasType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if e != "null" {
				return oasString(e)
			}
		}
		return "null"
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	if _, ok := s["items"]; ok {
		return "array"
	}
	return ""
}

func oasStringSample(s map[string]any) string {
	switch oasString(s["format"]) {
	case "date-time":
		return "2024-01-01T00:00:00Z"
	case "date":
		return "2024-01-01"
	case "uuid":
		return "00000000-0000-4000-8000-000000000000"
	case "email":
		return "user@example.com"
	case "uri", "url":
		return "https://example.com/"
	}
	n := 6
	if m, err := strconv.Atoi(oasString(s["minLength"])); err == nil && m > n {
		n = min(m, 64)
	}
	return strings.Repeat("x", n)
}

// plain copies an example for encoding, counting its nodes against oasMaxVisits: a YAML alias
// shares one decoded value between its uses, so a small document can describe a huge instance.
func (o *oasImp) plain(v any) any {
	if o.visits++; o.visits > oasMaxVisits {
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = o.plain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = o.plain(e)
		}
		return out
	}
	return v
}

// oasString writes a scalar as text.
func oasString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
