package importer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/volley-load/volley/backend/internal/plan"
)

// har: an HTTP Archive 1.2 (http://www.softwareishard.com/blog/har-12-spec/, as browsers'
// developer tools save it) → a "sequence" plan of its entries in start order. The archive is read
// with gjson, which walks the input without building it in memory (a HAR of tens of MB, mostly
// response bodies, costs little more than its bytes); its nesting is bounded first (impMaxJSONDepth).
func init() { register("har", importHAR, detectHAR) }

// impMaxJSONDepth bounds the nesting of a JSON input: a HAR or a collection nests less than 20 deep;
// deeper input is refused before any parser recurses into it.
const impMaxJSONDepth = 64

func detectHAR(data []byte) bool {
	if impJSONTooDeep(data, impMaxJSONDepth) >= 0 {
		return false
	}
	return gjson.GetBytes(data, "log.entries").IsArray()
}

// harAssetTypes are Chromium's _resourceType values of static assets; harAssetExt the file
// extensions of one when the type is absent (other browsers).
var (
	harAssetTypes = []string{"image", "font", "stylesheet", "script", "media", "manifest", "texttrack", "imageset"}
	harAssetExt   = []string{".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".avif", ".ico", ".bmp", ".woff", ".woff2",
		".ttf", ".otf", ".eot", ".css", ".js", ".mjs", ".map", ".mp4", ".webm", ".mp3"}
)

// harIsAsset reports whether an entry fetches a static asset (image, font, CSS, JS, media).
func harIsAsset(e gjson.Result, u *url.URL) bool {
	if t := e.Get("_resourceType").String(); t != "" {
		return slices.Contains(harAssetTypes, t)
	}
	mt := strings.ToLower(e.Get("response.content.mimeType").String())
	for _, p := range []string{"image/", "font/", "text/css", "application/javascript", "text/javascript", "video/", "audio/", "application/font", "application/x-font"} {
		if strings.HasPrefix(mt, p) {
			return true
		}
	}
	return slices.Contains(harAssetExt, strings.ToLower(path.Ext(u.Path)))
}

// harEntry is an entry kept for the plan, with what the extraction suggestions need.
type harEntry struct {
	elem    string
	n       int // the entry's number in the archive, from 1
	req     impRequest
	start   time.Time
	end     time.Time
	json    []byte // the response body when it is JSON (for extraction suggestions)
	planIdx int
}

func importHAR(data []byte, o Options) (Result, error) {
	if at := impJSONTooDeep(data, impMaxJSONDepth); at >= 0 {
		return Result{}, &InputError{Format: "har", Msg: fmt.Sprintf("the archive nests more than %d deep (at byte %d)", impMaxJSONDepth, at)}
	}
	if !gjson.ValidBytes(data) {
		return Result{}, &InputError{Format: "har", Msg: "not valid JSON"}
	}
	entries := gjson.GetBytes(data, "log.entries")
	if !entries.IsArray() {
		return Result{}, &InputError{Format: "har", Msg: "no log.entries array: not an HTTP Archive"}
	}
	name := gjson.GetBytes(data, "log.pages.0.title").String()
	b := newImpPlan("", o)
	var kept []*harEntry
	i := 0
	var codings []string                // the recorded Accept-Encoding's codings Volley asks for
	droppedCodings := map[string]bool{} // and those it does not know
	cookieNames := map[string]bool{}
	entries.ForEach(func(_, e gjson.Result) bool {
		if o.stopped() {
			return false
		}
		i++
		elem := fmt.Sprintf("entry %d", i)
		if i > 100*harMaxEntries() {
			b.skip(elem+" and later", fmt.Sprintf("an archive's first %d entries are read", 100*harMaxEntries()))
			return false
		}
		method := e.Get("request.method").String()
		raw := e.Get("request.url").String()
		elem += " " + method + " " + impClip(raw, 120)
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			b.skip(elem, "not an http or https request")
			return true
		}
		if !o.KeepAssets && harIsAsset(e, u) {
			b.skip(elem, "a static asset (image, font, CSS, JS): left out (keep them with the keep-assets option)")
			return true
		}
		if e.Get("_resourceType").String() == "preflight" {
			b.skip(elem, "a CORS preflight the browser sent on its own")
			return true
		}
		he := &harEntry{elem: elem, n: i, req: impRequest{method: method, url: raw}, planIdx: -1}
		he.start, _ = time.Parse(time.RFC3339Nano, e.Get("startedDateTime").String())
		he.end = he.start.Add(time.Duration(e.Get("time").Float() * float64(time.Millisecond)))
		for _, h := range e.Get("request.headers").Array() {
			k, v := h.Get("name").String(), h.Get("value").String()
			lk := strings.ToLower(k)
			switch {
			case he.req.full():
				he.req.over++
			case impEngineHeader(k):
			case lk == "accept-encoding":
				codings = harCodings(codings, v, droppedCodings)
			case lk == "cookie":
				for _, c := range strings.Split(v, ";") {
					if n, _, ok := strings.Cut(strings.TrimSpace(c), "="); ok {
						cookieNames[n] = true
					}
				}
			default:
				he.req.setHeader(k, v)
			}
		}
		if pd := e.Get("request.postData"); pd.Exists() {
			switch {
			case pd.Get("text").Exists():
				he.req.body = pd.Get("text").String()
			case pd.Get("params").IsArray():
				var parts []string
				file := false
				for _, p := range pd.Get("params").Array() {
					if p.Get("fileName").Exists() {
						file = true
					}
					parts = append(parts, url.QueryEscape(p.Get("name").String())+"="+url.QueryEscape(p.Get("value").String()))
				}
				if file {
					b.skip(elem, "its body uploads a file (multipart), which is not imported")
					return true
				}
				he.req.body = strings.Join(parts, "&")
			}
			if _, set := he.req.header("Content-Type"); !set && he.req.body != "" {
				if mt := pd.Get("mimeType").String(); mt != "" {
					he.req.setHeader("Content-Type", mt)
				}
			}
		}
		c := e.Get("response.content")
		if strings.Contains(strings.ToLower(c.Get("mimeType").String()), "json") && c.Get("text").Exists() && len(kept) < harMaxEntries() {
			text := c.Get("text").String()
			if c.Get("encoding").String() == "base64" {
				if d, err := base64.StdEncoding.DecodeString(text); err == nil {
					text = string(d)
				}
			}
			if len(text) <= harMaxSuggestBody {
				he.json = []byte(text)
			}
		}
		kept = append(kept, he)
		return true
	})
	sort.SliceStable(kept, func(a, c int) bool { return kept[a].start.Before(kept[c].start) })
	harThinkTimes(kept)
	suggestions := harSuggest(kept)
	for _, he := range kept {
		if b.add(he.elem, he.req) {
			he.planIdx = len(b.reqs) - 1
		}
	}
	for _, s := range suggestions {
		b.note(s.elem, s.reason)
	}
	if len(codings) > 0 {
		b.http["compression"] = codings
	}
	if len(droppedCodings) > 0 {
		names := make([]string, 0, len(droppedCodings))
		for n := range droppedCodings {
			names = append(names, n)
		}
		sort.Strings(names)
		b.skip("request headers Accept-Encoding ("+impClip(strings.Join(names, ", "), 150)+")",
			"codings Volley does not ask for (http.compression takes "+strings.Join(plan.Compressions, ", ")+")")
	}
	if len(cookieNames) > 0 {
		names := make([]string, 0, len(cookieNames))
		for n := range cookieNames {
			names = append(names, n)
		}
		sort.Strings(names)
		b.skip("request headers Cookie ("+impClip(strings.Join(names, ", "), 150)+")", "the recorded cookies are not replayed: a run gets its own from the target's Set-Cookie (http.cookies), or add a Cookie header to the requests that need one")
	}
	if name == "" && len(kept) > 0 {
		if u, err := url.Parse(kept[0].req.url); err == nil {
			name = "HAR recording of " + u.Host
		}
	}
	b.name = name
	if b.name == "" {
		b.name = "HAR recording"
	}
	b.extra["flow"] = "sequence"
	return b.result("har")
}

// harMaxEntries bounds the entries that become requests (plan.MaxRequests); harMaxSuggestBody the
// response bodies searched for values later requests reuse.
func harMaxEntries() int { return 1000 }

const harMaxSuggestBody = 256 << 10

// harThinkTimes sets each request's think time to the gap between its end and the next
// request's start, in whole milliseconds; overlapping requests (a browser's parallel fetches)
// and gaps under 10 ms get none, and a gap is capped at 1 h (plan.MaxTimeout).
func harThinkTimes(kept []*harEntry) {
	for i := 0; i+1 < len(kept); i++ {
		a, n := kept[i], kept[i+1]
		if a.start.IsZero() || n.start.IsZero() {
			continue
		}
		gap := n.start.Sub(a.end)
		if gap < 10*time.Millisecond {
			continue
		}
		gap = min(gap, time.Hour)
		a.req.think = strconv.FormatInt(gap.Milliseconds(), 10) + "ms"
	}
}

type harSuggestion struct{ elem, reason string }

var harTokenSplit = regexp.MustCompile(`[^A-Za-z0-9_\-.~+%]+`)

// harSuggest finds values of a JSON response that a later request sends (in its URL, a header
// or its body) and that no earlier request sent: tokens, ids. Each becomes an extraction on the
// response's request ({"from":"json","path":…}) and {{var}} where the later requests use it, and
// a suggestion to check in the skipped list. Candidates are strings of 8–512 characters with a
// digit (or 16 and more characters) and integers of 4 and more digits; a value is matched as a
// whole token of the later request's text (split at characters a token does not hold).
func harSuggest(kept []*harEntry) []harSuggestion {
	firstUse := map[string]int{} // token → the first request sending it
	uses := map[string][]int{}
	for i, he := range kept {
		var text strings.Builder
		text.WriteString(he.req.url + "\n" + he.req.body)
		for _, h := range he.req.headers {
			text.WriteString("\n" + h[1])
		}
		for _, tok := range harTokenSplit.Split(text.String(), -1) {
			if len(tok) < 4 || len(tok) > 512 {
				continue
			}
			if _, ok := firstUse[tok]; !ok {
				firstUse[tok] = i
			}
			if l := uses[tok]; len(l) < 50 && (len(l) == 0 || l[len(l)-1] != i) {
				uses[tok] = append(l, i)
			}
		}
	}
	var out []harSuggestion
	claimed := map[string]bool{}
	vars := map[string]bool{}
	for i, he := range kept {
		if he.json == nil || len(out) >= 50 {
			continue
		}
		var doc any
		if json.Unmarshal(he.json, &doc) != nil {
			continue
		}
		n := 0
		harWalk(doc, "", &n, func(p, val string) {
			tok := strings.TrimRight(val, "=") // base64 padding is not part of a token
			if fu, known := firstUse[tok]; claimed[val] || known && fu <= i {
				return // sent before this response came: not obtained from it
			}
			var later []int
			for _, j := range uses[tok] {
				if j > i {
					later = append(later, j)
				}
			}
			if len(later) == 0 {
				return
			}
			claimed[val] = true
			v := harVarName(p, vars)
			he.req.extract = append(he.req.extract, map[string]any{"var": v, "from": "json", "path": p})
			var at []string
			for _, j := range later {
				r := &kept[j].req
				r.url = strings.ReplaceAll(r.url, val, "{{"+v+"}}")
				r.body = strings.ReplaceAll(r.body, val, "{{"+v+"}}")
				for k := range r.headers {
					r.headers[k][1] = strings.ReplaceAll(r.headers[k][1], val, "{{"+v+"}}")
				}
				at = append(at, strconv.Itoa(kept[j].n))
			}
			out = append(out, harSuggestion{he.elem + " response " + p,
				fmt.Sprintf("suggested extraction (check it): {{%s}} from the JSON path %s, sent in place of the recorded value by entry %s", v, p, strings.Join(at, ", "))})
		})
	}
	return out
}

// harWalk calls f with the gjson path and value of each candidate scalar of doc, at most 200 of
// them.
func harWalk(doc any, p string, n *int, f func(p, val string)) {
	if *n >= 200 {
		return
	}
	join := func(k string) string {
		k = harGJSONEscape(k)
		if p == "" {
			return k
		}
		return p + "." + k
	}
	switch v := doc.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			harWalk(v[k], join(k), n, f)
		}
	case []any:
		for i, e := range v {
			harWalk(e, join(strconv.Itoa(i)), n, f)
		}
	case string:
		digit := strings.ContainsAny(v, "0123456789")
		if len(v) >= 8 && len(v) <= 512 && (digit || len(v) >= 16) && !strings.ContainsAny(v, " \t\r\n") {
			*n++
			f(p, v)
		}
	case float64:
		if v == float64(int64(v)) && (v >= 1000 || v <= -1000) {
			*n++
			f(p, strconv.FormatInt(int64(v), 10))
		}
	}
}

// harGJSONEscape escapes the characters gjson gives a meaning in a path.
func harGJSONEscape(k string) string {
	var sb strings.Builder
	for _, c := range k {
		if strings.ContainsRune(`.*?|#@\!=<>%`, c) {
			sb.WriteByte('\\')
		}
		sb.WriteRune(c)
	}
	return sb.String()
}

var harNonVar = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// harVarName makes a variable name (letters, digits, _) from a JSON path, unique among used: its
// last key, with the key before when the last is as short as "id" ("user.id" → user_id).
func harVarName(p string, used map[string]bool) string {
	var keys []string
	for _, k := range strings.Split(strings.ReplaceAll(p, `\.`, "_"), ".") {
		if _, err := strconv.Atoi(k); err != nil {
			keys = append(keys, k)
		}
	}
	key := "value"
	if n := len(keys); n > 0 {
		key = keys[n-1]
		if len(key) <= 3 && n > 1 {
			key = keys[n-2] + "_" + key
		}
	}
	v := strings.Trim(harNonVar.ReplaceAllString(key, "_"), "_")
	if v == "" || v[0] >= '0' && v[0] <= '9' {
		v = "value_" + v
	}
	if len(v) > 40 {
		v = v[:40]
	}
	if slices.Contains([]string{"vu", "iteration", "uuid", "random_int"}, v) {
		v += "_1"
	}
	base := v
	for n := 2; used[v]; n++ {
		v = base + "_" + strconv.Itoa(n)
	}
	used[v] = true
	return v
}

// impJSONTooDeep returns the offset where data's objects and arrays nest deeper than max, or -1
// (plan.JSONTooDeep, the plan parser's scan).
func impJSONTooDeep(data []byte, max int) int {
	if at, deep := plan.JSONTooDeep(data, max); deep {
		return at
	}
	return -1
}

// harCodings adds the content codings of a recorded Accept-Encoding value (RFC 9110 §12.5.3:
// "gzip, deflate;q=0.5, br") to codings, in order and once each: those http.compression takes
// (plan.Compressions); others go to dropped. A coding with q=0 (refused), "identity" and "*" are
// no request for compression and are left out.
func harCodings(codings []string, value string, dropped map[string]bool) []string {
	for _, part := range strings.Split(value, ",") {
		c, params, _ := strings.Cut(part, ";")
		c = strings.ToLower(strings.TrimSpace(c))
		if q, ok := strings.CutPrefix(strings.ReplaceAll(strings.ToLower(params), " ", ""), "q="); ok {
			if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
				continue
			}
		}
		switch {
		case c == "" || c == "identity" || c == "*" || slices.Contains(codings, c):
		case slices.Contains(plan.Compressions, c):
			codings = append(codings, c)
		default:
			dropped[c] = true
		}
	}
	return codings
}
