package deploy

import (
	"net"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// flagValue is the value after flag in args ("" when absent or last).
func flagValue(args []string, flag string) string {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return ""
	}
	return args[i+1]
}

// TestComposeAgents checks the agent service of docker-compose.yml: the controller's image, scalable
// (`docker compose up --scale agent=N`: no container_name, no fixed host name or --id, no host port),
// dialling the controller's agents listener on the compose network with the token the controller
// writes to a volume both mount; the listener itself is not published on the host.
func TestComposeAgents(t *testing.T) {
	p, root := loadCompose(t)
	v, ok := p.Services["volley"]
	if !ok {
		t.Fatal("no volley service")
	}
	a, ok := p.Services["agent"]
	if !ok {
		t.Fatalf("no agent service; have %v", p.ServiceNames())
	}

	// The controller: the image's CMD (same flags, so the two cannot drift) plus the listener flags.
	stages := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	final := stages[len(stages)-1]
	cmd, ok := last(final, "CMD")
	if !ok {
		t.Fatal("Dockerfile: no CMD")
	}
	image := jsonList(t, cmd)
	vc := []string(v.Command)
	if len(vc) < len(image) || !slices.Equal(vc[:len(image)], image) {
		t.Errorf("volley: command %q should start with the Dockerfile's CMD %q", vc, image)
	}
	listen := flagValue(vc, "--agents-listen")
	host, port, err := net.SplitHostPort(listen)
	if err != nil || host != "0.0.0.0" || port == "0" {
		t.Fatalf("volley: --agents-listen %q, want 0.0.0.0:PORT (reachable from the other containers)", listen)
	}
	if st := flagValue(vc, "--agents-state"); !strings.HasPrefix(st, "/data/") {
		t.Errorf("volley: --agents-state %q, want a directory in the /data volume (the join token survives restarts)", st)
	}
	tokenFile := flagValue(vc, "--join-token-file")
	if tokenFile == "" {
		t.Fatal("volley: no --join-token-file (the agents read the token from it)")
	}
	for _, svc := range p.Services {
		for _, pp := range svc.Ports {
			if svc.Name == "volley" && strconv.Itoa(int(pp.Target)) == port {
				t.Errorf("volley: the agents listener (%s) is published on the host; it is for the compose network only", port)
			}
		}
	}

	// The agent service.
	if a.Image != v.Image || a.Build == nil || v.Build == nil || a.Build.Context != v.Build.Context || a.Build.Dockerfile != v.Build.Dockerfile {
		t.Errorf("agent: image %q build %+v, want the volley service's image %q and build (never pulled)", a.Image, a.Build, v.Image)
	}
	if a.ContainerName != "" || a.Hostname != "" {
		t.Errorf("agent: container_name %q, hostname %q: a fixed name breaks --scale (one name, one agent id)", a.ContainerName, a.Hostname)
	}
	if len(a.Ports) != 0 {
		t.Errorf("agent: ports %+v; an agent only dials out, and a fixed host port breaks --scale", a.Ports)
	}
	ac := []string(a.Command)
	if len(ac) == 0 || ac[0] != "agent" {
		t.Fatalf("agent: command %q, want agent …", ac)
	}
	if slices.Contains(ac, "--id") || slices.Contains(ac, "--token") {
		t.Errorf("agent: command %q: no --id (each replica's host name is its id) and no --token in the process list", ac)
	}
	if got, want := flagValue(ac, "--nats"), "nats://volley:"+port; got != want {
		t.Errorf("agent: --nats %q, want %q (the volley service's agents listener)", got, want)
	}
	agentToken := flagValue(ac, "--token-file")
	if agentToken == "" {
		t.Fatal("agent: no --token-file")
	}
	// One named volume carries the token: the controller writes tokenFile, the agent reads
	// agentToken, both the same file in it; read-only for the agent.
	shared := false
	for _, av := range a.Volumes {
		rel, ok := under(agentToken, av.Target)
		if !ok {
			continue
		}
		if av.Type != types.VolumeTypeVolume || !av.ReadOnly {
			t.Errorf("agent: %s is mounted as %s read-only=%v, want a named volume, read-only", av.Target, av.Type, av.ReadOnly)
		}
		for _, vv := range v.Volumes {
			if vrel, ok := under(tokenFile, vv.Target); ok && vv.Source == av.Source && vrel == rel {
				shared = true
				if vv.ReadOnly {
					t.Errorf("volley: %s is read-only; it writes the token there", vv.Target)
				}
				if vv.Target == "/data" {
					t.Error("the agents mount the controller's /data (its database and the listener's key)")
				}
			}
		}
	}
	if !shared {
		t.Errorf("volley writes the token to %s, the agent reads %s: no named volume carries one to the other", tokenFile, agentToken)
	}
	// A named volume takes the owner of the image's directory: the image must make the token's
	// directory for its non-root user, or the controller cannot write the token.
	dir := path.Dir(tokenFile)
	made := false
	for _, run := range runArgs(final) {
		made = made || (strings.Contains(run, "mkdir") && strings.Contains(run, dir) && strings.Contains(run, "chown"))
	}
	if !made {
		t.Errorf("Dockerfile: the runtime stage should mkdir and chown %s for the volley user", dir)
	}
	if dep, ok := a.DependsOn["volley"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Errorf("agent: depends_on volley %+v, want condition service_healthy (the token is written before the web server answers)", dep)
	}
	if a.HealthCheck == nil || !a.HealthCheck.Disable {
		t.Error("agent: the image's HEALTHCHECK (the web server on :8080) must be disabled for agents")
	}
}

// under reports whether file lies in dir, and its path relative to it.
func under(file, dir string) (string, bool) {
	rel, ok := strings.CutPrefix(path.Clean(file), strings.TrimSuffix(path.Clean(dir), "/")+"/")
	return rel, ok && rel != ""
}
