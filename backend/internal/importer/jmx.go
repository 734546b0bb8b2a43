package importer

// JMeter .jmx import. A .jmx file is JMeter's XStream serialisation of a test tree: every test
// element (<ThreadGroup>, <HTTPSamplerProxy>, …) carries its settings as properties
// (<stringProp name="…">, <boolProp>, <intProp>, <longProp>, <elementProp>, <collectionProp>) and is
// followed by a <hashTree> holding its children. Files saved by JMeter 2.13 to 5.6 differ only in
// which properties are written (5.6 leaves out those at their defaults and writes numbers as
// intProp); the reader looks properties up by name whatever their type. docs/import/jmx.md has the
// mapping table.

import (
	"bytes"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

func init() { register("jmx", importJMX, detectJMX) }

func detectJMX(data []byte) bool {
	head := data[:min(len(data), 4096)]
	return bytes.Contains(head, []byte("<jmeterTestPlan"))
}

// jmxForeverDuration is the duration given to a Thread Group that loops forever without a
// scheduler (JMeter runs it until stopped by hand); the import says so.
const jmxForeverDuration = "10m"

// jmxSpec is what the scoped elements above a sampler contribute to it.
type jmxSpec struct {
	defaults []*xnode    // HTTP Request Defaults, outermost first
	headers  [][2]string // name, value; later (inner) wins
	checks   []*xnode
	extracts []*xnode
	timers   []*xnode
}

type jmxImp struct {
	opts     Options // its Context ends the import early (sampler then adds nothing)
	n        notes
	udv      map[string]string // User Defined Variables: substituted by value
	vars     map[string]bool   // variables the plan defines (CSV columns, extractions)
	reqs     []map[string]any
	thinks   []string
	data     map[string]any
	cookies  string // "", "vu", "iteration"
	follow   bool
	noFollow bool
}

func importJMX(data []byte, o Options) (Result, error) {
	root, err := parseXMLTree(data)
	if err != nil {
		return Result{}, &InputError{Format: "jmx", Msg: err.Error()}
	}
	if root.tag != "jmeterTestPlan" {
		return Result{}, &InputError{Format: "jmx", Msg: fmt.Sprintf("the root element is <%s>, not <jmeterTestPlan>", root.tag)}
	}
	top := jmxChild(root, "hashTree")
	if top == nil {
		return Result{}, &InputError{Format: "jmx", Msg: "no <hashTree> under <jmeterTestPlan>"}
	}
	j := &jmxImp{udv: map[string]string{}, vars: map[string]bool{}, opts: o}
	j.collectVars(root)
	res, err := j.build(top)
	if err != nil {
		return res, err
	}
	// A variable whose CSV Data Set or extractor was not imported (a second data set, a regex that
	// is not RE2, a header extraction...) defines nothing: import again with its references kept
	// as written, so the plan never names a variable it does not set. What the plan defines does
	// not depend on which variables are known, so the second pass defines all it keeps.
	unset := j.unsetVars()
	if len(unset) == 0 {
		return res, nil
	}
	j = &jmxImp{udv: map[string]string{}, vars: map[string]bool{}, opts: o}
	j.collectVars(root)
	for _, v := range unset {
		delete(j.vars, v)
		j.n.add("${"+v+"}", "its CSV Data Set Config or extractor was not imported (see its note): the variable is not set, its references are kept as written")
	}
	return j.build(top)
}

// unsetVars lists, sorted, the variables collectVars found that the built plan does not set: no
// data column and no extraction of an imported request.
func (j *jmxImp) unsetVars() []string {
	set := map[string]bool{}
	if csv, ok := j.data["csv"].(string); ok {
		header, _, _ := strings.Cut(csv, "\n")
		for _, c := range strings.Split(header, ",") {
			set[c] = true
		}
	}
	for _, r := range j.reqs {
		ex, _ := r["extract"].([]map[string]any)
		for _, e := range ex {
			if v, ok := e["var"].(string); ok {
				set[v] = true
			}
		}
	}
	var unset []string
	for v := range j.vars {
		if !set[v] {
			unset = append(unset, v)
		}
	}
	slices.Sort(unset)
	return unset
}

// build imports the test plan under top with the variables collectVars found.
func (j *jmxImp) build(top *xnode) (Result, error) {
	name := ""
	var tpTree *xnode
	for _, p := range jmxPairs(top) {
		if p.el.tag == "TestPlan" {
			name = p.el.get("testname")
			tpTree = p.sub
		}
	}
	if tpTree == nil {
		tpTree = top // a file holding only a fragment: read its elements as the test plan's
	}
	load := j.planLevel(tpTree)
	if len(j.reqs) == 0 {
		return Result{}, &InputError{Format: "jmx", Msg: "no HTTP Request sampler was found in an enabled Thread Group"}
	}
	p := map[string]any{
		"name":     planName(name, "Imported JMeter plan"),
		"flow":     plan.FlowSequence,
		"requests": j.reqs,
		"load":     load,
	}
	if think := j.thinks[0]; think != "" && !slices.ContainsFunc(j.thinks, func(t string) bool { return t != think }) {
		p["think_time"] = think
	} else {
		for i, t := range j.thinks {
			if t != "" {
				j.reqs[i]["think_time"] = t
			}
		}
	}
	if j.data != nil {
		p["data"] = j.data
	}
	httpOpts := map[string]any{}
	if j.follow {
		httpOpts["follow_redirects"] = true
		if j.noFollow {
			j.n.add("HTTP Request samplers", "some follow redirects and some do not; Volley follows them for every request of the plan (http.follow_redirects)")
		}
	}
	if j.cookies != "" {
		httpOpts["cookies"] = j.cookies
	}
	if len(httpOpts) > 0 {
		p["http"] = httpOpts
	}
	return j.n.result("jmx", p), nil
}

type jmxPair struct{ el, sub *xnode }

// jmxPairs lists the test elements of a <hashTree> with the <hashTree> of children after each.
func jmxPairs(ht *xnode) []jmxPair {
	var out []jmxPair
	for i := 0; i < len(ht.kids); i++ {
		k := ht.kids[i]
		if k.tag == "hashTree" {
			continue
		}
		p := jmxPair{el: k}
		if i+1 < len(ht.kids) && ht.kids[i+1].tag == "hashTree" {
			p.sub = ht.kids[i+1]
			i++
		}
		out = append(out, p)
	}
	return out
}

func jmxChild(n *xnode, tag string) *xnode {
	for _, k := range n.kids {
		if k.tag == tag {
			return k
		}
	}
	return nil
}

// prop returns the property called name directly inside n (nil when absent).
func jmxProp(n *xnode, name string) *xnode {
	if n == nil {
		return nil
	}
	for _, k := range n.kids {
		if strings.HasSuffix(k.tag, "Prop") && k.get("name") == name {
			return k
		}
	}
	return nil
}

// str is the text of property name ("" when absent).
func jmxStr(n *xnode, name string) string {
	if p := jmxProp(n, name); p != nil {
		return string(p.text)
	}
	return ""
}

func jmxBool(n *xnode, name string) bool { return strings.TrimSpace(jmxStr(n, name)) == "true" }

// jmxItems lists the entries of the collectionProp name inside n (or inside its elementProp
// of that name's collection, as Arguments keep theirs).
func jmxItems(n *xnode, name string) []*xnode {
	if p := jmxProp(n, name); p != nil {
		return p.kids
	}
	return nil
}

func jmxEnabled(n *xnode) bool { return n.get("enabled") != "false" }

func jmxLabel(n *xnode) string {
	name := strings.TrimSpace(n.get("testname"))
	if name == "" {
		return "<" + n.tag + ">"
	}
	return name + " (" + n.tag + ")"
}

var jmxVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// collectVars finds, before anything is converted, the variables the plan will define (CSV
// columns and extractions become {{var}}) and the User Defined Variables (substituted by value).
func (j *jmxImp) collectVars(n *xnode) {
	var walk func(n *xnode)
	walk = func(n *xnode) {
		if !jmxEnabled(n) {
			return
		}
		switch n.tag {
		case "CSVDataSet":
			for _, v := range strings.Split(jmxStr(n, "variableNames"), ",") {
				if v = strings.TrimSpace(v); jmxVarName.MatchString(v) {
					j.vars[v] = true
				}
			}
		case "RegexExtractor":
			if v := strings.TrimSpace(jmxStr(n, "RegexExtractor.refname")); jmxVarName.MatchString(v) {
				j.vars[v] = true
			}
		case "JSONPostProcessor":
			for _, v := range strings.Split(jmxStr(n, "JSONPostProcessor.referenceNames"), ";") {
				if v = strings.TrimSpace(v); jmxVarName.MatchString(v) {
					j.vars[v] = true
				}
			}
		case "TestPlan", "Arguments":
			args := n
			if n.tag == "TestPlan" {
				args = jmxProp(n, "TestPlan.user_defined_variables")
			}
			for _, a := range jmxItems(args, "Arguments.arguments") {
				if k := jmxStr(a, "Argument.name"); k != "" {
					j.udv[k] = jmxStr(a, "Argument.value")
				}
			}
			if n.tag == "Arguments" {
				return
			}
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(n)
}

// planLevel reads the Test Plan's tree: its scoped elements apply to the Thread Group, the first
// enabled Thread Group is imported and the others are listed.
func (j *jmxImp) planLevel(ht *xnode) map[string]any {
	spec := j.scoped(ht, jmxSpec{})
	var load map[string]any
	for _, p := range jmxPairs(ht) {
		el := p.el
		if j.isScoped(el) || el.tag == "TestPlan" {
			if !jmxEnabled(el) {
				j.n.add(jmxLabel(el), "disabled in JMeter")
			}
			continue
		}
		switch {
		case !jmxEnabled(el):
			j.n.add(jmxLabel(el), "disabled in JMeter")
		case el.tag == "ThreadGroup" && load == nil:
			load = j.threadGroup(el)
			j.level(p.sub, spec)
		case el.tag == "ThreadGroup":
			j.n.add(jmxLabel(el), "a Volley plan has one load model: only the first Thread Group is imported")
		case el.tag == "SetupThreadGroup" || el.tag == "PostThreadGroup":
			j.n.add(jmxLabel(el), "setUp/tearDown Thread Groups have no Volley equivalent")
		default:
			j.skipElement(p)
		}
	}
	if load == nil {
		load = map[string]any{"executor": plan.PerVUIterations, "vus": 1, "iterations": 1}
	}
	return load
}

// isScoped reports whether el is an element that applies to the samplers of its scope.
func (j *jmxImp) isScoped(el *xnode) bool {
	switch el.tag {
	case "ConfigTestElement", "HeaderManager", "CookieManager", "CSVDataSet", "Arguments",
		"ResponseAssertion", "JSONPathAssertion", "DurationAssertion",
		"RegexExtractor", "JSONPostProcessor", "ConstantTimer", "UniformRandomTimer":
		return true
	}
	return false
}

// scoped adds the scoped elements of one hashTree level to spec (a copy: siblings' scopes stay apart).
func (j *jmxImp) scoped(ht *xnode, spec jmxSpec) jmxSpec {
	if ht == nil {
		return spec
	}
	spec.defaults = slices.Clip(spec.defaults)
	spec.headers = slices.Clip(spec.headers)
	spec.checks = slices.Clip(spec.checks)
	spec.extracts = slices.Clip(spec.extracts)
	spec.timers = slices.Clip(spec.timers)
	for _, p := range jmxPairs(ht) {
		el := p.el
		if !j.isScoped(el) || !jmxEnabled(el) {
			continue
		}
		switch el.tag {
		case "ConfigTestElement":
			if el.get("guiclass") == "HttpDefaultsGui" || jmxProp(el, "HTTPSampler.domain") != nil || jmxProp(el, "HTTPSampler.path") != nil {
				spec.defaults = append(spec.defaults, el)
			} else {
				j.n.add(jmxLabel(el), "a configuration element with no Volley equivalent")
			}
		case "HeaderManager":
			for _, h := range jmxItems(el, "HeaderManager.headers") {
				if k := strings.TrimSpace(jmxStr(h, "Header.name")); k != "" {
					spec.headers = append(spec.headers, [2]string{k, jmxStr(h, "Header.value")})
				}
			}
		case "CookieManager":
			spec.headers = j.cookieManager(el, spec.headers)
		case "CSVDataSet":
			j.csvDataSet(el)
		case "ResponseAssertion", "JSONPathAssertion", "DurationAssertion":
			spec.checks = append(spec.checks, el)
		case "RegexExtractor", "JSONPostProcessor":
			spec.extracts = append(spec.extracts, el)
		case "ConstantTimer", "UniformRandomTimer":
			spec.timers = append(spec.timers, el)
		}
	}
	return spec
}

// level imports the samplers and controllers of one hashTree level under spec.
func (j *jmxImp) level(ht *xnode, spec jmxSpec) {
	if ht == nil {
		return
	}
	spec = j.scoped(ht, spec)
	for _, p := range jmxPairs(ht) {
		el := p.el
		if j.isScoped(el) {
			if !jmxEnabled(el) {
				j.n.add(jmxLabel(el), "disabled in JMeter")
			}
			continue
		}
		switch {
		case !jmxEnabled(el):
			j.n.add(jmxLabel(el), "disabled in JMeter")
		case el.tag == "HTTPSamplerProxy" || el.tag == "HTTPSampler" || el.tag == "HTTPSampler2":
			j.sampler(el, p.sub, spec)
		case el.tag == "TransactionController":
			j.n.add(jmxLabel(el), "flattened: its samplers are imported in place; the transaction's own timing is not recorded")
			j.level(p.sub, spec)
		case el.tag == "GenericController":
			j.n.add(jmxLabel(el), "flattened: its samplers are imported in place")
			j.level(p.sub, spec)
		case el.tag == "LoopController":
			loops := jmxStr(el, "LoopController.loops")
			j.n.add(jmxLabel(el), "flattened to one pass (JMeter repeats it "+loops+" times per iteration)")
			j.level(p.sub, spec)
		default:
			j.skipElement(p)
		}
	}
}

// skipElement lists an element that is not imported, with the samplers under it.
func (j *jmxImp) skipElement(p jmxPair) {
	el := p.el
	reason := "no Volley equivalent"
	switch {
	case el.tag == "ResultCollector" || el.tag == "Summariser" || strings.HasSuffix(el.tag, "Visualizer"):
		reason = "a listener: Volley records and reports results itself"
	case strings.HasSuffix(el.tag, "ThreadGroup"):
		reason = "this kind of Thread Group has no Volley equivalent"
	case strings.HasSuffix(el.tag, "Controller"):
		reason = "a logic controller with no Volley equivalent"
	case strings.HasSuffix(el.tag, "Sampler") || strings.Contains(el.tag, "Sampler"):
		reason = "only HTTP Request samplers are imported"
	case strings.HasSuffix(el.tag, "PreProcessor") || strings.HasSuffix(el.tag, "PostProcessor") || strings.HasSuffix(el.tag, "Extractor"):
		reason = "a pre/post-processor with no Volley equivalent"
	case strings.HasSuffix(el.tag, "Assertion"):
		reason = "an assertion with no Volley check equivalent"
	case strings.HasSuffix(el.tag, "Timer"):
		reason = "a timer with no Volley think-time equivalent"
	}
	if n := jmxCountSamplers(p.sub); n > 0 {
		reason += fmt.Sprintf("; the %d HTTP Request sampler(s) inside it are not imported", n)
	}
	j.n.add(jmxLabel(el), reason)
}

func jmxCountSamplers(n *xnode) int {
	if n == nil {
		return 0
	}
	c := 0
	for _, k := range n.kids {
		if k.tag == "HTTPSamplerProxy" || k.tag == "HTTPSampler" || k.tag == "HTTPSampler2" {
			c++
		}
		if k.tag == "hashTree" {
			c += jmxCountSamplers(k)
		}
	}
	return c
}

// threadGroup maps a Thread Group's threads, ramp-up, loops and scheduler to an executor.
func (j *jmxImp) threadGroup(tg *xnode) map[string]any {
	label := jmxLabel(tg)
	num := func(prop string, dflt int) int {
		orig := strings.TrimSpace(jmxStr(tg, prop))
		raw := strings.TrimSpace(j.resolve(orig))
		if raw == "" {
			return dflt
		}
		if strings.Contains(orig, "${__P") || strings.Contains(orig, "${__property") {
			j.n.add(label, fmt.Sprintf("%s %s: JMeter property replaced by its default %s", prop, orig, raw))
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			j.n.add(label, fmt.Sprintf("%s %q is not a number; %d used", prop, raw, dflt))
			return dflt
		}
		return n
	}
	threads := max(num("ThreadGroup.num_threads", 1), 1)
	threads = min(threads, plan.MaxVUs)
	ramp := num("ThreadGroup.ramp_time", 0)
	mc := jmxProp(tg, "ThreadGroup.main_controller")
	loops := 1
	if raw := strings.TrimSpace(j.resolve(jmxStr(mc, "LoopController.loops"))); raw != "" {
		if n, err := strconv.Atoi(raw); err == nil {
			loops = n
		} else {
			j.n.add(label, fmt.Sprintf("loop count %q is not a number; 1 used", raw))
		}
	}
	forever := loops < 0 // the main controller of a Thread Group loops forever at -1 (continue_forever is false there)
	scheduler := jmxBool(tg, "ThreadGroup.scheduler")
	duration, delay := 0, 0
	if scheduler {
		duration = num("ThreadGroup.duration", 0)
		delay = num("ThreadGroup.delay", 0)
	}
	if delay > 0 {
		j.n.add(label, fmt.Sprintf("the startup delay of %ds is not imported: the run starts at once", delay))
	}
	secs := func(n int) string { return (time.Duration(n) * time.Second).String() }
	if !forever {
		load := map[string]any{"executor": plan.PerVUIterations, "vus": threads, "iterations": min(max(loops, 1), plan.MaxIterations)}
		if duration > 0 {
			load["max_duration"] = secs(duration)
		}
		if ramp > 0 {
			j.n.add(label, fmt.Sprintf("the ramp-up of %ds is not imported: per-vu-iterations starts all %d VUs at once", ramp, threads))
		}
		return load
	}
	total := secs(duration)
	if duration <= 0 {
		total = jmxForeverDuration
		j.n.add(label, "loops forever without a scheduler duration: the imported plan runs for "+jmxForeverDuration+" (edit load)")
	}
	if ramp <= 0 {
		return map[string]any{"executor": plan.ConstantVUs, "vus": threads, "duration": total}
	}
	d, _ := time.ParseDuration(total)
	stages := []map[string]any{{"duration": secs(ramp), "target": threads}}
	if rest := d - time.Duration(ramp)*time.Second; rest > 0 {
		stages = append(stages, map[string]any{"duration": rest.String(), "target": threads})
	}
	return map[string]any{"executor": plan.RampingVUs, "start_vus": 0, "stages": stages}
}

// resolve substitutes User Defined Variables and ${__P(name,default)} in a number-like setting.
func (j *jmxImp) resolve(s string) string {
	out, _ := j.convert(s, true)
	return out
}

// cookieManager turns a Cookie Manager into http.cookies ("iteration" when it clears its cookies
// each iteration, else "vu": the VU's jar, as JMeter's per thread) and its user-defined cookies
// into a Cookie header.
func (j *jmxImp) cookieManager(el *xnode, headers [][2]string) [][2]string {
	label := jmxLabel(el)
	if jmxBool(el, "CookieManager.clearEachIteration") {
		j.cookies = "iteration"
	} else if j.cookies == "" {
		j.cookies = "vu"
	}
	var pairs []string
	for _, c := range jmxItems(el, "CookieManager.cookies") {
		name := c.get("name")
		if name == "" {
			name = c.get("testname")
		}
		if name != "" {
			pairs = append(pairs, name+"="+jmxStr(c, "Cookie.value"))
		}
	}
	if len(pairs) > 0 {
		headers = append(headers, [2]string{"Cookie", strings.Join(pairs, "; ")})
		j.n.add(label, "its user-defined cookies are sent as a Cookie header on every request in its scope, whatever their domain and path")
	}
	return headers
}

// csvDataSet turns the first CSV Data Set Config into plan data with its column names and one
// empty row: the file itself is not part of the .jmx.
func (j *jmxImp) csvDataSet(el *xnode) {
	label := jmxLabel(el)
	if j.data != nil {
		j.n.add(label, "a Volley plan has one data table: only the first CSV Data Set Config is imported")
		return
	}
	var cols []string
	for _, v := range strings.Split(jmxStr(el, "variableNames"), ",") {
		if v = strings.TrimSpace(v); v != "" {
			if !jmxVarName.MatchString(v) {
				j.n.add(label, fmt.Sprintf("column %q is not a Volley variable name; left out", v))
				continue
			}
			cols = append(cols, v)
		}
	}
	if len(cols) == 0 {
		j.n.add(label, "no variable names are given (JMeter reads them from the file's first line, which is not part of the .jmx)")
		return
	}
	empty := make([]string, len(cols))
	for i := range empty {
		empty[i] = `""`
	}
	j.data = map[string]any{"csv": strings.Join(cols, ",") + "\n" + strings.Join(empty, ",") + "\n"}
	file := jmxStr(el, "filename")
	reason := fmt.Sprintf("the file %q is not part of the .jmx: data.csv holds its columns and one empty row; paste the file's rows under the header (volley run also takes data.file)", file)
	if d := jmxStr(el, "delimiter"); d != "" && d != "," {
		reason += fmt.Sprintf("; its delimiter %q must become a comma", d)
	}
	if mode := jmxStr(el, "shareMode"); mode != "" && mode != "shareMode.all" {
		reason += "; its sharing mode " + mode + " becomes per-iteration (one cursor for all VUs)"
	}
	if jmxStr(el, "ignoreFirstLine") == "true" {
		reason += "; the file's first line is a header to drop"
	}
	j.n.add(label, reason)
}

var volleyMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true}

// sampler imports one HTTP Request sampler with the scoped elements above and inside it.
func (j *jmxImp) sampler(el, sub *xnode, spec jmxSpec) {
	label := jmxLabel(el)
	if j.opts.stopped() {
		return
	}
	if len(j.reqs) >= plan.MaxRequests {
		j.n.overReq++
		return
	}
	spec = j.scoped(sub, spec)
	if sub != nil {
		for _, p := range jmxPairs(sub) {
			if !j.isScoped(p.el) {
				j.skipElement(p)
			} else if !jmxEnabled(p.el) {
				j.n.add(jmxLabel(p.el), "disabled in JMeter")
			}
		}
	}
	get := func(prop string) string {
		if v := strings.TrimSpace(jmxStr(el, prop)); v != "" {
			return v
		}
		for i := len(spec.defaults) - 1; i >= 0; i-- {
			if v := strings.TrimSpace(jmxStr(spec.defaults[i], prop)); v != "" {
				return v
			}
		}
		return ""
	}
	method := strings.ToUpper(strings.TrimSpace(jmxStr(el, "HTTPSampler.method")))
	if method == "" {
		method = "GET"
	}
	if !volleyMethods[method] {
		j.n.add(label, "method "+method+" is not one Volley sends")
		return
	}
	path := get("HTTPSampler.path")
	var raw string
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		raw = path
	} else {
		proto := strings.ToLower(get("HTTPSampler.protocol"))
		port := get("HTTPSampler.port")
		if proto == "" {
			proto = "http"
			if port == "443" {
				proto = "https"
			}
		}
		host := get("HTTPSampler.domain")
		if host == "" {
			j.n.add(label, "no server name (in the sampler or an HTTP Request Defaults): not imported")
			return
		}
		if port != "" && !(proto == "http" && port == "80") && !(proto == "https" && port == "443") {
			host += ":" + port
		}
		if path != "" && !strings.HasPrefix(j.resolve(path), "/") {
			path = "/" + path
		}
		raw = proto + "://" + host + path
	}
	u := j.text(raw, label)
	if esc := escapeControls(u); esc != u {
		j.n.add(label, "control characters (line breaks, tabs) in the URL percent-encoded: check the URL")
		u = esc
	}
	if strings.Contains(hostOf(u), "{{") || strings.Contains(hostOf(u), "${") {
		j.n.add(label, "the server name "+hostOf(u)+" depends on a variable; replaced by jmeter-host.invalid (edit the URL)")
		u = strings.Replace(u, hostOf(u), "jmeter-host.invalid", 1)
	}
	var args []*xnode
	for _, a := range jmxItems(jmxProp(el, "HTTPsampler.Arguments"), "Arguments.arguments") {
		args = append(args, a)
	}
	for _, d := range spec.defaults {
		args = append(args, jmxItems(jmxProp(d, "HTTPsampler.Arguments"), "Arguments.arguments")...)
	}
	req := map[string]any{"name": impClip(strings.TrimSpace(el.get("testname")), plan.MaxNameBytes), "method": method}
	headers := map[string]string{}
	lower := map[string]string{}
	setHeader := func(k, v string) {
		if old, ok := lower[strings.ToLower(k)]; ok {
			delete(headers, old)
		}
		lower[strings.ToLower(k)] = k
		headers[k] = v
	}
	for _, h := range spec.headers {
		setHeader(h[0], j.text(h[1], label))
	}
	switch {
	case jmxBool(el, "HTTPSampler.postBodyRaw"):
		var b strings.Builder
		for _, a := range args {
			b.WriteString(jmxStr(a, "Argument.value"))
		}
		req["body"] = j.text(b.String(), label)
	case len(args) > 0:
		var parts []string
		for _, a := range args {
			name, val := jmxStr(a, "Argument.name"), jmxStr(a, "Argument.value")
			if jmxBool(a, "HTTPArgument.always_encode") {
				name, val = jmxEncode(name), jmxEncode(val)
			}
			if name == "" && val == "" {
				continue
			}
			parts = append(parts, j.text(name, label)+"="+j.text(val, label))
		}
		q := strings.Join(parts, "&")
		if q == "" {
			break
		}
		if method == "POST" || method == "PUT" || method == "PATCH" {
			req["body"] = q
			if _, ok := lower["content-type"]; !ok {
				setHeader("Content-Type", "application/x-www-form-urlencoded")
			}
		} else if strings.Contains(u, "?") {
			u += "&" + q
		} else {
			u += "?" + q
		}
	}
	req["url"] = u
	if len(headers) > 0 {
		req["headers"] = headers
	}
	if jmxBool(el, "HTTPSampler.DO_MULTIPART_POST") || len(jmxItems(jmxProp(el, "HTTPsampler.Files"), "HTTPFileArgs.files")) > 0 {
		j.n.add(label, "file uploads (multipart/form-data) are not imported: the body holds the form fields only")
	}
	for _, t := range []string{"HTTPSampler.connect_timeout", "HTTPSampler.response_timeout"} {
		if v := strings.TrimSpace(jmxStr(el, t)); v != "" {
			j.n.add(label, fmt.Sprintf("%s %sms is not imported: Volley's http.timeout and http.connect_timeout apply to the whole plan", strings.TrimPrefix(t, "HTTPSampler."), v))
		}
	}
	if jmxBool(el, "HTTPSampler.image_parser") {
		j.n.add(label, "embedded resources (images, scripts, CSS) are not downloaded by Volley")
	}
	if jmxBool(el, "HTTPSampler.follow_redirects") || jmxBool(el, "HTTPSampler.auto_redirects") {
		j.follow = true
	} else {
		j.noFollow = true
	}
	var checks []map[string]any
	for _, c := range spec.checks {
		checks = append(checks, j.check(c)...)
	}
	if len(checks) > plan.MaxChecks {
		j.n.add(label, fmt.Sprintf("at most %d checks per request: the rest are left out", plan.MaxChecks))
		checks = checks[:plan.MaxChecks]
	}
	if len(checks) > 0 {
		req["checks"] = checks
	}
	var ex []map[string]any
	for _, x := range spec.extracts {
		ex = append(ex, j.extract(x)...)
	}
	if len(ex) > plan.MaxExtracts {
		j.n.add(label, fmt.Sprintf("at most %d extractions per request: the rest are left out", plan.MaxExtracts))
		ex = ex[:plan.MaxExtracts]
	}
	if len(ex) > 0 {
		req["extract"] = ex
	}
	j.reqs = append(j.reqs, req)
	j.thinks = append(j.thinks, j.think(spec.timers))
}

// jmxEncode is the form encoding JMeter applies to an argument marked "URL Encode?", leaving
// ${…} references whole so that they still become {{variables}}.
func jmxEncode(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(url.QueryEscape(s))
			break
		}
		b.WriteString(url.QueryEscape(s[:i]))
		end := jmxRefEnd(s, i)
		if end < 0 {
			b.WriteString(url.QueryEscape(s[i:]))
			break
		}
		b.WriteString(s[i:end])
		s = s[end:]
	}
	return b.String()
}

func hostOf(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// think sums the timers in scope (JMeter runs each before the sampler; Volley pauses after it).
func (j *jmxImp) think(timers []*xnode) string {
	var lo, hi time.Duration
	for _, t := range timers {
		label := jmxLabel(t)
		ms := func(prop string) (time.Duration, bool) {
			raw := strings.TrimSpace(j.resolve(jmxStr(t, prop)))
			if raw == "" {
				return 0, true
			}
			f, err := strconv.ParseFloat(raw, 64)
			if err != nil || f < 0 || f > float64(plan.MaxTimeout/time.Millisecond) {
				j.n.add(label, fmt.Sprintf("%s %q is not a number of milliseconds; the timer is left out", prop, raw))
				return 0, false
			}
			return time.Duration(f * float64(time.Millisecond)).Round(time.Millisecond), true
		}
		d, ok := ms("ConstantTimer.delay")
		if !ok {
			continue
		}
		r := time.Duration(0)
		if t.tag == "UniformRandomTimer" {
			if r, ok = ms("RandomTimer.range"); !ok {
				continue
			}
		}
		lo, hi = lo+d, hi+d+r
	}
	hi = min(hi, plan.MaxTimeout)
	lo = min(lo, hi)
	switch {
	case hi == 0:
		return ""
	case lo == hi:
		return lo.String()
	}
	return lo.String() + "-" + hi.String()
}

// Response Assertion test types (bit flags of Assertion.test_type).
const (
	jmxMatch     = 1
	jmxContains  = 2
	jmxNot       = 4
	jmxEquals    = 8
	jmxSubstring = 16
	jmxOr        = 32
)

var jmxStatus = regexp.MustCompile(`^[1-5][0-9][0-9]$`)

// check maps one assertion to Volley checks (none, with a note, when it has no equivalent).
func (j *jmxImp) check(el *xnode) []map[string]any {
	label := jmxLabel(el)
	switch el.tag {
	case "DurationAssertion":
		raw := strings.TrimSpace(j.resolve(jmxStr(el, "DurationAssertion.duration")))
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			j.n.add(label, fmt.Sprintf("duration %q is not a positive number of milliseconds", raw))
			return nil
		}
		return []map[string]any{{"type": "latency", "op": "le", "value": (time.Duration(n) * time.Millisecond).String()}}
	case "JSONPathAssertion":
		return j.jsonAssertion(el, label)
	}
	field := jmxStr(el, "Assertion.test_field")
	typ, _ := strconv.Atoi(strings.TrimSpace(jmxStr(el, "Assertion.test_type")))
	var strs []string
	for _, name := range []string{"Asserion.test_strings", "Assertion.test_strings"} { // JMeter's own spelling first
		for _, s := range jmxItems(el, name) {
			strs = append(strs, string(s.text))
		}
	}
	not := typ&jmxNot != 0
	if typ&jmxOr != 0 && len(strs) > 1 {
		j.n.add(label, "OR of several patterns has no Volley equivalent (checks must all pass)")
		return nil
	}
	kind := typ &^ (jmxNot | jmxOr)
	var out []map[string]any
	for _, s := range strs {
		s = j.text(s, label)
		literal := regexp.QuoteMeta(s) == s
		switch field {
		case "Assertion.response_code":
			if !jmxStatus.MatchString(s) || kind&(jmxMatch|jmxContains) != 0 && !literal {
				j.n.add(label, fmt.Sprintf("response code pattern %q is not one status code", s))
				continue
			}
			n, _ := strconv.Atoi(s)
			op := "eq"
			if not {
				op = "ne"
			}
			out = append(out, map[string]any{"type": "status", "op": op, "value": n})
		case "Assertion.response_data", "":
			if s == "" {
				continue
			}
			if !literal && kind&(jmxMatch|jmxContains) != 0 {
				j.n.add(label, fmt.Sprintf("regular expression %q on the body has no Volley check (body checks look for plain text)", s))
				continue
			}
			switch kind {
			case jmxEquals:
				j.n.add(label, "\"equals\" on the body is imported as \"contains\"")
			case jmxMatch:
				j.n.add(label, "\"matches\" on the body is imported as \"contains\"")
			}
			op := "contains"
			if not {
				op = "not_contains"
			}
			out = append(out, map[string]any{"type": "body", "op": op, "value": s})
		default:
			j.n.add(label, "it tests "+strings.TrimPrefix(field, "Assertion.")+", which Volley checks do not read")
			return nil
		}
	}
	return out
}

func (j *jmxImp) jsonAssertion(el *xnode, label string) []map[string]any {
	path, ok := jsonPathToGJSON(jmxStr(el, "JSON_PATH"))
	if !ok {
		j.n.add(label, fmt.Sprintf("JSON path %q uses features Volley's paths lack (.., *, filters)", jmxStr(el, "JSON_PATH")))
		return nil
	}
	invert := jmxBool(el, "INVERT")
	if !jmxBool(el, "JSONVALIDATION") {
		if invert {
			j.n.add(label, "\"path does not exist\" has no Volley check")
			return nil
		}
		return []map[string]any{{"type": "json", "path": path, "op": "exists"}}
	}
	op := "eq"
	if invert {
		op = "ne"
	}
	if jmxBool(el, "EXPECT_NULL") {
		return []map[string]any{{"type": "json", "path": path, "op": op}}
	}
	want := j.text(jmxStr(el, "EXPECTED_VALUE"), label)
	isRegex := jmxProp(el, "ISREGEX") == nil || jmxBool(el, "ISREGEX") // JMeter's default is true
	if isRegex && regexp.QuoteMeta(want) != want {
		j.n.add(label, fmt.Sprintf("expected value %q is a regular expression; Volley's json check compares values", want))
		return nil
	}
	return []map[string]any{{"type": "json", "path": path, "op": op, "value": jsonScalar(want)}}
}

// jsonScalar reads s as a JSON number, boolean or null where it is one, else keeps it a string.
func jsonScalar(s string) any {
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && strings.TrimSpace(s) == s {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
		return f
	}
	return s
}

var jsonPathStep = regexp.MustCompile(`^(?:\.([A-Za-z0-9_\-]+)|\[(\d+)\]|\['([^'.*?|#@\\]+)'\]|\["([^".*?|#@\\]+)"\])`)

// jsonPathToGJSON turns a simple JSONPath ($.a.b[0]['c']) into the gjson path Volley uses (a.b.0.c).
func jsonPathToGJSON(p string) (string, bool) {
	p = strings.TrimSpace(p)
	rest, ok := strings.CutPrefix(p, "$")
	if !ok {
		rest = "." + p
	}
	var steps []string
	for rest != "" {
		m := jsonPathStep.FindStringSubmatch(rest)
		if m == nil {
			return "", false
		}
		for _, g := range m[1:] {
			if g != "" {
				steps = append(steps, g)
				break
			}
		}
		rest = rest[len(m[0]):]
	}
	if len(steps) == 0 {
		return "", false
	}
	return strings.Join(steps, "."), true
}

// extract maps a Regular Expression Extractor or JSON Extractor to Volley extractions.
func (j *jmxImp) extract(el *xnode) []map[string]any {
	label := jmxLabel(el)
	if el.tag == "RegexExtractor" {
		v := strings.TrimSpace(jmxStr(el, "RegexExtractor.refname"))
		re := jmxStr(el, "RegexExtractor.regex")
		switch src := strings.TrimSpace(jmxStr(el, "RegexExtractor.useHeaders")); {
		case !jmxVarName.MatchString(v):
			j.n.add(label, fmt.Sprintf("variable %q is not a Volley variable name", v))
		case src != "" && src != "false":
			j.n.add(label, "it reads the "+src+" field; Volley's regex extraction reads the body")
		case jmxStr(el, "RegexExtractor.template") != "$1$" && jmxStr(el, "RegexExtractor.template") != "":
			j.n.add(label, fmt.Sprintf("template %q: Volley takes the first group", jmxStr(el, "RegexExtractor.template")))
		default:
			if _, err := regexp.Compile(re); err != nil || re == "" {
				j.n.add(label, fmt.Sprintf("regular expression %q is not RE2 syntax (no look-around or back-references)", re))
				return nil
			}
			if m := strings.TrimSpace(jmxStr(el, "RegexExtractor.match_number")); m != "" && m != "1" {
				j.n.add(label, "match number "+m+" becomes the first match")
			}
			if d := jmxStr(el, "RegexExtractor.default"); d != "" {
				j.n.add(label, fmt.Sprintf("default value %q is not kept: a value not found leaves the variable empty", d))
			}
			return []map[string]any{{"var": v, "from": "regex", "pattern": re}}
		}
		return nil
	}
	names := strings.Split(jmxStr(el, "JSONPostProcessor.referenceNames"), ";")
	paths := strings.Split(jmxStr(el, "JSONPostProcessor.jsonPathExprs"), ";")
	if len(names) != len(paths) {
		j.n.add(label, "the numbers of variable names and JSON paths differ")
		return nil
	}
	var out []map[string]any
	for i, v := range names {
		v = strings.TrimSpace(v)
		path, ok := jsonPathToGJSON(paths[i])
		switch {
		case !jmxVarName.MatchString(v):
			j.n.add(label, fmt.Sprintf("variable %q is not a Volley variable name", v))
		case !ok:
			j.n.add(label, fmt.Sprintf("JSON path %q uses features Volley's paths lack (.., *, filters)", paths[i]))
		default:
			out = append(out, map[string]any{"var": v, "from": "json", "path": path})
		}
	}
	if d := strings.Trim(jmxStr(el, "JSONPostProcessor.defaultValues"), "; "); d != "" && len(out) > 0 {
		j.n.add(label, fmt.Sprintf("default values %q are not kept: a value not found leaves the variable empty", d))
	}
	if m := strings.TrimSpace(jmxStr(el, "JSONPostProcessor.match_numbers")); m != "" && m != "1" && len(out) > 0 {
		j.n.add(label, "match numbers "+m+" become the first match")
	}
	return out
}

// text converts JMeter references in s to Volley templates, noting those it cannot convert.
func (j *jmxImp) text(s, label string) string {
	out, bad := j.convert(s, false)
	for _, b := range bad {
		j.n.add(label, b)
	}
	return out
}

// jmxRefEnd is the index just past the "}" closing the reference that starts at s[i:] ("${"),
// counting nested braces; -1 when it is not closed.
func jmxRefEnd(s string, i int) int {
	depth := 0
	for k := i + 1; k < len(s); k++ {
		switch s[k] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return k + 1
			}
		}
	}
	return -1
}

var jmxRandom = regexp.MustCompile(`^__Random\(\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,[^)]*)?\)$`)

// convert replaces ${var} with {{var}} (variables the plan defines), User Defined Variables with
// their values, ${__P(name,default)} with the default and a few functions with Volley built-ins;
// anything else is kept as written and reported in bad. plain (for numbers) reports nothing.
func (j *jmxImp) convert(s string, plain bool) (string, []string) {
	return j.convertIn(s, plain, 0)
}

// convertIn is convert inside nest User Defined Variable values: a value's own references are
// converted one level deep (JMeter's own rule for values defined in one Arguments element is no
// deeper), so a variable that names itself ends.
func (j *jmxImp) convertIn(s string, plain bool, nest int) (string, []string) {
	var b strings.Builder
	var bad []string
	for depth := 0; ; depth++ {
		i := strings.Index(s, "${")
		if i < 0 || depth > 1000 {
			b.WriteString(s)
			break
		}
		end := jmxRefEnd(s, i)
		if end < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		ref := s[i+2 : end-1]
		name := strings.TrimSpace(ref)
		switch fn, args, isFn := jmxFunc(name); {
		case j.vars[name]:
			b.WriteString("{{" + name + "}}")
		case !isFn && j.hasUDV(name) && nest < 2:
			v, more := j.convertIn(j.udv[name], plain, nest+1)
			b.WriteString(v)
			bad = append(bad, more...)
		case fn == "__P" || fn == "__property":
			dflt := ""
			if fn == "__P" && len(args) > 1 {
				dflt = args[1]
			} else if fn == "__property" && len(args) > 2 {
				dflt = args[2]
			}
			b.WriteString(dflt)
			if !plain {
				bad = append(bad, fmt.Sprintf("${%s}: JMeter property replaced by its default %q", name, dflt))
			}
		case fn == "__UUID":
			b.WriteString("{{uuid}}")
		case fn == "__threadNum":
			b.WriteString("{{vu}}")
		case jmxRandom.MatchString(name):
			m := jmxRandom.FindStringSubmatch(name)
			b.WriteString("{{random_int " + m[1] + " " + m[2] + "}}")
		case isFn:
			b.WriteString(s[i:end])
			bad = append(bad, fmt.Sprintf("${%s}: JMeter function with no Volley equivalent, kept as written", impClip(name, 80)))
		default:
			b.WriteString(s[i:end])
			bad = append(bad, fmt.Sprintf("${%s}: variable not defined by a CSV Data Set, an extractor or User Defined Variables, kept as written", impClip(name, 80)))
		}
		s = s[end:]
	}
	if plain {
		return b.String(), nil
	}
	return b.String(), bad
}

func (j *jmxImp) hasUDV(name string) bool { _, ok := j.udv[name]; return ok }

// jmxFunc splits "__name(a,b)" (or "__name") into the function name and its arguments.
func jmxFunc(ref string) (name string, args []string, ok bool) {
	if !strings.HasPrefix(ref, "__") {
		return "", nil, false
	}
	name, rest, hasArgs := strings.Cut(ref, "(")
	if hasArgs {
		args = strings.Split(strings.TrimSuffix(rest, ")"), ",")
	}
	return strings.TrimSpace(name), args, true
}

// escapeControls percent-encodes the ASCII control characters of u (a URL may hold none: a JMX
// path split over lines carries its line break and indentation).
func escapeControls(u string) string {
	if !strings.ContainsFunc(u, isControl) {
		return u
	}
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		if c := u[i]; isControl(rune(c)) {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
