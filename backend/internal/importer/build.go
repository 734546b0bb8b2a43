package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/volley-load/volley/backend/internal/plan"
)

// impPlan collects the requests and options of an imported plan and what was skipped on the
// way, and keeps the plan within plan.Parse's bounds (bounds.go there): an element over one is
// skipped with the bound named rather than producing a plan that does not validate.
type impPlan struct {
	name    string
	reqs    []map[string]any
	http    map[string]any
	extra   map[string]any // other top-level fields (flow, data, think_time)
	skipped []Skipped
	opts    Options // its Context ends the import early (add then adds nothing)
	overReq int     // requests left out past plan.MaxRequests (one entry: impOverRequests)
}

func newImpPlan(name string, o Options) *impPlan {
	return &impPlan{name: name, http: map[string]any{}, extra: map[string]any{}, opts: o}
}

// skip records an element left out and why.
func (b *impPlan) skip(element, reason string) {
	b.skipped = append(b.skipped, Skipped{Element: impClip(element, 200), Reason: reason})
}

// note records a remark on an element that was imported.
func (b *impPlan) note(element, reason string) {
	b.skipped = append(b.skipped, Skipped{Element: impClip(element, 200), Reason: reason, Note: true})
}

// impRequest is one request being imported: method, URL, headers in their order, body.
type impRequest struct {
	name    string
	method  string
	url     string
	headers [][2]string
	over    int // headers left out past plan.MaxHeaders (see full)
	body    string
	think   string
	extract []map[string]any
	checks  []map[string]any
}

// header returns the value of the request's header name (case-insensitive) and whether it is set.
func (r *impRequest) header(name string) (string, bool) {
	for _, h := range r.headers {
		if strings.EqualFold(h[0], name) {
			return h[1], true
		}
	}
	return "", false
}

// setHeader adds a header, or replaces the value of one of the same name (case-insensitive).
// A new name past plan.MaxHeaders is only counted (r.over), so that a scan costs at most
// plan.MaxHeaders comparisons and an import's header work stays linear in its input.
func (r *impRequest) setHeader(name, value string) {
	for i, h := range r.headers {
		if strings.EqualFold(h[0], name) {
			r.headers[i][1] = value
			return
		}
	}
	if r.full() {
		r.over++
		return
	}
	r.headers = append(r.headers, [2]string{name, value})
}

// full reports whether the request holds plan.MaxHeaders headers: an importer then counts each
// further header of the input in r.over without looking at it (add reports them as one skip).
func (r *impRequest) full() bool {
	return len(r.headers) >= plan.MaxHeaders
}

// impEngineHeaders are set by the engine itself on every request (or belong to HTTP/2 framing),
// so an imported value would be wrong or doubled.
var impEngineHeaders = []string{"host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade", "te", "proxy-connection"}

// impEngineHeader reports whether the engine sets the header itself (HTTP/2 pseudo-headers too).
func impEngineHeader(name string) bool {
	return strings.HasPrefix(name, ":") || slices.Contains(impEngineHeaders, strings.ToLower(name))
}

// add puts the request in the plan, or skips it (element names it) when it breaks a plan bound;
// a header that breaks one is left out alone.
func (b *impPlan) add(element string, r impRequest) bool {
	r.method = strings.ToUpper(r.method)
	if r.method == "" {
		r.method = "GET"
	}
	switch {
	case b.opts.stopped():
		return false
	case len(b.reqs) >= plan.MaxRequests:
		b.overReq++
		return false
	case !slices.Contains(plan.Methods, r.method):
		b.skip(element, fmt.Sprintf("method %s is not one Volley sends (%s)", r.method, strings.Join(plan.Methods, ", ")))
		return false
	case len(r.url) > plan.MaxURLBytes:
		b.skip(element, fmt.Sprintf("the URL is %d bytes; a plan's are at most %d", len(r.url), plan.MaxURLBytes))
		return false
	case len(r.body) > plan.MaxBodyBytes:
		b.skip(element, fmt.Sprintf("the body is %d bytes; a plan's are at most %d", len(r.body), plan.MaxBodyBytes))
		return false
	}
	if msg := impCheckURL(r.url); msg != "" {
		b.skip(element, msg)
		return false
	}
	m := map[string]any{"method": r.method, "url": r.url}
	name := r.name
	if name == "" {
		name = plan.DefaultName(r.method, r.url)
	}
	m["name"] = impClip(name, plan.MaxNameBytes)
	hdrs := map[string]any{}
	total := 0
	for _, h := range r.headers {
		k, v := h[0], h[1]
		switch {
		case k == "" || strings.ContainsAny(k, " \t\r\n:") || len(k) > plan.MaxHeaderNameBytes:
			b.skip(element+" header "+k, "not a valid header name")
		case strings.ContainsAny(v, "\r\n"):
			b.skip(element+" header "+k, "the value holds a line break")
		case len(v) > plan.MaxHeaderValueBytes:
			b.skip(element+" header "+k, fmt.Sprintf("the value is %d bytes; at most %d", len(v), plan.MaxHeaderValueBytes))
		case len(hdrs) >= plan.MaxHeaders || total+len(k)+len(v) > plan.MaxHeaderBytes:
			r.over++
		default:
			hdrs[k] = v
			total += len(k) + len(v)
		}
	}
	if r.over > 0 {
		b.skip(element+" headers", fmt.Sprintf("%d header(s) left out: a request has at most %d headers of %d bytes in all", r.over, plan.MaxHeaders, plan.MaxHeaderBytes))
	}
	if len(hdrs) > 0 {
		m["headers"] = hdrs
	}
	if r.body != "" {
		m["body"] = r.body
	}
	if r.think != "" {
		m["think_time"] = r.think
	}
	if len(r.checks) > 0 {
		c := make([]any, len(r.checks))
		for i := range r.checks {
			c[i] = r.checks[i]
		}
		m["checks"] = c
	}
	if len(r.extract) > 0 {
		x := make([]any, len(r.extract))
		for i := range r.extract {
			x[i] = r.extract[i]
		}
		m["extract"] = x
	}
	b.reqs = append(b.reqs, m)
	return true
}

// impCheckURL is "" for an absolute http(s) URL (which may hold {{variables}}), else why not.
func impCheckURL(raw string) string {
	if raw == "" {
		return "no URL"
	}
	u, err := url.Parse(strings.NewReplacer("{{", "x", "}}", "x").Replace(raw))
	if err != nil {
		return "the URL does not parse: " + err.Error()
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("%q is not an http or https URL", impClip(raw, 100))
	}
	if u.Host == "" {
		return "the URL has no host"
	}
	return ""
}

// impDefaultLoad is the load of an imported plan: one VU for 30 s, a gentle start to edit.
func impDefaultLoad() map[string]any {
	return map[string]any{"executor": "constant-vus", "vus": 1, "duration": "30s"}
}

// result returns the plan as plan JSON (a map) with the skipped list; an import with no request
// left is an *InputError naming the format.
func (b *impPlan) result(formatName string) (Result, error) {
	if b.overReq > 0 {
		b.skip(impOverRequests(b.overReq))
	}
	if len(b.reqs) == 0 {
		msg := "no request could be imported"
		if len(b.skipped) > 0 {
			msg += ": " + b.skipped[0].Element + ": " + b.skipped[0].Reason
		}
		return Result{}, &InputError{Format: formatName, Msg: msg}
	}
	p := b.planMap()
	// The safety net: a request plan.Parse would refuse (a {{variable}} of the source's own
	// syntax left in its text, a URL the checks above let through) is skipped with Parse's word.
	for range 3 {
		bad := b.refused(p)
		if len(bad) == 0 {
			break
		}
		var keep []map[string]any
		for i, r := range b.reqs {
			if msg, ok := bad[i]; ok {
				b.skip(fmt.Sprint(r["name"]), msg)
			} else {
				keep = append(keep, r)
			}
		}
		b.reqs = keep
		if len(b.reqs) == 0 {
			return Result{}, &InputError{Format: formatName, Msg: "no request could be imported: " + b.skipped[len(b.skipped)-1].Reason}
		}
		p = b.planMap()
	}
	return Result{Plan: p, Skipped: b.skipped}, nil
}

var impRequestField = regexp.MustCompile(`^requests\[(\d+)\]`)

// refused runs plan.Parse on p and returns the problems of its requests, by index. Problems of
// other fields are left alone (the load's executors are registered by package engine, which an
// importer does not need).
func (b *impPlan) refused(p map[string]any) map[int]string {
	js, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	_, err = plan.Parse(js)
	var verr *plan.ValidationError
	if !errors.As(err, &verr) {
		return nil
	}
	bad := map[int]string{}
	for f, msg := range verr.Fields {
		if m := impRequestField.FindStringSubmatch(f); m != nil {
			i, _ := strconv.Atoi(m[1])
			if i < len(b.reqs) {
				bad[i] = "refused by the plan's validation: " + strings.TrimPrefix(f, m[0]+".") + ": " + msg
			}
		}
	}
	return bad
}

// planMap is the plan as plan JSON.
func (b *impPlan) planMap() map[string]any {
	reqs := make([]any, len(b.reqs))
	for i := range b.reqs {
		reqs[i] = b.reqs[i]
	}
	p := map[string]any{"name": impClip(b.name, maxPlanName), "requests": reqs, "load": impDefaultLoad()}
	if len(b.http) > 0 {
		p["http"] = b.http
	}
	for k, v := range b.extra {
		p[k] = v
	}
	return p
}

// impClip shortens s to at most n bytes on a rune boundary, marking the cut with "…" (every
// importer clips with it).
func impClip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Helpers of the jmx and openapi importers (the other importers may use them too).

// maxPlanName is plan.Validate's bound on a plan's name.
const maxPlanName = 200

// planName is a plan name from a title, or dflt when the title is blank.
func planName(title, dflt string) string {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return dflt
	}
	return impClip(title, maxPlanName)
}

// impOverRequests is the one skipped entry (element, reason) for n requests left out past
// plan.MaxRequests: a plan of more would not validate, and an editor showing thousands of
// requests stalls the browser.
func impOverRequests(n int) (string, string) {
	return fmt.Sprintf("requests after the first %d", plan.MaxRequests),
		fmt.Sprintf("%d request(s) left out: a plan holds at most %d requests", n, plan.MaxRequests)
}

// notes collects the Skipped list of one import, merging repeats of the same element and reason.
type notes struct {
	list    []Skipped
	seen    map[Skipped]bool
	overReq int // requests left out past plan.MaxRequests (one entry: impOverRequests)
}

// add records that element was not imported (or imported only in part) and why.
func (n *notes) add(element, reason string) {
	n.put(Skipped{Element: impClip(element, 300), Reason: reason})
}

// note records a remark on an element that was imported.
func (n *notes) note(element, reason string) {
	n.put(Skipped{Element: impClip(element, 300), Reason: reason, Note: true})
}

func (n *notes) put(s Skipped) {
	if n.seen == nil {
		n.seen = map[Skipped]bool{}
	}
	if n.seen[s] {
		return
	}
	n.seen[s] = true
	n.list = append(n.list, s)
}

// result wraps a plan built from the named format and its notes.
func (n *notes) result(format string, p map[string]any) Result {
	if n.overReq > 0 {
		n.add(impOverRequests(n.overReq))
	}
	l := n.list
	if l == nil {
		l = []Skipped{}
	}
	return Result{Plan: p, Skipped: l, Format: format}
}
