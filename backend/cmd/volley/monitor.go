package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shirou/gopsutil/v4/process"
	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/monitor"
)

func monitorCmd() *cobra.Command {
	var names []string
	listen := "127.0.0.1:9256"
	token := os.Getenv("VOLLEY_MONITOR_TOKEN")
	c := &cobra.Command{
		Use:   "monitor",
		Short: "Expose the CPU and memory of named processes (and their children) for Prometheus and Volley",
		Long: `Serve /metrics in the Prometheus text format with, per process name given to --process, the
processes of that name and all their descendants summed:
  volley_process_cpu_seconds_total{process}       CPU time (user + system), counter
  volley_process_cpu_percent{process}             CPU % since the previous scrape (of one core: 200 = two cores)
  volley_process_resident_memory_bytes{process}   resident memory (RSS)
  volley_process_count{process}                   processes counted
A plan's "process" monitor reads it. It listens on loopback unless --token (or the environment
variable VOLLEY_MONITOR_TOKEN) is set: a non-loopback address requires one (at least 16
characters), and then every request must carry "Authorization: Bearer <token>". Without a token
only requests whose Host is a loopback name or address are answered (others: 421), so that a web
page cannot read it through a DNS name rebound to 127.0.0.1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(names) == 0 {
				return usageError{errors.New("--process needs at least one process name")}
			}
			if token != "" && len(token) < minMonitorToken {
				return usageError{fmt.Errorf("--token has %d characters; give at least %d (e.g. from `openssl rand -hex 16`): it is all that keeps the metrics beyond this host, and a short one can be guessed", len(token), minMonitorToken)}
			}
			if !loopbackAddr(listen) && token == "" {
				return usageError{fmt.Errorf("%s is not a loopback address: give --token (or VOLLEY_MONITOR_TOKEN) to serve beyond this host", listen)}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "volley monitor: %s on http://%s/metrics\n", strings.Join(names, ","), ln.Addr())
			return serveMonitor(ctx, ln, names, token)
		},
	}
	c.Flags().StringSliceVar(&names, "process", nil, "process names to watch, comma-separated (e.g. nginx,php-fpm)")
	c.Flags().StringVar(&listen, "listen", listen, "address to serve /metrics on")
	c.Flags().StringVar(&token, "token", token, "bearer token every request must carry (required beyond loopback)")
	return c
}

// minMonitorToken is the shortest --token accepted, in bytes.
const minMonitorToken = 16

// loopbackAddr reports whether a listen address binds loopback only ("127.0.0.1:9256",
// "[::1]:9256", "localhost:9256"); an empty or wildcard host is not.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

// loopbackHost reports whether a host (no port, no brackets) is "localhost" or a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHostHeader reports whether a request's Host ("127.0.0.1:9256", "[::1]", "localhost")
// names this host by a loopback name or address.
func loopbackHostHeader(h string) bool {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	} else {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	return loopbackHost(h)
}

// serveMonitor serves /metrics on ln until ctx ends.
func serveMonitor(ctx context.Context, ln net.Listener, names []string, token string) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newProcCollector(names))
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{MaxRequestsInFlight: 4, Timeout: 5 * time.Second})
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Without a token the listener is on loopback: a Host of another name is a browser led
		// here by a rebound DNS name.
		if !loopbackHostHeader(r.Host) {
			http.Error(w, "Host "+strconv.Quote(r.Host)+" is not a loopback name or address", http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(w, r)
	})
	if token != "" {
		want := []byte("Bearer " + token)
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="volley monitor"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// procCollector measures the named processes at each scrape. The CPU counter stays monotonic as
// processes come and go: the CPU time of a process that ended is kept (its last reading), and a
// process appearing later adds its whole CPU time so far.
type procCollector struct {
	names                []string
	cpu, pct, rss, count *prometheus.Desc

	mu      sync.Mutex
	seen    map[procKey]float64 // per name and process: CPU seconds at the last scrape
	gone    map[string]float64  // per name: CPU seconds of the processes that ended
	lastCPU map[string]float64
	lastAt  time.Time
	pctNow  map[string]float64
}

type procKey struct {
	name    string
	pid     int32
	created int64 // guards against a reused pid
}

func newProcCollector(names []string) *procCollector {
	l := []string{monitor.ProcessLabel}
	return &procCollector{
		names: names,
		cpu:   prometheus.NewDesc(monitor.ProcessCPUSeconds, "CPU time (user + system) of the named processes and their descendants, in seconds.", l, nil),
		pct:   prometheus.NewDesc(monitor.ProcessCPUPercent, "CPU of the named processes and their descendants since the previous scrape, in percent of one core.", l, nil),
		rss:   prometheus.NewDesc(monitor.ProcessRSS, "Resident memory of the named processes and their descendants, in bytes.", l, nil),
		count: prometheus.NewDesc(monitor.ProcessCount, "Number of processes counted for the name.", l, nil),
		seen:  map[procKey]float64{}, gone: map[string]float64{}, lastCPU: map[string]float64{}, pctNow: map[string]float64{},
	}
}

func (c *procCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.cpu
	ch <- c.pct
	ch <- c.rss
	ch <- c.count
}

type procInfo struct {
	p       *process.Process
	name    string
	ppid    int32
	created int64
}

func (c *procCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	procs, _ := process.Processes()
	all := make(map[int32]procInfo, len(procs))
	children := map[int32][]int32{}
	for _, p := range procs {
		name, err := p.Name()
		if err != nil {
			continue // ended meanwhile, or not ours to read
		}
		ppid, _ := p.Ppid()
		created, _ := p.CreateTime()
		all[p.Pid] = procInfo{p: p, name: name, ppid: ppid, created: created}
		children[ppid] = append(children[ppid], p.Pid)
	}
	now := time.Now()
	alive := map[procKey]bool{}
	for _, name := range c.names {
		// The processes of this name and their descendants, each once.
		set := map[int32]bool{}
		var walk func(pid int32)
		walk = func(pid int32) {
			if set[pid] {
				return
			}
			set[pid] = true
			for _, k := range children[pid] {
				walk(k)
			}
		}
		for pid, pi := range all {
			if pi.name == name {
				walk(pid)
			}
		}
		var cpu, rss float64
		n := 0
		for pid := range set {
			pi := all[pid]
			t, err := pi.p.Times()
			if err != nil {
				continue
			}
			k := procKey{name, pid, pi.created}
			v := t.User + t.System
			c.seen[k], alive[k] = v, true
			cpu += v
			n++
			if m, err := pi.p.MemoryInfo(); err == nil {
				rss += float64(m.RSS)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.rss, prometheus.GaugeValue, rss, name)
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n), name)
		c.pctNow[name] = cpu // completed below, once the ended processes are known
	}
	for k, v := range c.seen {
		if !alive[k] {
			c.gone[k.name] += v
			delete(c.seen, k)
		}
	}
	dt := now.Sub(c.lastAt).Seconds()
	for _, name := range c.names {
		total := c.pctNow[name] + c.gone[name]
		ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, total, name)
		pct := 0.0
		if last, ok := c.lastCPU[name]; ok && dt > 0 && total >= last {
			pct = (total - last) / dt * 100
		}
		ch <- prometheus.MustNewConstMetric(c.pct, prometheus.GaugeValue, pct, name)
		c.lastCPU[name] = total
	}
	c.lastAt = now
}
