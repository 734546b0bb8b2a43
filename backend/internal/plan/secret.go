package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Masked is the placeholder that stands for a secret header value wherever a plan is shown (API
// answers, exports). Sent back in a plan (PUT /api/plans/:id), it means "keep the stored value".
// It is never a value that can be run: Validate rejects it in a secret header.
const Masked = "********"

// AlwaysSecret lists the headers whose values are secret in every request, whatever
// secret_headers says (compared case-insensitively).
var AlwaysSecret = []string{"Authorization", "Cookie", "Proxy-Authorization"}

// SecretPrefix starts a secret reference in a template: {{secret.NAME}} is replaced by the value
// of the stored secret NAME when a run starts.
const SecretPrefix = "secret."

// MaxSecretName bounds a secret's name; MaxSecretValue bounds its value in bytes.
const (
	MaxSecretName  = 64
	MaxSecretValue = 64 << 10
)

var secretNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidSecretName reports whether name can name a secret: 1–64 letters, digits and _, not
// starting with a digit (it is also the tail of the environment variable VOLLEY_SECRET_NAME).
func ValidSecretName(name string) bool {
	return len(name) <= MaxSecretName && secretNameRE.MatchString(name)
}

// SecretValues holds the values of the secrets a plan refers to, by name. It prints as
// "[redacted]" so that a plan logged with %v or %+v never shows them.
type SecretValues map[string]string

// String hides the values.
func (SecretValues) String() string { return "[redacted]" }

// GoString hides the values.
func (SecretValues) GoString() string { return "[redacted]" }

// IsSecretHeader reports whether header name's value is secret in r: one of AlwaysSecret or
// listed in r.SecretHeaders (both case-insensitive).
func (r *Request) IsSecretHeader(name string) bool {
	for _, s := range AlwaysSecret {
		if strings.EqualFold(s, name) {
			return true
		}
	}
	for _, s := range r.SecretHeaders {
		if strings.EqualFold(s, name) {
			return true
		}
	}
	return false
}

// DefaultName is the name a request without one gets: its method and URL without the query
// string, the fragment and any user:password@, so that a key in a URL never becomes a name
// (names appear in summaries, exports and charts).
func DefaultName(method, rawURL string) string {
	return method + " " + NameURL(rawURL)
}

// NameURL is rawURL without its query string, fragment and userinfo. It works on the text (a
// URL may hold {{variables}}), so it never fails.
func NameURL(rawURL string) string {
	u := rawURL
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		authority := rest
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			authority = rest[:j]
		}
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			u = u[:i+3] + rest[at+1:]
		}
	}
	return u
}

// legacyName reports whether r's name is the default an older Volley gave it ("METHOD URL" with
// the query string), which now has a new default.
func (r *Request) legacyName() bool {
	return r.Name != "" && r.Name == r.Method+" "+r.URL && r.Name != DefaultName(r.Method, r.URL)
}

// renameLegacyNames gives requests named by an older default ("GET http://h/p?key=…") today's
// default, and moves thresholds judging such a name with them.
func (p *Plan) renameLegacyNames() bool {
	changed := false
	for i := range p.Requests {
		r := &p.Requests[i]
		if !r.legacyName() {
			continue
		}
		old, name := r.Name, DefaultName(r.Method, r.URL)
		r.Name = name
		for j := range p.Thresholds {
			if p.Thresholds[j].Request == old {
				p.Thresholds[j].Request = name
			}
		}
		changed = true
	}
	return changed
}

// validateSecrets checks secret_headers and that no secret header holds the Masked placeholder
// (a plan shown masked cannot be run: its real values were not sent).
func (p *Plan) validateSecrets(v *ValidationError) {
	for i := range p.Requests {
		r := &p.Requests[i]
		f := "requests[" + strconv.Itoa(i) + "]."
		for j, h := range r.SecretHeaders {
			if h == "" || strings.ContainsAny(h, " \t\r\n:") {
				v.add(f+"secret_headers["+strconv.Itoa(j)+"]", fmt.Sprintf("%q is not a valid header name", h))
			}
		}
		for _, k := range sortedKeys(r.Headers) {
			if r.Headers[k] == Masked && r.IsSecretHeader(k) {
				v.add(f+"headers", fmt.Sprintf("value of %q is the masked placeholder %s: give the value (or {{secret.NAME}}); "+
					"the placeholder keeps a stored value only when a saved plan is updated", k, Masked))
			}
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SecretRef is one use of {{secret.NAME}} in a plan: the field path where it appears.
type SecretRef struct {
	Name   string
	Field  string // "requests[0].url", "requests[0].headers", "requests[0].body"
	Header string // for a header: its name
}

// SecretRefs lists every {{secret.NAME}} of the plan's URLs, header values and bodies, in
// request order (URL, headers by name, body), then of its monitors' tokens. Templates that do not parse are skipped (Validate
// reports them).
func (p *Plan) SecretRefs() []SecretRef {
	var out []SecretRef
	for i := range p.Requests {
		r := &p.Requests[i]
		f := "requests[" + strconv.Itoa(i) + "]."
		add := func(field, header, s string) {
			parts, err := ParseTemplate(s)
			if err != nil {
				return
			}
			for _, part := range parts {
				if name, ok := strings.CutPrefix(part.Var, SecretPrefix); ok {
					out = append(out, SecretRef{Name: name, Field: f + field, Header: header})
				}
			}
		}
		add("url", "", r.URL)
		for _, k := range sortedKeys(r.Headers) {
			add("headers", k, r.Headers[k])
		}
		add("body", "", r.Body)
		for _, t := range wsTemplates(r) {
			add(t[0], "", t[1])
		}
	}
	for i := range p.Monitors {
		if name, ok := monitorTokenSecret(p.Monitors[i].Token); ok {
			out = append(out, SecretRef{Name: name, Field: "monitors[" + strconv.Itoa(i) + "].token"})
		}
	}
	return out
}

// SecretNames is the sorted, distinct names of SecretRefs.
func (p *Plan) SecretNames() []string {
	seen := map[string]bool{}
	var names []string
	for _, ref := range p.SecretRefs() {
		if !seen[ref.Name] {
			seen[ref.Name] = true
			names = append(names, ref.Name)
		}
	}
	sort.Strings(names)
	return names
}

// CheckSecrets checks that every {{secret.NAME}} of the plan has a value in p.Secrets and that the
// value fits where it is used (no control characters in a URL or a header). Problems come as a
// *ValidationError naming the field and the secret, never its value; source says where values
// come from, for the message ("the secret store", "the environment (VOLLEY_SECRET_NAME)").
func (p *Plan) CheckSecrets(source string) error {
	v := &ValidationError{}
	for _, ref := range p.SecretRefs() {
		val, ok := p.Secrets[ref.Name]
		if !ok {
			v.add(ref.Field, fmt.Sprintf("{{secret.%s}}: no secret %q in %s", ref.Name, ref.Name, source))
			continue
		}
		if f := ref.Field[strings.LastIndexByte(ref.Field, '.')+1:]; f == "body" || f == "send" { // a message text (ws.go) is a body
			continue
		}
		for _, c := range []byte(val) {
			if c < 0x20 || c == 0x7f {
				v.add(ref.Field, fmt.Sprintf("{{secret.%s}}: its value holds a control character (a line break?), which a URL or header cannot carry", ref.Name))
				break
			}
		}
	}
	if len(v.Fields) > 0 {
		return v
	}
	return nil
}

// MaskSecrets replaces the value of every secret header (AlwaysSecret, secret_headers) with
// Masked, and reports whether it changed anything. A request's header map is copied before it is
// changed, so a plan sharing maps with p is left as it was.
func (p *Plan) MaskSecrets() bool {
	changed := false
	for i := range p.Requests {
		r := &p.Requests[i]
		need := false
		for k, val := range r.Headers {
			need = need || val != Masked && r.IsSecretHeader(k)
		}
		if !need {
			continue
		}
		h := make(map[string]string, len(r.Headers))
		for k, val := range r.Headers {
			if r.IsSecretHeader(k) {
				val = Masked
			}
			h[k] = val
		}
		r.Headers = h
		changed = true
	}
	return changed
}

// MaskSpec returns a stored plan JSON as it may be shown: every secret header value replaced by
// Masked, and request names of an older default (with the query string) renamed. A spec that
// needs no change is returned as it is. One that does not decode as a plan is masked as generic
// JSON (requests[].headers), so a plan stored by another version is never shown in clear.
func MaskSpec(spec []byte) []byte {
	if len(spec) == 0 || string(spec) == "null" {
		return spec
	}
	var p Plan
	if err := json.Unmarshal(spec, &p); err != nil {
		return maskGeneric(spec)
	}
	masked := p.MaskSecrets()
	renamed := p.renameLegacyNames()
	if !masked && !renamed {
		return spec
	}
	b, err := Marshal(&p)
	if err != nil {
		return maskGeneric(spec)
	}
	return b
}

// maskGeneric masks requests[].headers of any JSON object: values of AlwaysSecret headers and of
// those the request lists in secret_headers. Anything else that looks like a header map is masked
// whole, rather than risk showing a secret.
func maskGeneric(spec []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var raw map[string]any
	if dec.Decode(&raw) != nil {
		return []byte("null")
	}
	reqs, _ := raw["requests"].([]any)
	for _, e := range reqs {
		req, ok := e.(map[string]any)
		if !ok {
			continue
		}
		r := Request{SecretHeaders: secretHeadersOf(req)}
		switch h := req["headers"].(type) {
		case map[string]any:
			for k, val := range h {
				if _, isString := val.(string); !isString || r.IsSecretHeader(k) {
					h[k] = Masked
				}
			}
		case nil:
		default:
			req["headers"] = Masked
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(raw) != nil {
		return []byte("null")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// secretHeadersOf is the strings of a raw request's secret_headers list.
func secretHeadersOf(req map[string]any) []string {
	var names []string
	list, _ := req["secret_headers"].([]any)
	for _, s := range list {
		if s, ok := s.(string); ok {
			names = append(names, s)
		}
	}
	return names
}

// KeepMasked prepares a plan JSON sent to update a stored plan: in every secret header whose
// value is Masked, it puts the stored plan's value of that header back. A header the stored plan
// kept secret stays secret when it comes back masked but no longer listed in secret_headers
// (unmarking must not reveal a value nobody re-entered). The stored request is
// the one with the same name, else the one at the same index; a placeholder with no stored value
// to keep stays (and Validate then names the field).
//
// A stored value is kept only for a request whose URL origin (scheme, host and port, compared as
// written, template placeholders included; see URLOrigin) is the stored request's: otherwise a
// masked value would be sent to a target it was never entered for. Such a header is a
// *ValidationError on requests[i].headers naming it. It returns the JSON to Parse; input that is
// not a JSON object is returned unchanged for Parse to report.
func KeepMasked(data []byte, stored *Plan) ([]byte, error) {
	if stored == nil || !bytes.Contains(data, []byte(Masked)) {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if dec.Decode(&raw) != nil || dec.More() {
		return data, nil
	}
	verr := &ValidationError{}
	reqs, _ := raw["requests"].([]any)
	changed := false
	// http.hosts sends a request elsewhere without touching its URL: a changed override moves
	// every request as much as a changed URL would.
	overridesChanged := !sameHosts(raw, stored.HTTP.Hosts)
	for i, e := range reqs {
		req, ok := e.(map[string]any)
		if !ok {
			continue
		}
		h, ok := req["headers"].(map[string]any)
		if !ok {
			continue
		}
		r := Request{SecretHeaders: secretHeadersOf(req)}
		old := stored.matchRequest(req, i)
		if old == nil {
			continue
		}
		u, _ := req["url"].(string)
		from, to := URLOrigin(old.URL), URLOrigin(u)
		for _, k := range sortedAnyKeys(h) {
			if h[k] != Masked || !r.IsSecretHeader(k) && !old.IsSecretHeader(k) {
				continue
			}
			for ok2, ov := range old.Headers {
				if strings.EqualFold(ok2, k) && ov != Masked {
					if from != to {
						verr.add("requests["+strconv.Itoa(i)+"].headers", fmt.Sprintf(
							"value of %q is the masked placeholder %s but the request's target changed (%s -> %s): "+
								"enter its value again (or {{secret.NAME}})", k, Masked, from, to))
						break
					}
					if overridesChanged {
						verr.add("requests["+strconv.Itoa(i)+"].headers", fmt.Sprintf(
							"value of %q is the masked placeholder %s but http.hosts changed, which can send the "+
								"request elsewhere: enter its value again (or {{secret.NAME}})", k, Masked))
						break
					}
					h[k] = ov
					changed = true
					if !r.IsSecretHeader(k) {
						// Unmarked while still masked: the value stays secret (unmarking must
						// not reveal it); to unmark, send the value itself.
						list, _ := req["secret_headers"].([]any)
						req["secret_headers"] = append(list, k)
						r.SecretHeaders = append(r.SecretHeaders, k)
					}
					break
				}
			}
		}
	}
	if len(verr.Fields) > 0 {
		return nil, verr
	}
	if !changed {
		return data, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(raw) != nil {
		return data, nil
	}
	return b.Bytes(), nil
}

// sameHosts reports whether a raw plan's http.hosts equals stored (absent and empty are equal; a
// value that is not a string is a change).
func sameHosts(raw map[string]any, stored map[string]string) bool {
	h, _ := raw["http"].(map[string]any)
	hosts, _ := h["hosts"].(map[string]any)
	if len(hosts) != len(stored) {
		return false
	}
	for k, v := range hosts {
		s, ok := v.(string)
		if old, found := stored[k]; !ok || !found || old != s {
			return false
		}
	}
	return true
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// URLOrigin is the scheme://host[:port] of a URL as written (scheme and host lower-cased, any
// user:password@ dropped), template placeholders left as they are (and a host holding one keeps
// its case): "{{base}}/x" has the origin
// "{{base}}". It works on the text, so it never fails; a URL without "://" is its own origin up
// to the first /, ? or #.
func URLOrigin(rawURL string) string {
	u := strings.TrimSpace(rawURL)
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		scheme, rest = "", u
	}
	authority := rest
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		authority = rest[:j]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = authority[at+1:]
	}
	if !strings.Contains(authority, "{{") { // a {{variable}}'s name keeps its case
		authority = strings.ToLower(authority)
	}
	if !ok {
		return authority
	}
	return strings.ToLower(scheme) + "://" + authority
}

// matchRequest finds the stored request a sent one (decoded JSON, at index i) stands for: the
// one with the same name (given, or the default of its method and URL), else the one at i.
func (p *Plan) matchRequest(req map[string]any, i int) *Request {
	name, _ := req["name"].(string)
	if name == "" {
		method, _ := req["method"].(string)
		if method == "" {
			method = "GET"
		}
		u, _ := req["url"].(string)
		name = DefaultName(strings.ToUpper(method), u)
	}
	for j := range p.Requests {
		if p.Requests[j].Name == name {
			return &p.Requests[j]
		}
	}
	for j := range p.Requests { // a stored name of an older default, shown renamed
		if r := &p.Requests[j]; r.legacyName() && DefaultName(r.Method, r.URL) == name {
			return r
		}
	}
	if i < len(p.Requests) {
		return &p.Requests[i]
	}
	return nil
}
