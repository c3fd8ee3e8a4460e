package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

const (
	tenant    = "e2e"
	namespace = "shop"
)

// TestRealAPIServer onboards one cluster per kind of credential that
// `admin cluster create --auth` offers, each a real kube-apiserver that knows
// the gateway only through the files the CLI wrote, and checks that a Pod
// created through it carries the mutations of samples/mutating, that a Pod
// breaking samples/baseline is denied with the policy's message, and that
// the gateway recorded both decisions; then the other requests a cluster
// sends, a re-call of the mutating webhook, a credential rotation, and
// what the apiserver still admits while the gateway is down.
func TestRealAPIServer(t *testing.T) {
	apiserverBin := kubeAPIServer(t)
	gatewayBin, adminBin := buildPortcullis(t)
	g := startGateway(t, gatewayBin, adminBin)
	etcd := startEtcd(t)

	samples := filepath.Join(repoRoot, "samples")
	g.run(t, "tenant", "create", tenant)
	g.run(t, "apply", "--tenant", tenant,
		"-f", filepath.Join(samples, "baseline", "policies.yaml"), "-f", filepath.Join(samples, "baseline", "bindings.yaml"))
	g.run(t, "apply", "--tenant", tenant, "-f", filepath.Join(samples, "mutating"))

	for _, auth := range []string{"token", "cert", "basic"} {
		t.Run(auth, func(t *testing.T) {
			onboard(t, g, apiserverBin, etcd, "e2e-"+auth, auth)
		})
	}
	t.Run("outage", func(t *testing.T) { checkOutage(t, g, apiserverBin, etcd) })
}

// onboard wires a cluster in and checks what it then does.
func onboard(t *testing.T, g *gateway, apiserverBin, etcd, cluster, auth string) {
	api, cs := wire(t, g, apiserverBin, etcd, cluster, auth)
	ctx := context.Background()
	allowed, denied := samplePods(t)
	pods := cs.CoreV1().Pods(namespace)
	since := time.Now().UTC()

	// (1) The Pod is created, with every sample mutation applied.
	created, err := pods.Create(ctx, allowed, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", allowed.Name, err)
	}
	stored, err := pods.Get(ctx, allowed.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkMutations(t, "the create answer", allowed, created)
	checkMutations(t, "the stored Pod", allowed, stored)

	// (2) A Pod from an unapproved registry is denied with the message of
	// baseline-image-registry-allowlist, worded as the in-process
	// ValidatingAdmissionPolicy plugin words it, inside the apiserver's
	// webhook denial.
	_, err = pods.Create(ctx, denied, metav1.CreateOptions{})
	wantDenial := `admission webhook "validate.portcullis.dev" denied the request: pods "api-unapproved" is forbidden: ` +
		`ValidatingAdmissionPolicy 'baseline-image-registry-allowlist' with binding 'baseline-image-registry-allowlist' ` +
		`denied request: images from unapproved registries: docker.io/library/nginx:1.27`
	if err == nil || err.Error() != wantDenial || !apierrors.IsForbidden(err) {
		t.Fatalf("create %s: got %v, want a 403 saying %q", denied.Name, err, wantDenial)
	}
	if _, err := pods.Get(ctx, denied.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the denied Pod was stored: get says %v", err)
	}

	// (3) The gateway recorded both, as this cluster and for this user.
	checkDecisions(t, g, cluster, since, allowed.Name, denied.Name)

	checkBeyondCreate(t, g, cs, cluster, allowed, denied)
	checkReinvocation(t, g, cs, cluster, allowed)
	checkRotation(t, g, api, apiserverBin, etcd, cluster)
}

// wire follows the wiring paragraph `admin cluster create` prints, with a
// fresh kube-apiserver as the cluster, and waits until the apiserver calls
// the gateway. The cluster has a namespace "shop" with the service account
// of the sample Pods (the ServiceAccount admission plugin refuses a Pod
// whose account is missing; no controller manager creates one here).
func wire(t *testing.T, g *gateway, apiserverBin, etcd, cluster, auth string) (*apiServer, kubernetes.Interface) {
	t.Helper()
	out := t.TempDir()
	g.run(t, "cluster", "create", cluster, "--tenant", tenant, "--auth", auth, "--out", out)
	api := startAPIServer(t, apiserverBin, etcd, cluster, installAdmissionConfiguration(t, out))
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(api.config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(api.config)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: namespace, Labels: map[string]string{"team": "checkout"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: "api"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The cluster has custom resources: the sample CRDs.
	applyFile(t, api.config, filepath.Join(repoRoot, "samples", "crds", "crds.yaml"))

	// The inventory first, as the wiring paragraph says.
	importInventory(t, g, dyn, cluster, "namespaces", schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	importInventory(t, g, dyn, cluster, "crds",
		schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})

	// `kubectl apply -f webhooks.yaml`
	applyFile(t, api.config, filepath.Join(out, "webhooks.yaml"))

	allowed, denied := samplePods(t)
	pods := cs.CoreV1().Pods(namespace)
	// The apiserver picks up webhook configurations through an informer:
	// until the denial comes back, the webhooks are not called yet. The
	// probes are dry runs, which the webhooks (sideEffects None) answer.
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	eventually(t, time.Minute, "the apiserver to call both webhooks", func() bool {
		if _, err := pods.Create(ctx, denied, dryRun); err == nil || !strings.Contains(err.Error(), "denied the request") {
			return false
		}
		p, err := pods.Create(ctx, allowed, dryRun)
		return err == nil && p.Labels["example.com/team"] == namespace
	})
	return api, cs
}

// importInventory runs `kubectl get RESOURCE -o json | admin NOUN import
// --tenant T --cluster C -f -`: the objects as kubectl prints them, a v1
// List whose items carry their apiVersion and kind.
func importInventory(t *testing.T, g *gateway, dyn dynamic.Interface, cluster, noun string, gvr schema.GroupVersionResource) {
	t.Helper()
	list, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]map[string]any, len(list.Items))
	for i, it := range list.Items {
		items[i] = it.Object
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items})
	if err != nil {
		t.Fatal(err)
	}
	out := g.runInput(t, b, noun, "import", "--tenant", tenant, "--cluster", cluster, "-f", "-")
	if want := fmt.Sprintf("%d ", len(items)); len(items) == 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, " imported ") {
		t.Fatalf("admin %s import: %q, want %d imported (and at least one)", noun, out, len(items))
	}
}

// installAdmissionConfiguration puts the kubeconfig where the
// AdmissionConfiguration expects it. The wiring paragraph says to copy it
// to /etc/kubernetes/portcullis/; a test may not write there, so the
// configuration's kubeConfigFile is pointed at the --out directory
// instead, and nothing else is changed. It returns the configuration's
// path.
func installAdmissionConfiguration(t *testing.T, out string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "admission-configuration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(out, "kubeconfig.yaml")
	var cfg map[string]any
	if err := yamlUnmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	plugins, _ := cfg["plugins"].([]any)
	var names []string
	for _, p := range plugins {
		p, _ := p.(map[string]any)
		c, _ := p["configuration"].(map[string]any)
		if _, ok := c["kubeConfigFile"].(string); !ok {
			t.Fatalf("admission-configuration.yaml: plugin %v has no kubeConfigFile:\n%s", p["name"], b)
		}
		c["kubeConfigFile"] = kubeconfig
		names = append(names, fmt.Sprint(p["name"]))
	}
	slices.Sort(names)
	if want := []string{"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"}; !slices.Equal(names, want) {
		t.Fatalf("admission-configuration.yaml configures %v, want %v", names, want)
	}
	installed, err := yamlMarshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "admission-configuration.yaml")
	writeFile(t, path, installed)
	return path
}

// decision is what the test reads of `admin decisions -o json`.
type decision struct {
	Cluster   string   `json:"cluster"`
	Endpoint  string   `json:"endpoint"`
	Operation string   `json:"operation"`
	Name      string   `json:"name"`
	UserName  string   `json:"userName"`
	DryRun    bool     `json:"dryRun"`
	Verdict   string   `json:"verdict"`
	Message   string   `json:"message"`
	Mutated   bool     `json:"mutated"`
	MutatedBy []string `json:"mutatedBy"`
}

func checkDecisions(t *testing.T, g *gateway, cluster string, since time.Time, allowed, denied string) {
	t.Helper()
	type key struct{ name, endpoint string }
	var got map[key]decision
	var raw string
	n := 0
	// The gateway stores decisions in batches, within a fraction of a second.
	eventually(t, 30*time.Second, "the four decisions to be stored", func() bool {
		raw = g.run(t, "decisions", "--tenant", tenant, "--cluster", cluster, "--namespace", namespace,
			"--since", since.Add(-time.Second).Format(time.RFC3339), "--limit", "500", "-o", "json")
		var list struct{ Items []decision }
		if err := json.Unmarshal([]byte(raw), &list); err != nil {
			t.Fatalf("admin decisions -o json: %v\n%s", err, raw)
		}
		got, n = map[key]decision{}, 0
		for _, d := range list.Items {
			if !d.DryRun && d.Operation == "CREATE" {
				got[key{d.Name, d.Endpoint}] = d
				n++
			}
		}
		return len(got) == 4
	})
	// One call per webhook and Pod: nothing after the gateway's mutating
	// webhook changes a Pod, so the apiserver does not call it again.
	if n != 4 {
		t.Errorf("%d decisions, want 4, one per webhook and Pod:\n%s", n, raw)
	}
	t.Logf("decisions:\n%s", g.run(t, "decisions", "--tenant", tenant, "--cluster", cluster, "--since", since.Add(-time.Second).Format(time.RFC3339)))
	for k, d := range got {
		if d.Cluster != cluster || d.UserName != adminUser {
			t.Errorf("decision %v: cluster %q, user %q; want %q, %q", k, d.Cluster, d.UserName, cluster, adminUser)
		}
	}
	if d := got[key{allowed, "mutate"}]; d.Verdict != "allowed" || !d.Mutated || !slices.Equal(sorted(d.MutatedBy), wantMutatedBy) {
		t.Errorf("mutate decision of %s: %+v; want allowed, mutated by %v\n%s", allowed, d, wantMutatedBy, raw)
	}
	if d := got[key{allowed, "validate"}]; d.Verdict != "allowed" {
		t.Errorf("validate decision of %s: %+v; want allowed\n%s", allowed, d, raw)
	}
	if d := got[key{denied, "validate"}]; d.Verdict != "denied" || !strings.Contains(d.Message, "images from unapproved registries") {
		t.Errorf("validate decision of %s: %+v; want denied by the registry allowlist\n%s", denied, d, raw)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
