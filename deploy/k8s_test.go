package deploy

import (
	"bytes"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// The Kubernetes manifests (deploy/k8s) are checked without a cluster and without downloading
// schemas: every object is decoded strictly (unknown or duplicate fields, wrong types) into its
// k8s.io/api Go type, the types the API server's own OpenAPI schema is generated from, and the
// references between objects that a schema cannot see are checked here: selectors and labels,
// named ports, the Secret key and file the agents read, volumes, the flags' ports and paths.

// kustomization is the part of kustomize's Kustomization the manifests use; strict decoding
// refuses anything else, so a field added there must be added (and checked) here.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
		IncludeTemplates bool              `json:"includeTemplates,omitempty"`
	} `json:"labels"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// k8sObjects are the decoded manifests, by kind.
type k8sObjects struct {
	namespaces      []corev1.Namespace
	statefulSets    []appsv1.StatefulSet
	deployments     []appsv1.Deployment
	services        []corev1.Service
	networkPolicies []networkingv1.NetworkPolicy
}

// loadK8s decodes deploy/k8s: the kustomization and every resource it lists, strictly.
func loadK8s(t *testing.T) (kustomization, k8sObjects) {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "deploy", "k8s")
	var k kustomization
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: %s %s", k.APIVersion, k.Kind)
	}
	// Every manifest in the folder is a resource of the kustomization, and the other way round.
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(k.Resources, base) {
			t.Errorf("%s is not listed in kustomization.yaml's resources", base)
		}
	}
	var objs k8sObjects
	for _, res := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, res))
		if err != nil {
			t.Errorf("kustomization.yaml resource: %v", err)
			continue
		}
		for i, doc := range splitYAML(b) {
			decodeObject(t, res+" #"+strconv.Itoa(i+1), doc, &objs)
		}
	}
	return k, objs
}

// splitYAML splits a multi-document YAML file on "---" lines, dropping empty documents.
func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(d, "")) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func decodeObject(t *testing.T, where string, doc []byte, objs *k8sObjects) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	var (
		into any
		meta *metav1.ObjectMeta
	)
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		objs.namespaces = append(objs.namespaces, corev1.Namespace{})
		o := &objs.namespaces[len(objs.namespaces)-1]
		into, meta = o, &o.ObjectMeta
	case "apps/v1 StatefulSet":
		objs.statefulSets = append(objs.statefulSets, appsv1.StatefulSet{})
		o := &objs.statefulSets[len(objs.statefulSets)-1]
		into, meta = o, &o.ObjectMeta
	case "apps/v1 Deployment":
		objs.deployments = append(objs.deployments, appsv1.Deployment{})
		o := &objs.deployments[len(objs.deployments)-1]
		into, meta = o, &o.ObjectMeta
	case "v1 Service":
		objs.services = append(objs.services, corev1.Service{})
		o := &objs.services[len(objs.services)-1]
		into, meta = o, &o.ObjectMeta
	case "networking.k8s.io/v1 NetworkPolicy":
		objs.networkPolicies = append(objs.networkPolicies, networkingv1.NetworkPolicy{})
		o := &objs.networkPolicies[len(objs.networkPolicies)-1]
		into, meta = o, &o.ObjectMeta
	default:
		t.Errorf("%s: %s %s is not a kind this test knows (add it, with its checks)", where, tm.APIVersion, tm.Kind)
		return
	}
	// Strict: an unknown field (a typo, a field of another version) or a wrong type fails.
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Errorf("%s (%s): %v", where, tm.Kind, err)
		return
	}
	for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
		t.Errorf("%s: name %q: %s", where, meta.Name, msg)
	}
	if meta.Namespace != "" {
		t.Errorf("%s: %s sets namespace %q; the kustomization sets it", where, meta.Name, meta.Namespace)
	}
	for _, msg := range metav1ValidateLabels(meta.Labels) {
		t.Errorf("%s: %s", where, msg)
	}
}

func metav1ValidateLabels(l map[string]string) []string {
	var out []string
	for k, v := range l {
		out = append(out, validation.IsQualifiedName(k)...)
		out = append(out, validation.IsValidLabelValue(v)...)
	}
	return out
}

// selects reports whether sel (a workload's or policy's selector) matches the labels l.
func selects(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("selector %+v: %v", sel, err)
		return false
	}
	return !s.Empty() && s.Matches(labels.Set(l))
}

// podChecks are the checks every pod template passes: non-root, read-only root, no privilege
// escalation or capabilities, no service account token, requests and limits, the kustomization's
// image, every mount a declared volume (or claim template), no host port. It returns the container.
func podChecks(t *testing.T, name string, spec corev1.PodSpec, image string, claims []corev1.PersistentVolumeClaim) corev1.Container {
	t.Helper()
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken should be false (it never calls the Kubernetes API)", name)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v, want runAsNonRoot, a non-zero runAsUser, seccomp RuntimeDefault", name, psc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.Image != image {
		t.Errorf("%s: image %q, want %q (the name kustomization.yaml's images sets)", name, c.Image, image)
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("%s: container securityContext %+v, want no privilege escalation, a read-only root, capabilities drop ALL", name, sc)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[res]
		lim, okLim := c.Resources.Limits[res]
		if !okReq || !okLim || req.Cmp(lim) > 0 || req.IsZero() {
			t.Errorf("%s: %s request %v limit %v, want both, 0 < request ≤ limit", name, res, req.String(), lim.String())
		}
	}
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			t.Errorf("%s: port %s uses hostPort %d", name, p.Name, p.HostPort)
		}
	}
	if spec.HostNetwork {
		t.Errorf("%s: hostNetwork", name)
	}
	vols := map[string]bool{}
	for _, v := range spec.Volumes {
		vols[v.Name] = true
	}
	for _, cl := range claims {
		vols[cl.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !vols[m.Name] {
			t.Errorf("%s: mount %s at %s: no such volume", name, m.Name, m.MountPath)
		}
	}
	if mountOf(c, "/tmp") == nil {
		t.Errorf("%s: no writable /tmp (the root file system is read-only)", name)
	}
	return c
}

// mountOf is the container's mount that holds file (the deepest), nil if none.
func mountOf(c corev1.Container, file string) *corev1.VolumeMount {
	var best *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if _, ok := under(file, m.MountPath); (ok || path.Clean(file) == path.Clean(m.MountPath)) &&
			(best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = &c.VolumeMounts[i]
		}
	}
	return best
}

// containerPort resolves a Service's or probe's target port (a number or a port name) in c.
func containerPort(c corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func listenPort(t *testing.T, who, flag, addr string) int32 {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n <= 0 || n > 65535 || host != "0.0.0.0" {
		t.Fatalf("%s: %s %q, want 0.0.0.0:PORT (reachable from other pods)", who, flag, addr)
	}
	return int32(n)
}

func TestKubernetesManifests(t *testing.T) {
	k, objs := loadK8s(t)
	if len(objs.namespaces) != 1 || objs.namespaces[0].Name != k.Namespace {
		t.Errorf("want one Namespace, the kustomization's %q; have %d", k.Namespace, len(objs.namespaces))
	} else if objs.namespaces[0].Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Error("namespace: pod-security.kubernetes.io/enforce should be restricted (the pods meet it)")
	}
	for _, l := range k.Labels {
		if l.IncludeSelectors {
			t.Error("kustomization labels with includeSelectors: a selector change cannot be applied to an existing workload")
		}
	}
	if len(k.Images) != 1 {
		t.Fatalf("kustomization images: want one entry (volley), have %+v", k.Images)
	}
	image := k.Images[0].Name
	if len(objs.statefulSets) != 1 || len(objs.deployments) != 1 {
		t.Fatalf("want one StatefulSet (controller) and one Deployment (agents); have %d and %d", len(objs.statefulSets), len(objs.deployments))
	}

	// The controller.
	ss := objs.statefulSets[0]
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 1 {
		t.Errorf("controller: replicas %v, want 1 (SQLite has one writer)", ss.Spec.Replicas)
	}
	if !selects(t, ss.Spec.Selector, ss.Spec.Template.Labels) {
		t.Errorf("controller: selector %+v does not match its pod labels %v", ss.Spec.Selector, ss.Spec.Template.Labels)
	}
	ctl := podChecks(t, "controller", ss.Spec.Template.Spec, image, ss.Spec.VolumeClaimTemplates)
	if len(ctl.Args) == 0 || ctl.Args[0] != "serve" {
		t.Fatalf("controller: args %q, want serve …", ctl.Args)
	}
	httpPort := listenPort(t, "controller", "--addr", flagValue(ctl.Args, "--addr"))
	agentsPort := listenPort(t, "controller", "--agents-listen", flagValue(ctl.Args, "--agents-listen"))
	claims := map[string]bool{}
	for _, cl := range ss.Spec.VolumeClaimTemplates {
		claims[cl.Name] = true
		if cl.Spec.Resources.Requests.Storage().IsZero() {
			t.Errorf("controller: claim %s requests no storage", cl.Name)
		}
	}
	// The database, the listener's identity and the token file live on the claim: a restarted or
	// rescheduled pod keeps its runs and its join token.
	for _, flag := range []string{"--db", "--agents-state", "--join-token-file"} {
		v := flagValue(ctl.Args, flag)
		if m := mountOf(ctl, v); v == "" || m == nil || !claims[m.Name] || m.ReadOnly {
			t.Errorf("controller: %s %q is not on the persistent volume claim", flag, v)
		}
	}
	if f := flagValue(ctl.Args, "--admin-password-file"); !secretFile(t, ss.Spec.Template.Spec, ctl, f, "volley-admin", "password") {
		t.Errorf("controller: --admin-password-file %q is not the volley-admin Secret's key password", f)
	}
	for _, probe := range []struct {
		name string
		p    *corev1.Probe
	}{{"startupProbe", ctl.StartupProbe}, {"readinessProbe", ctl.ReadinessProbe}, {"livenessProbe", ctl.LivenessProbe}} {
		if probe.p == nil || probe.p.HTTPGet == nil || probe.p.HTTPGet.Path != "/api/health" {
			t.Errorf("controller: %s should GET /api/health", probe.name)
			continue
		}
		if port, ok := containerPort(ctl, probe.p.HTTPGet.Port); !ok || port != httpPort {
			t.Errorf("controller: %s on port %v, want the --addr port %d", probe.name, probe.p.HTTPGet.Port.String(), httpPort)
		}
	}

	// The Service in front of the controller: selects it (not the agents), its ports reach --addr
	// and --agents-listen.
	var svc *corev1.Service
	for i := range objs.services {
		if selects(t, &metav1.LabelSelector{MatchLabels: objs.services[i].Spec.Selector}, ss.Spec.Template.Labels) {
			svc = &objs.services[i]
		}
	}
	if svc == nil {
		t.Fatal("no Service selects the controller's pods")
	}
	if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("service %s: type %s, want ClusterIP (nothing outside the cluster by default)", svc.Name, svc.Spec.Type)
	}
	if ss.Spec.ServiceName != svc.Name {
		t.Errorf("controller: serviceName %q, want the Service %q", ss.Spec.ServiceName, svc.Name)
	}
	svcPorts := map[int32]int32{} // container port → service port
	for _, p := range svc.Spec.Ports {
		cp, ok := containerPort(ctl, p.TargetPort)
		if !ok {
			t.Errorf("service %s: port %s targets %v, which the controller does not expose", svc.Name, p.Name, p.TargetPort.String())
		}
		svcPorts[cp] = p.Port
	}
	if _, ok := svcPorts[httpPort]; !ok {
		t.Errorf("service %s: no port to the controller's HTTP port %d", svc.Name, httpPort)
	}
	if _, ok := svcPorts[agentsPort]; !ok {
		t.Fatalf("service %s: no port to the agents listener %d", svc.Name, agentsPort)
	}

	// The agents.
	dep := objs.deployments[0]
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 3 {
		t.Errorf("agents: replicas %v, want 3", dep.Spec.Replicas)
	}
	if !selects(t, dep.Spec.Selector, dep.Spec.Template.Labels) {
		t.Errorf("agents: selector %+v does not match its pod labels %v", dep.Spec.Selector, dep.Spec.Template.Labels)
	}
	if selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, dep.Spec.Template.Labels) ||
		selects(t, ss.Spec.Selector, dep.Spec.Template.Labels) || selects(t, dep.Spec.Selector, ss.Spec.Template.Labels) {
		t.Error("the controller's and the agents' selectors overlap")
	}
	// A pod's name is <deployment>-<template hash, ≤ 10>-<5 characters>, and it is the agent's id
	// (its host name): it must stay a valid one (bus.ValidAgentID: ≤ 63 of a-z, 0-9, '-').
	if id := dep.Name + "-0123456789-abcde"; !regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`).MatchString(id) {
		t.Errorf("agents: pod names like %q are not valid agent ids", id)
	}
	ag := podChecks(t, "agents", dep.Spec.Template.Spec, image, nil)
	if len(ag.Args) == 0 || ag.Args[0] != "agent" || slices.Contains(ag.Args, "--id") || slices.Contains(ag.Args, "--token") {
		t.Errorf("agents: args %q, want agent … without --id (the pod name is the id) or --token (the process list)", ag.Args)
	}
	if got, want := flagValue(ag.Args, "--nats"), "nats://"+svc.Name+":"+strconv.Itoa(int(svcPorts[agentsPort])); got != want {
		t.Errorf("agents: --nats %q, want %q (the Service's port to --agents-listen)", got, want)
	}
	tokenFile := flagValue(ag.Args, "--token-file")
	secretName := "volley-join"
	if !secretFile(t, dep.Spec.Template.Spec, ag, tokenFile, secretName, "token") {
		t.Errorf("agents: --token-file %q is not the %s Secret's key token", tokenFile, secretName)
	}
	if w := flagValue(ag.Args, "--weight"); w == "" {
		t.Error("agents: --weight missing (an agent's default weight is its node's cores, not its pod's CPU limit)")
	}
	if ag.LivenessProbe != nil || ag.ReadinessProbe != nil {
		t.Error("agents: a probe on an agent, which serves no HTTP")
	}
	// The documented steps make exactly the Secrets and keys the pods read, from the controller's
	// token file.
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "scale-out.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"create secret generic volley-admin --from-literal=password=",
		"create secret generic " + secretName + " --from-literal=token=",
		"cat " + flagValue(ctl.Args, "--join-token-file"),
		"exec " + ss.Name + "-0 ",
	} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("docs/scale-out.md should show %q", want)
		}
	}

	// The network policy: the agents listener only from the agent pods.
	if len(objs.networkPolicies) != 1 {
		t.Fatalf("want one NetworkPolicy, have %d", len(objs.networkPolicies))
	}
	np := objs.networkPolicies[0]
	if !selects(t, &np.Spec.PodSelector, ss.Spec.Template.Labels) || selects(t, &np.Spec.PodSelector, dep.Spec.Template.Labels) {
		t.Errorf("network policy %s: podSelector should select the controller only", np.Name)
	}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			cp, ok := containerPort(ctl, *p.Port)
			if !ok {
				t.Errorf("network policy %s: port %v is not the controller's", np.Name, p.Port.String())
				continue
			}
			if cp != agentsPort {
				continue
			}
			if len(rule.From) == 0 {
				t.Errorf("network policy %s: the agents listener is open to every pod", np.Name)
			}
			for _, from := range rule.From {
				if from.PodSelector == nil || from.NamespaceSelector != nil || from.IPBlock != nil ||
					!selects(t, from.PodSelector, dep.Spec.Template.Labels) || selects(t, from.PodSelector, ss.Spec.Template.Labels) {
					t.Errorf("network policy %s: the agents listener admits %+v, want the agent pods only", np.Name, from)
				}
			}
		}
	}
}

// secretFile reports whether file, in container c of pod spec, is key of Secret secret (mounted
// read-only with that key at that file name).
func secretFile(t *testing.T, spec corev1.PodSpec, c corev1.Container, file, secret, key string) bool {
	t.Helper()
	m := mountOf(c, file)
	if file == "" || m == nil || !m.ReadOnly {
		return false
	}
	rel, _ := under(file, m.MountPath)
	for _, v := range spec.Volumes {
		if v.Name != m.Name || v.Secret == nil || v.Secret.SecretName != secret || (v.Secret.Optional != nil && *v.Secret.Optional) {
			continue
		}
		if len(v.Secret.Items) == 0 {
			return rel == key
		}
		for _, it := range v.Secret.Items {
			if it.Key == key && it.Path == rel {
				return true
			}
		}
	}
	return false
}
