package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Paths resolved once by TestMain.
var (
	repoRoot  string // the module root (/work/main)
	volleyBin string // the volley binary built for this test run
	uiBuilt   bool   // frontend/dist held a built SPA when the binary was built
	uiProblem string // why uiBuilt is false
)

// External programs; VOLLEY_E2E_NGINX and VOLLEY_E2E_CHROMIUM override the Debian paths.
var (
	nginxPath    = envOr("VOLLEY_E2E_NGINX", "/usr/sbin/nginx")
	chromiumPath = envOr("VOLLEY_E2E_CHROMIUM", "/usr/bin/chromium")
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot, err = findModuleRoot(wd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	uiBuilt, uiProblem = checkDist(filepath.Join(repoRoot, "frontend", "dist"))

	dir, err := os.MkdirTemp("", "volley-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	volleyBin = filepath.Join(dir, "volley")
	// A cold build is ~3 minutes on 2 cores (cgo SQLite); the go test timeout covers it.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", volleyBin, "./backend/cmd/volley")
	build.Dir = repoRoot
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building volley failed:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s in %s (UI built: %v)\n", volleyBin, time.Since(start).Round(time.Millisecond), uiBuilt)
	return m.Run()
}

func findModuleRoot(dir string) (string, error) {
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/volley-load/volley")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root (go.mod of github.com/volley-load/volley) not found above the test directory")
		}
		dir = parent
	}
}

func checkDist(dist string) (bool, string) {
	b, err := os.ReadFile(filepath.Join(dist, "index.html"))
	if err != nil {
		return false, "frontend/dist/index.html is missing: run `cd frontend && npm ci && npm run build` before the e2e tests"
	}
	if !bytes.Contains(b, []byte("<script")) {
		return false, "frontend/dist/index.html has no <script>: the SPA build looks incomplete"
	}
	return true, ""
}

// strict reports whether missing tools must fail the test (CI) rather than skip it (a laptop).
func strict() bool { return os.Getenv("VOLLEY_E2E") == "1" }

// requireTool skips (locally) or fails (VOLLEY_E2E=1) when an external program is missing.
func requireTool(t *testing.T, path string) {
	t.Helper()
	if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		if strict() {
			t.Fatalf("%s is required (VOLLEY_E2E=1) but not usable: %v", path, err)
		}
		t.Skipf("%s not installed (set VOLLEY_E2E=1 to make this a failure)", path)
	}
}

// requireUI skips (locally) or fails (VOLLEY_E2E=1) when the SPA was not built into the binary.
func requireUI(t *testing.T) {
	t.Helper()
	if !uiBuilt {
		if strict() {
			t.Fatal(uiProblem)
		}
		t.Skip(uiProblem)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a child process in its own process group, killed (the whole group) at cleanup.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string // file with its stdout and stderr
	done chan struct{}
	err  error // Wait's result, valid after done is closed
	once sync.Once
}

// startProc starts bin with args in its own process group. Its output goes to a file in the test's
// temp dir, whose tail is logged if the test fails. The group is SIGKILLed at cleanup.
func startProc(t *testing.T, name string, bin string, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, name, nil, bin, args...)
}

// startProcEnv is startProc with env added to this process's environment.
func startProcEnv(t *testing.T, name string, env []string, bin string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			t.Logf("--- %s output (tail) ---\n%s", name, tail(logPath, 4000))
		}
	})
	return p
}

// kill SIGKILLs the process group (only the group this test created) and waits for the process.
func (p *proc) kill(t testing.TB) {
	p.once.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Logf("kill %s (pgid %d): %v", p.name, p.cmd.Process.Pid, err)
		}
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) did not exit 10s after SIGKILL", p.name, p.cmd.Process.Pid)
		}
	})
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// server is a running `volley serve`.
type server struct {
	*proc
	base string // http://127.0.0.1:PORT
}

// startServer runs `volley serve` on a free port with the given database and demo target address
// ("" disables the demo target) and waits for /api/health.
func startServer(t *testing.T, db, demoTarget string) *server {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startProc(t, "volley-serve", volleyBin, "serve", "--addr", addr, "--db", db, "--demo-target", demoTarget)
	s := &server{proc: p, base: "http://" + addr}
	waitHealthy(t, s, 30*time.Second)
	return s
}

func waitHealthy(t *testing.T, s *server, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if s.exited() {
			t.Fatalf("volley serve exited before it was healthy (%v):\n%s", s.err, tail(s.log, 4000))
		}
		resp, err := client.Get(s.base + "/api/health")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("volley serve at %s not healthy after %s (last error %v, status %v)", s.base, timeout, err, statusOf(resp))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func statusOf(r *http.Response) string {
	if r == nil {
		return "none"
	}
	return r.Status
}

// waitTCP waits until something accepts connections on addr.
func waitTCP(t *testing.T, addr string, p *proc, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if p != nil && p.exited() {
			t.Fatalf("%s exited before listening on %s (%v):\n%s", p.name, addr, p.err, tail(p.log, 4000))
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after %s: %v", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nginx is a private nginx serving a static page from a temp dir.
type nginx struct {
	*proc
	url       string // http://127.0.0.1:PORT/
	accessLog string
	www       string // the directory it serves
}

// indexHTML is the ~600-byte page nginx serves.
var indexHTML = func() string {
	head := "<!DOCTYPE html>\n<html>\n<head>\n<title>Volley e2e target</title>\n</head>\n<body>\n<h1>Volley e2e target</h1>\n<p>"
	foot := "</p>\n</body>\n</html>\n"
	filler := strings.Repeat("static page served by a private nginx for the end-to-end test. ", 10)
	return head + filler[:600-len(head)-len(foot)] + foot
}()

// startNginx starts it; each of extra returns more server blocks for the config, given the temp
// dir and the web root (h2_test.go adds a TLS + HTTP/2 one).
func startNginx(t *testing.T, extra ...func(dir, www string) string) *nginx {
	t.Helper()
	return startNginxConf(t, nil, extra...)
}

// startNginxConf is startNginx with extra directives for its first server block ("gzip on;").
func startNginxConf(t *testing.T, serverConf []string, extra ...func(dir, www string) string) *nginx {
	t.Helper()
	requireTool(t, nginxPath)
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	tmp := filepath.Join(dir, "tmp")
	for _, d := range []string{www, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte(indexHTML), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	accessLog := filepath.Join(dir, "access.log")
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
    access_log %[2]s;
    client_body_temp_path %[3]s/client_body;
    proxy_temp_path %[3]s/proxy;
    fastcgi_temp_path %[3]s/fastcgi;
    uwsgi_temp_path %[3]s/uwsgi;
    scgi_temp_path %[3]s/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    default_type text/html;
    server {
        listen 127.0.0.1:%[4]d;
        root %[5]s;
        index index.html;
        location / { }
        %[6]s
    }
%[7]s}
`, dir, accessLog, tmp, port, www, strings.Join(serverConf, "\n        "), moreServers(dir, www, extra))
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// -e: the startup error log, before the config's error_log applies (not /var/log/nginx).
	p := startProc(t, "nginx", nginxPath, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitTCP(t, addr, p, 10*time.Second)
	n := &nginx{proc: p, url: "http://" + addr + "/", accessLog: accessLog, www: www}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- nginx error.log (tail) ---\n%s", tail(filepath.Join(dir, "error.log"), 2000))
		}
	})
	return n
}

func moreServers(dir, www string, extra []func(dir, www string) string) string {
	var b strings.Builder
	for _, f := range extra {
		b.WriteString(f(dir, www))
	}
	return b.String()
}

// loggedRequests counts the lines of the access log once it has stopped growing.
func (n *nginx) loggedRequests(t *testing.T, settle, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last, stableSince := -1, time.Now()
	for {
		b, err := os.ReadFile(n.accessLog)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		c := bytes.Count(b, []byte("\n"))
		if c != last {
			last, stableSince = c, time.Now()
		} else if time.Since(stableSince) >= settle {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx access log still growing after %s (%d lines)", timeout, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// api does one JSON request; body may be nil, out may be nil. It returns the status code.
func apiDo(t *testing.T, method, url string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Content-Type", "application/json") // the server's rule for every state change, body or not
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	if out != nil && len(b) > 0 && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, url, truncate(string(b), 500), err)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s -> %d %s", method, url, resp.StatusCode, truncate(string(b), 500))
	}
	return resp.StatusCode
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Wire types: only the fields the tests read.
type runJSON struct {
	ID        int64        `json:"id"`
	PlanID    int64        `json:"plan_id"`
	Status    string       `json:"status"`
	StartedAt string       `json:"started_at"`
	EndedAt   *string      `json:"ended_at"`
	Requests  int64        `json:"requests"`
	RPS       float64      `json:"rps"`
	Error     string       `json:"error"`
	Summary   *summaryJSON `json:"summary"`
}

type summaryJSON struct {
	Requests    int64   `json:"requests"`
	Successes   int64   `json:"successes"`
	Errors      int64   `json:"errors"`
	Interrupted int64   `json:"interrupted"`
	DurationS   float64 `json:"duration_s"`
	RPS         float64 `json:"rps"`
	Latency     struct {
		P50 float64 `json:"p50"`
		P95 float64 `json:"p95"`
		P99 float64 `json:"p99"`
	} `json:"latency_ms"`
	StatusCodes map[string]int64 `json:"status_codes"`
	ErrorKinds  map[string]int64 `json:"error_kinds"`
	Thresholds  []struct {
		Expr  string  `json:"expr"`
		Value float64 `json:"value"`
		OK    bool    `json:"ok"`
	} `json:"thresholds"`
}

type samplesJSON struct {
	Items []json.RawMessage `json:"items"`
}

func getSamples(t *testing.T, base string, runID int64) []json.RawMessage {
	t.Helper()
	var s samplesJSON
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d/samples", base, runID), nil, &s); code != http.StatusOK {
		t.Fatalf("GET samples of run %d: status %d", runID, code)
	}
	return s.Items
}

// waitRunEnded polls GET /api/runs/:id until the run is no longer running.
func waitRunEnded(t *testing.T, base string, runID int64, timeout time.Duration) runJSON {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var r runJSON
		if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", base, runID), nil, &r); code != http.StatusOK {
			t.Fatalf("GET run %d: status %d", runID, code)
		}
		if r.Status != "running" {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d still running after %s", runID, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// artifactsDir is $VOLLEY_ARTIFACTS or backend/e2e/artifacts (git-ignored).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("VOLLEY_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(repoRoot, "backend", "e2e", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// digits parses the integer in a UI text such as "12345" or "12,345".
func digits(t *testing.T, what, s string) int64 {
	t.Helper()
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	n, err := strconv.ParseInt(b.String(), 10, 64)
	if err != nil {
		t.Fatalf("%s: no integer in %q", what, s)
	}
	return n
}

// runCLI runs the volley binary to completion in its own process group (killed when the timeout
// passes) and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(volleyBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start volley %v: %v", args, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("volley %v did not finish within %s; stderr:\n%s", args, timeout, tail2(stderr.String(), 3000))
	}
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("volley %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

func tail2(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
