// Package deploy checks the container files at the repository root (Dockerfile, .dockerignore,
// docker-compose.yml) and the nginx config of the compose target. No Docker engine is needed: the
// compose file is loaded with compose-go (the loader Docker Compose itself uses) and the Dockerfile
// is parsed here, so a broken path, a dropped file or a port published beyond loopback fails CI.
// The Kubernetes manifests (deploy/k8s) are checked without a cluster too: k8s_test.go.
package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

const module = "github.com/volley-load/volley"

// repoRoot is the repository root: this package lives in <root>/deploy.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found above %s: %v", wd, err)
	}
	return root
}

func loadCompose(t *testing.T) (*types.Project, string) {
	t.Helper()
	root := repoRoot(t)
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv([]string{}), // not the caller's environment: defaults in the file must suffice
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return p, root
}

func TestComposeProject(t *testing.T) {
	p, root := loadCompose(t)
	for _, name := range []string{"volley", "target"} {
		if _, ok := p.Services[name]; !ok {
			t.Fatalf("service %q missing; have %v", name, p.ServiceNames())
		}
	}

	v := p.Services["volley"]
	if v.Build == nil {
		t.Fatal("volley: no build section (it must build from the repository's Dockerfile)")
	}
	if filepath.Clean(v.Build.Context) != root {
		t.Errorf("volley: build context %q, want the repository root %q", v.Build.Context, root)
	}
	if df := v.Build.Dockerfile; df != "Dockerfile" && filepath.Clean(df) != filepath.Join(root, "Dockerfile") {
		t.Errorf("volley: dockerfile %q, want Dockerfile", df)
	}
	if _, err := os.Stat(filepath.Join(root, "Dockerfile")); err != nil {
		t.Error(err)
	}
	has8080 := false
	for _, svc := range p.Services {
		for _, port := range svc.Ports {
			// Even with logins, nothing is published beyond the host's loopback (a TLS proxy goes in front).
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s: port %d published on %q, want 127.0.0.1", svc.Name, port.Target, port.HostIP)
			}
			if svc.Name == "volley" && port.Target == 8080 && port.Published == "8080" {
				has8080 = true
			}
		}
	}
	if !has8080 {
		t.Errorf("volley: want port 127.0.0.1:8080:8080, have %+v", v.Ports)
	}
	data := false
	for _, vol := range v.Volumes {
		if vol.Target != "/data" {
			continue
		}
		data = true
		if vol.Type != types.VolumeTypeVolume {
			t.Errorf("volley: /data is a %s mount, want a named volume", vol.Type)
		} else if _, ok := p.Volumes[vol.Source]; !ok {
			t.Errorf("volley: volume %q for /data is not declared under top-level volumes", vol.Source)
		}
	}
	if !data {
		t.Error("volley: no volume mounted at /data (the database lives there)")
	}
	// It binds beyond loopback inside its container, so it needs users: the first admin's password
	// comes as a secret, which the image's CMD reads (--admin-password-file).
	secret := false
	for _, s := range v.Secrets {
		if s.Source == "volley_admin_password" {
			secret = true
			if def, ok := p.Secrets[s.Source]; !ok || def.Environment != "VOLLEY_ADMIN_PASSWORD" {
				t.Errorf("volley: secret %s should be declared from the environment variable VOLLEY_ADMIN_PASSWORD: %+v", s.Source, def)
			}
		}
	}
	if !secret {
		t.Error("volley: the secret volley_admin_password is not given to the service")
	}

	tg := p.Services["target"]
	if !strings.HasPrefix(tg.Image, "nginx:") {
		t.Errorf("target: image %q, want nginx:…", tg.Image)
	}
	page := false
	for _, svc := range p.Services {
		for _, vol := range svc.Volumes {
			if vol.Type != types.VolumeTypeBind {
				continue
			}
			rel, err := filepath.Rel(root, vol.Source)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Errorf("%s: bind mount %q is outside the repository", svc.Name, vol.Source)
				continue
			}
			if _, err := os.Stat(vol.Source); err != nil {
				// Docker would silently create a directory in its place.
				t.Errorf("%s: bind-mounted path %s does not exist in the repository", svc.Name, rel)
			}
			if !vol.ReadOnly {
				t.Errorf("%s: bind mount %s should be read-only", svc.Name, rel)
			}
			if svc.Name == "target" && strings.HasPrefix(vol.Target, "/usr/share/nginx/html") &&
				filepath.ToSlash(rel) == "deploy/target/index.html" {
				page = true
			}
		}
	}
	if !page {
		t.Error("target: deploy/target/index.html is not mounted into /usr/share/nginx/html")
	}
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, COPY, RUN, …
	args string
	line int
}

type stage struct {
	base, name string
	ins        []instruction
}

func parseDockerfile(t *testing.T, file string) []stage {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	var cur strings.Builder
	start := 0
	flush := func() {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return
		}
		cmd, args, _ := strings.Cut(text, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			for len(f) > 0 && strings.HasPrefix(f[0], "--") { // --platform=…
				f = f[1:]
			}
			if len(f) == 0 {
				t.Fatalf("Dockerfile:%d: FROM without an image", start)
			}
			st := stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			return
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("Dockerfile:%d: %s before the first FROM", start, in.cmd)
			}
			return
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue // comments and parser directives (also allowed between continuation lines)
		}
		if cur.Len() == 0 {
			if trimmed == "" {
				continue
			}
			start = i + 1
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	return stages
}

// copyArgs splits COPY/ADD arguments into flags and the source/destination list (shell or JSON form).
func copyArgs(t *testing.T, in instruction) (flags map[string]string, srcs []string, dest string) {
	t.Helper()
	flags = map[string]string{}
	rest := in.args
	for strings.HasPrefix(rest, "--") {
		var flag string
		flag, rest, _ = strings.Cut(rest, " ")
		k, v, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		flags[k] = v
		rest = strings.TrimSpace(rest)
	}
	var list []string
	if strings.HasPrefix(rest, "[") {
		if err := json.Unmarshal([]byte(rest), &list); err != nil {
			t.Fatalf("Dockerfile:%d: %s: bad JSON form: %v", in.line, in.cmd, err)
		}
	} else {
		list = strings.Fields(rest)
	}
	if len(list) < 2 {
		t.Fatalf("Dockerfile:%d: %s needs a source and a destination", in.line, in.cmd)
	}
	return flags, list[:len(list)-1], list[len(list)-1]
}

func find(st stage, cmd string) []instruction {
	var out []instruction
	for _, in := range st.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func last(st stage, cmd string) (instruction, bool) {
	all := find(st, cmd)
	if len(all) == 0 {
		return instruction{}, false
	}
	return all[len(all)-1], true
}

func jsonList(t *testing.T, in instruction) []string {
	t.Helper()
	var list []string
	if err := json.Unmarshal([]byte(in.args), &list); err != nil {
		t.Errorf("Dockerfile:%d: %s should use the JSON (exec) form: %v", in.line, in.cmd, err)
	}
	return list
}

func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	stages := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	if len(stages) != 3 {
		t.Fatalf("want 3 stages (ui, build, runtime), have %d", len(stages))
	}
	ui, build, final := stages[0], stages[1], stages[2]
	if !strings.HasPrefix(ui.base, "node:20") || ui.name == "" {
		t.Errorf("stage 1: FROM %s AS %q, want node:20… AS <name>", ui.base, ui.name)
	}
	if !strings.HasPrefix(build.base, "golang:1.26") || !strings.Contains(build.base, "bookworm") || build.name == "" {
		t.Errorf("stage 2: FROM %s AS %q, want golang:1.26-bookworm AS <name>", build.base, build.name)
	}
	if final.base != "debian:bookworm-slim" {
		t.Errorf("final stage: FROM %s, want debian:bookworm-slim (the glibc the cgo binary was built for)", final.base)
	}
	uiRuns := strings.Join(runArgs(ui), "\n")
	if !strings.Contains(uiRuns, "npm ci") || !strings.Contains(uiRuns, "npm run build") {
		t.Errorf("ui stage must run npm ci and npm run build; runs:\n%s", uiRuns)
	}
	cgo := false
	for _, in := range find(build, "ENV") {
		cgo = cgo || slices.Contains(strings.Fields(in.args), "CGO_ENABLED=1")
	}
	if !cgo {
		t.Error("build stage: ENV CGO_ENABLED=1 missing (SQLite is cgo)")
	}
	if runs := strings.Join(runArgs(build), "\n"); !strings.Contains(runs, "go build") || !strings.Contains(runs, "./backend/cmd/volley") {
		t.Errorf("build stage must go build ./backend/cmd/volley; runs:\n%s", runs)
	}

	// Every COPY: a --from names an earlier stage; a source from the context exists in the repository
	// and is not excluded by .dockerignore (which would make the build fail or ship without it).
	rules := readDockerignore(t, root)
	names := map[string]bool{}
	for _, st := range stages {
		for _, in := range st.ins {
			if in.cmd != "COPY" && in.cmd != "ADD" {
				continue
			}
			flags, srcs, _ := copyArgs(t, in)
			if from, ok := flags["from"]; ok {
				if !names[from] {
					t.Errorf("Dockerfile:%d: COPY --from=%s: no earlier stage of that name", in.line, from)
				}
				continue
			}
			for _, src := range srcs {
				rel := path.Clean(strings.TrimPrefix(src, "/"))
				matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(rel)))
				if err != nil || len(matches) == 0 {
					t.Errorf("Dockerfile:%d: COPY source %q does not exist in the repository", in.line, src)
					continue
				}
				if rel != "." && ignored(rules, rel) {
					t.Errorf("Dockerfile:%d: COPY source %q is excluded by .dockerignore", in.line, src)
				}
			}
		}
		if st.name != "" {
			names[st.name] = true
		}
	}

	ep, ok := last(final, "ENTRYPOINT")
	if !ok || !slices.Equal(jsonList(t, ep), []string{"volley"}) {
		t.Errorf(`final stage: want ENTRYPOINT ["volley"], have %q`, ep.args)
	}
	cmd, ok := last(final, "CMD")
	if !ok {
		t.Fatal("final stage: no CMD")
	}
	args := jsonList(t, cmd)
	if len(args) == 0 || args[0] != "serve" {
		t.Errorf("final stage: CMD %v should start with serve", args)
	}
	for _, want := range [][2]string{{"--addr", "0.0.0.0:8080"}, {"--db", "/data/volley.db"},
		{"--admin-password-file", "/run/secrets/volley_admin_password"}} {
		i := slices.Index(args, want[0])
		if i < 0 || i+1 >= len(args) || args[i+1] != want[1] {
			t.Errorf("final stage: CMD %v should contain %s %s", args, want[0], want[1])
		}
	}
	if u, ok := last(final, "USER"); !ok || u.args == "root" || u.args == "0" || strings.HasPrefix(u.args, "0:") {
		t.Errorf("final stage: must run as a non-root USER, have %q", u.args)
	}
	if in, ok := last(final, "VOLUME"); !ok || !strings.Contains(in.args, "/data") {
		t.Error("final stage: VOLUME /data missing")
	}
	if in, ok := last(final, "EXPOSE"); !ok || !slices.Contains(strings.Fields(in.args), "8080") {
		t.Error("final stage: EXPOSE 8080 missing")
	}
	if in, ok := last(final, "HEALTHCHECK"); !ok || !strings.Contains(in.args, "/api/health") {
		t.Error("final stage: HEALTHCHECK on /api/health missing")
	}
}

func runArgs(st stage) []string {
	var out []string
	for _, in := range find(st, "RUN") {
		out = append(out, in.args)
	}
	return out
}

// TestDockerContextHasSources checks that .dockerignore keeps every file `go build ./backend/cmd/volley`
// reads (Go files and //go:embed files of this module), except the UI that the ui stage builds.
func TestDockerContextHasSources(t *testing.T) {
	root := repoRoot(t)
	rules := readDockerignore(t, root)
	for _, must := range []string{"frontend/node_modules", ".git", "bin", "frontend/dist"} {
		if !ignored(rules, must) {
			t.Errorf(".dockerignore should exclude %s", must)
		}
	}
	for _, keep := range []string{"go.mod", "go.sum", "frontend/package.json", "frontend/package-lock.json", "frontend/embed.go"} {
		if ignored(rules, keep) {
			t.Errorf(".dockerignore excludes %s, which the image build needs", keep)
		}
	}

	c := exec.Command("go", "list", "-e", "-deps", "-json=Dir,Module,GoFiles,CgoFiles,EmbedFiles", "./backend/cmd/volley")
	c.Dir = root
	c.Stderr = os.Stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for {
		var pkg struct {
			Dir                           string
			Module                        *struct{ Path string }
			GoFiles, CgoFiles, EmbedFiles []string
		}
		if err := dec.Decode(&pkg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if pkg.Module == nil || pkg.Module.Path != module {
			continue
		}
		for _, f := range slices.Concat(pkg.GoFiles, pkg.CgoFiles, pkg.EmbedFiles) {
			rel, err := filepath.Rel(root, filepath.Join(pkg.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			rel = filepath.ToSlash(rel)
			n++
			if strings.HasPrefix(rel, "frontend/dist/") {
				continue // built by the ui stage and copied in
			}
			if ignored(rules, rel) {
				t.Errorf(".dockerignore excludes %s, which go build ./backend/cmd/volley reads", rel)
			}
		}
	}
	if n == 0 {
		t.Fatal("go list found no files of this module")
	}
}

type ignoreRule struct {
	pattern string
	negate  bool
}

func readDockerignore(t *testing.T, root string) []ignoreRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var rules []ignoreRule
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, strings.TrimSpace(line[1:])
		}
		r.pattern = path.Clean(strings.TrimPrefix(line, "/"))
		rules = append(rules, r)
	}
	return rules
}

// ignored applies .dockerignore rules the way Docker does for the common cases: the last matching rule
// wins, a pattern also excludes everything below a matching directory, and a leading **/ matches at
// any depth. (Enough for this repository's file; not a full implementation of Go's filepath.Match
// extended by Docker.)
func ignored(rules []ignoreRule, rel string) bool {
	res := false
	for _, r := range rules {
		if matchSelfOrParent(r.pattern, rel) {
			res = !r.negate
		}
	}
	return res
}

func matchSelfOrParent(pattern, rel string) bool {
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if match(pattern, p) {
			return true
		}
	}
	return false
}

func match(pattern, name string) bool {
	if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
		parts := strings.Split(name, "/")
		for i := range parts {
			if ok, _ := path.Match(rest, strings.Join(parts[i:], "/")); ok {
				return true
			}
		}
		return false
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

func TestIgnoreMatcher(t *testing.T) {
	rules := []ignoreRule{{pattern: "**/node_modules"}, {pattern: "bin"}, {pattern: "*.db"}, {pattern: "docs"}, {pattern: "docs/keep.md", negate: true}}
	for rel, want := range map[string]bool{
		"frontend/node_modules/x/y.js": true, "node_modules": true, "bin/volley": true, "backend/bin.go": false,
		"volley.db": true, "data/volley.db": false, "docs/api.md": true, "docs/keep.md": false, "go.mod": false,
	} {
		if got := ignored(rules, rel); got != want {
			t.Errorf("ignored(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestTargetNginxConf runs `nginx -t` on the compose target's server block, wrapped in a minimal
// main config. It skips without nginx unless VOLLEY_E2E=1 (CI), where a missing nginx is a failure.
func TestTargetNginxConf(t *testing.T) {
	root := repoRoot(t)
	conf := filepath.Join(root, "deploy", "target", "nginx.conf")
	if _, err := os.Stat(conf); err != nil {
		t.Fatal(err)
	}
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx" // Debian's, when /usr/sbin is not on PATH
		if _, err := os.Stat(bin); err != nil {
			if os.Getenv("VOLLEY_E2E") == "1" {
				t.Fatal("nginx not installed (VOLLEY_E2E=1 requires it): apt-get install nginx")
			}
			t.Skip("nginx not installed")
		}
	}
	dir := t.TempDir()
	main := filepath.Join(dir, "nginx.conf")
	body := "daemon off;\npid " + filepath.Join(dir, "nginx.pid") + ";\nerror_log stderr;\n" +
		"events {}\nhttp {\n  include " + conf + ";\n}\n"
	if err := os.WriteFile(main, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-p", dir, "-c", main).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t rejects deploy/target/nginx.conf: %v\n%s", err, out)
	}
}
