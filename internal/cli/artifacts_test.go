package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func TestWiringParagraph(t *testing.T) {
	a := apiv1.Artifacts{AdmissionConfiguration: "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: /etc/kubernetes/portcullis/kubeconfig.yaml\n"}
	p := wrap(wiring("acme", "prod-eu", "out", a), 78)
	if strings.Contains(p, "\n\n") {
		t.Fatalf("more than one paragraph:\n%s", p)
	}
	for _, line := range strings.Split(p, "\n") {
		if len(line) > 78 && !strings.Contains(line, "`") {
			t.Errorf("line longer than 78 columns: %q", line)
		}
	}
	flat := strings.Join(strings.Fields(p), " ")
	imp := strings.Index(flat, "admin namespaces import --tenant acme --cluster prod-eu -f -")
	cfg := strings.Index(flat, "--admission-control-config-file")
	hook := strings.Index(flat, "kubectl apply -f out/webhooks.yaml")
	if imp < 0 || cfg < 0 || hook < 0 || !(imp < cfg && cfg < hook) {
		t.Fatalf("want namespaces import, then the apiserver flag, then the webhooks (%d %d %d):\n%s", imp, cfg, hook, p)
	}
	// A cluster without CRDs has none to import (an empty List is refused).
	if !strings.Contains(flat, "if it has any, its custom resource definitions with `kubectl get crd -o yaml | admin crds import") {
		t.Fatalf("the paragraph does not make the CRD import conditional:\n%s", p)
	}
	if !strings.Contains(flat, "copy out/kubeconfig.yaml to /etc/kubernetes/portcullis/kubeconfig.yaml") {
		t.Fatalf("the paragraph does not say where the kubeconfig goes:\n%s", p)
	}
}

// The --out directory is checked before the server issues a secret it
// shows once; a server that cannot be reached shows it was never called.
func TestOutCheckedBeforeTheServer(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kubeconfigDir := filepath.Join(home, "out")
	if err := os.MkdirAll(filepath.Join(kubeconfigDir, "kubeconfig.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--server", "https://127.0.0.1:1", "--token", "t"}
	for _, bad := range []string{filepath.Join(file, "out"), kubeconfigDir} {
		for _, args := range [][]string{
			{"cluster", "create", "c", "--tenant", "t", "--out", bad},
			{"credential", "create", "--tenant", "t", "--cluster", "c", "--out", bad},
			{"credential", "rotate", "1", "--tenant", "t", "--cluster", "c", "--out", bad},
		} {
			code, _, stderr := runCLI(t, map[string]string{"HOME": home}, "", append(args, conn...)...)
			if code != exitUsage || !strings.Contains(stderr, "--out "+bad) {
				t.Errorf("%s: code %d %q, want a usage error about --out", strings.Join(args, " "), code, stderr)
			}
		}
	}
	// A directory that is missing is created, and a writable one passes.
	ok := filepath.Join(home, "new", "dir")
	if err := prepareOut(ok); err != nil {
		t.Fatal(err)
	}
	if err := prepareOut(ok); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(ok); len(entries) != 0 {
		t.Fatalf("prepareOut left files: %v", entries)
	}
}

// If the files cannot be written after all, the server's answer, with
// the secret, is printed rather than lost.
func TestSecretPrintedWhenWritingFails(t *testing.T) {
	var out bytes.Buffer
	e := &env{stdout: &out}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"credential":{"id":7},"token":"s3cret","artifacts":{"kubeconfig":"token: s3cret"}}`)
	if _, err := e.saveArtifacts(filepath.Join(file, "out"), apiv1.Artifacts{Kubeconfig: "token: s3cret"}, raw); err == nil {
		t.Fatal("writing under a file succeeded")
	}
	if !strings.Contains(out.String(), `"token": "s3cret"`) {
		t.Fatalf("the secret is not on stdout: %q", out.String())
	}
}

// A url credential's paragraph says that no file goes on the control plane,
// and why the webhooks file must stay private.
func TestURLWiringParagraph(t *testing.T) {
	a := apiv1.Artifacts{Webhooks: "kind: ValidatingWebhookConfiguration\n", WebhooksHoldSecret: true}
	p := wrap(wiringFor("acme", "eks", "out", a), 78)
	flat := strings.Join(strings.Fields(p), " ")
	for _, want := range []string{
		"admin namespaces import --tenant acme --cluster eks -f -",
		"kubectl apply -f out/webhooks.yaml",
		"needs no AdmissionConfiguration and no kubeconfig",
		"anyone who can read the cluster's webhook configurations can read the secret",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the paragraph does not say %q:\n%s", want, p)
		}
	}
	if strings.Contains(flat, "--admission-control-config-file") || strings.Contains(flat, "kubeconfig.yaml") {
		t.Errorf("a url credential's paragraph asks for files on the control plane:\n%s", p)
	}
}

// webhooks.yaml that carries a URL secret is written as privately as a
// kubeconfig.
func TestWebhooksWithASecretArePrivate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret bool
		mode   os.FileMode
	}{
		{"no secret", false, 0o644},
		{"URL secret", true, 0o600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := writeArtifacts(dir, apiv1.Artifacts{Webhooks: "x", WebhooksHoldSecret: tc.secret}); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(filepath.Join(dir, "webhooks.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != tc.mode {
				t.Fatalf("webhooks.yaml mode %v, want %v", st.Mode().Perm(), tc.mode)
			}
		})
	}
}
