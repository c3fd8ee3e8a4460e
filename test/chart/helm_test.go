// Package chart tests the Helm chart in deploy/helm/portcullis with the
// helm binary pinned in tools/go.mod: it lints, renders with the defaults
// and with realistic overrides, refuses bad values, and every rendered
// object decodes strictly and passes Pod Security "restricted".
package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var (
	repoRoot = filepath.Join("..", "..")
	chartDir = filepath.Join(repoRoot, "deploy", "helm", "portcullis")
	helmBin  string
)

// TestMain builds helm from tools/go.mod when bin/helm is missing (the
// Makefile builds it first; a bare `go test` here works too).
func TestMain(m *testing.M) {
	abs, err := filepath.Abs(filepath.Join(repoRoot, "bin", "helm"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helmBin = abs
	if _, err := os.Stat(helmBin); err != nil {
		cmd := exec.Command("go", "-C", filepath.Join(repoRoot, "tools"), "build", "-o", helmBin, "helm.sh/helm/v3/cmd/helm")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building helm from tools/go.mod: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// kubeVersion is the cluster version the chart is rendered for (helm's
// own default is older than the chart's kubeVersion).
const kubeVersion = "1.34.0"

// helm runs the helm binary with a private home, so no user's
// repositories or plugins change the result.
func helm(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data", "KUBECONFIG="+home+"/none")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// setArgs turns "k=v" overrides into --set flags.
func setArgs(sets []string) []string {
	var args []string
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return args
}

func render(t *testing.T, sets ...string) []object {
	t.Helper()
	args := append([]string{"template", "rel", chartDir, "--namespace", "portcullis-system", "--kube-version", kubeVersion}, setArgs(sets)...)
	out, stderr, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", sets, err, stderr)
	}
	return decodeAll(t, out)
}

// realistic are the overrides of a production install: a public webhook
// behind a LoadBalancer, client certificates, cert-manager, monitoring
// (metrics over TLS with a token), a network policy, dashboards, a claim
// for the spill, an image digest, and the pool through PgBouncer.
var realistic = []string{
	"webhook.publicURL=https://portcullis.example.com",
	"service.webhook.type=LoadBalancer",
	"service.webhook.loadBalancerSourceRanges[0]=203.0.113.0/24",
	"service.webhook.annotations.service\\.beta\\.kubernetes\\.io/aws-load-balancer-type=nlb",
	"service.webhook.externalTrafficPolicy=Local",
	"clientCA.existingSecret=portcullis-client-ca",
	"certManager.enabled=true",
	"certManager.issuerRef.name=letsencrypt",
	"serviceMonitor.enabled=true",
	"prometheusRule.enabled=true",
	"networkPolicy.enabled=true",
	"grafanaDashboards.enabled=true",
	"decisions.spillVolume.type=persistentVolumeClaim",
	"decisions.spillVolume.accessModes[0]=ReadWriteMany",
	"image.digest=sha256:" + strings.Repeat("ab", 32),
	"imagePullSecrets[0].name=regcred",
	"env.OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4318",
	"podAnnotations.example\\.com/team=platform",
	"replicaCount=3",
	"resources.limits.memory=2Gi",
	"database.transactionPooling=true",
	"database.directUrlKey=direct-url",
	"metrics.tls=true",
	"metrics.tokenSecret=portcullis-metrics-token",
}

func TestLintStrict(t *testing.T) {
	for name, sets := range map[string][]string{"defaults": nil, "realistic": realistic} {
		args := append([]string{"lint", "--strict", "--kube-version", kubeVersion, chartDir}, setArgs(sets)...)
		if out, stderr, err := helm(t, args...); err != nil {
			t.Errorf("helm lint --strict with %s: %v\n%s%s", name, err, out, stderr)
		}
	}
}

// Bad values are refused by values.schema.json (or the templates' own
// checks), with a message that names the value.
func TestBadValuesAreRefused(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"replicaCount=two", "replicaCount"},
		{"service.webhook.type=Loadbalancer", "type"},
		{"service.type=LoadBalancer", "service"},
		{"image.pullPolicy=Sometimes", "pullPolicy"},
		{"image.digest=latest", "digest"},
		{"webhook.publicURL=http://insecure.example.com", "publicURL"},
		{"gateway.shutdownTimeout=soon", "shutdownTimeout"},
		{"gateway.terminationGracePeriodSeconds=20", "terminationGracePeriodSeconds"},
		{"decisions.spillVolume.type=hostPath", "type"},
		{"replicaCout=2", "replicaCout"},
		{"certManager.enabled=true", "certManager.issuerRef.name"},
		{"database.transactionPooling=true", "database.directUrlKey"},
		{"metrics.tls=yes", "tls"},
		{"metrics.tokenKey=", "tokenKey"},
		{"metrics.tokenFile=/t", "tokenFile"},
		{"gateway.tenants={noisy},gateway.excludeTenants={other}", "gateway.excludeTenants"},
		{"gateway.tenants={Not_A_Tenant}", "tenants"},
	} {
		_, stderr, err := helm(t, "template", "rel", chartDir, "--kube-version", kubeVersion, "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s rendered", tc.set)
			continue
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("--set %s: the error does not name %q:\n%s", tc.set, tc.want, stderr)
		}
	}
}
