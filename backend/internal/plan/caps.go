package plan

import (
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"
)

// Caps are a server's own limits on the plans it runs, set by its administrator (`volley serve`
// and `volley run` flags --max-vus, --max-rate, --max-duration, --max-requests, --memory-budget).
// They narrow the plan's ranges (bounds.go); a zero field sets no cap of its own.
type Caps struct {
	MaxVUs       int           // the most VUs a plan may run at once (Load.PeakVUs)
	MaxRate      int           // the highest arrival rate, in iterations per second
	MaxDuration  time.Duration // the longest load model (Load.Length), graceful stop excluded
	MaxRequests  int           // the most requests in one plan
	MemoryBudget int64         // bytes: the most a run's VUs and shared state may need (EstimateMemory)
}

// Check returns a *ValidationError naming each field of p (a parsed plan) beyond a cap, with the
// cap and the flag that sets it; nil when p is within every cap.
func (c Caps) Check(p *Plan) error {
	v := &ValidationError{}
	l := &p.Load
	if c.MaxRequests > 0 && len(p.Requests) > c.MaxRequests {
		v.add("requests", fmt.Sprintf("has %d requests; this server allows at most %d per plan (--max-requests)", len(p.Requests), c.MaxRequests))
	}
	if peak := l.PeakVUs(); c.MaxVUs > 0 && peak > c.MaxVUs {
		v.add(l.vusField(), fmt.Sprintf("asks for up to %d VUs; this server allows at most %d (--max-vus)", peak, c.MaxVUs))
	}
	if rate, field := l.peakRate(); c.MaxRate > 0 && rate > float64(c.MaxRate) {
		v.add(field, fmt.Sprintf("asks for up to %.0f iterations/s; this server allows at most %d/s (--max-rate)", rate, c.MaxRate))
	}
	if n := l.Length(); c.MaxDuration > 0 && n > c.MaxDuration {
		v.add(l.lengthField(), fmt.Sprintf("the load lasts %s; this server allows at most %s (--max-duration)", n, c.MaxDuration))
	}
	if c.MemoryBudget > 0 {
		if est := EstimateMemory(p); est.Total > c.MemoryBudget {
			v.add(l.vusField(), fmt.Sprintf("the run would need about %s (%d VUs × %s each + %s shared), over this server's memory budget of %s (--memory-budget)",
				mib(est.Total), est.VUs, kib(est.PerVU), mib(est.Shared), mib(c.MemoryBudget)))
		}
	}
	if len(v.Fields) > 0 {
		return v
	}
	return nil
}

// vusField is the field that sets the load model's peak VUs.
func (l *Load) vusField() string {
	if spec, ok := LookupExecutor(l.Executor); ok && spec.VUsField != nil {
		return spec.VUsField(l)
	}
	return "load.vus"
}

// lengthField is the field that sets the load model's length.
func (l *Load) lengthField() string {
	if spec, ok := LookupExecutor(l.Executor); ok && spec.LengthField != nil {
		return spec.LengthField(l)
	}
	return "load.duration"
}

// peakRate is an open load model's highest rate in iterations per second, and the field that sets
// it (0 for closed models).
func (l *Load) peakRate() (float64, string) {
	if spec, ok := LookupExecutor(l.Executor); ok && spec.PeakRate != nil && l.TimeUnit > 0 {
		return spec.PeakRate(l)
	}
	return 0, ""
}

// Memory model of a run (EstimateMemory). PerVUBase is the measured cost of one VU with one
// connection and a pre-serialized request (docs/benchmarks.md §2: 12.5–16.4 KiB per VU; the upper
// figure is used): its goroutine stack, 4 KiB read buffer, response, connection, timer and VU
// structs. The other figures are the sizes of what a plan adds to it.
const (
	PerVUBase       = 16 << 10
	perVURequest    = 64      // a VU's vuReq entry for each request of the plan
	perTemplated    = 2 << 10 // a fasthttp.Request of its own, for a request with {{variables}}
	writeBuffer     = 4 << 10 // a VU's write buffer when any request is templated
	perExtraAddress = 5 << 10 // a connection (struct and read buffer) for each further address
	perExtractVar   = 256     // an extracted value held by the VU
	perNameShard    = 190 << 10
	nameShards      = 4
	perRunShard     = 2 * 190 << 10 // a recorder shard's latency and lag histograms
	runBase         = 8 << 20       // the collector, its histograms and the summary
)

// Estimate is a run's memory estimate in bytes.
type Estimate struct {
	VUs    int   // peak VUs
	PerVU  int64 // bytes per VU
	Shared int64 // bytes shared by the VUs: data table, per-name statistics, recorder
	Total  int64 // VUs × PerVU + Shared
}

// EstimateMemory estimates the memory a run of p needs at its peak, beyond the server's own: each
// VU's state (PerVUBase, plus for every request with {{variables}} a request object of its own and
// twice its rendered size — the request and the render buffer —, a write buffer, a connection per
// further address, extracted variables), and the state shared by the VUs (the data table as text
// and rows, the per-name statistics, the recorder's shards). Response bodies are not counted: they
// are bounded by the engine's body limit, not by the plan.
func EstimateMemory(p *Plan) Estimate {
	perVU := int64(PerVUBase)
	templated := false
	addrs := map[string]bool{}
	vars := map[string]bool{}
	var wire int64
	for _, r := range p.Requests {
		perVU += perVURequest
		size := int64(len(r.URL) + len(r.Body))
		for k, val := range r.Headers {
			size += int64(len(k) + len(val) + 4)
		}
		if hasVar(r.URL) || hasVar(r.Body) || headersHaveVar(r.Headers) {
			templated = true
			perVU += perTemplated + 2*size
		} else {
			wire += size + 256
		}
		if u, err := url.Parse(r.URL); err == nil {
			addrs[u.Scheme+"://"+u.Host] = true
		}
		for _, x := range r.Extract {
			vars[x.Var] = true
		}
	}
	if templated {
		perVU += writeBuffer
	}
	if len(addrs) > 1 {
		perVU += int64(len(addrs)-1) * perExtraAddress
	}
	perVU += int64(len(vars)) * perExtractVar
	shared := int64(runBase) + wire + int64(4*runtime.GOMAXPROCS(0))*perRunShard
	if d := p.Data; d != nil {
		rows := int64(strings.Count(d.CSV, "\n") + 1)
		cols := int64(strings.Count(firstLine(d.CSV), ",") + 1)
		shared += 2*int64(len(d.CSV)) + rows*(24+cols*24)
	}
	names := map[string]bool{}
	for _, r := range p.Requests {
		names[r.Name] = true
	}
	if n := len(names); n > 1 {
		shared += int64(min(n, 100)) * nameShards * perNameShard // metrics.MaxNames
	}
	vus := p.Load.PeakVUs()
	return Estimate{VUs: vus, PerVU: perVU, Shared: shared, Total: int64(vus)*perVU + shared}
}

func hasVar(s string) bool { return strings.Contains(s, "{{") }

func headersHaveVar(h map[string]string) bool {
	for _, v := range h {
		if hasVar(v) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
func kib(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10)) }
