package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/cli"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

var (
	updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/cli")
	// goldenDir is absolute: the CLI tests change the working directory.
	goldenDir = func() string {
		wd, err := os.Getwd()
		if err != nil {
			panic(err)
		}
		return filepath.Join(wd, "testdata", "cli")
	}()
)

// adminCLI runs `admin` against a real gateway, as a user would.
type adminCLI struct {
	t   *testing.T
	env map[string]string
}

// operatorCLI bootstraps an operator token on e's database and returns the
// CLI that uses it. The CLI runs in a fresh working directory, which is
// also its HOME: relative paths in its output keep the golden files stable.
func operatorCLI(t *testing.T, e *e2e) *adminCLI {
	t.Helper()
	operator, err := adminauth.NewStore(e.m.Pool).Bootstrap(context.Background(), "e2e-operator")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	t.Chdir(work)
	return &adminCLI{t: t, env: map[string]string{
		"PORTCULLIS_SERVER": e.m.AdminURL(), "PORTCULLIS_TOKEN": operator, "PORTCULLIS_CA_FILE": e.m.CAFile, "HOME": work}}
}

// withToken is the same CLI with another admin token.
func (a *adminCLI) withToken(token string) *adminCLI {
	env := maps.Clone(a.env)
	env["PORTCULLIS_TOKEN"] = token
	return &adminCLI{t: a.t, env: env}
}

func (a *adminCLI) run(args ...string) (int, string, string) {
	a.t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), args, cli.Process{Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return a.env[k] }, Bootstrap: adminauth.Bootstrap})
	return code, out.String(), errOut.String()
}

// ok runs a command that must succeed and returns its output.
func (a *adminCLI) ok(args ...string) string {
	a.t.Helper()
	code, out, stderr := a.run(args...)
	if code != 0 {
		a.t.Fatalf("admin %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// fails runs a command that must fail with code and say want on stderr.
func (a *adminCLI) fails(code int, want string, args ...string) string {
	a.t.Helper()
	got, out, stderr := a.run(args...)
	if got != code || !strings.Contains(stderr, want) {
		a.t.Fatalf("admin %s: exit %d, stderr %q (stdout %q); want exit %d and %q", strings.Join(args, " "), got, stderr, out, code, want)
	}
	return stderr
}

var (
	cellSep  = regexp.MustCompile(`\s{3,}`)
	duration = regexp.MustCompile(`^(in |expired )?(\d+[smhdy])+( ago)?$`)
)

// golden compares output with testdata/cli/NAME. In tables, durations (AGE,
// LAST USED, EXPIRES) become <age> and the columns are aligned again, so
// the files do not depend on how long the test took.
func golden(t *testing.T, name, out string, table bool) {
	t.Helper()
	if table {
		var b bytes.Buffer
		tw := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			cells := cellSep.Split(line, -1)
			for i, c := range cells {
				if m := duration.FindStringSubmatch(c); m != nil {
					cells[i] = m[1] + "<age>" + m[3]
				}
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		tw.Flush()
		out = b.String()
	}
	path := filepath.Join(goldenDir, name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/gateway -run TestCLI -update)", err)
	}
	if out != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s--- want\n%s", name, out, want)
	}
}

// kubeconfigToken reads the bearer token of a kubeconfig written by the CLI.
func kubeconfigToken(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Users []struct {
			User struct {
				Token string `json:"token"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil || len(kc.Users) != 1 || kc.Users[0].User.Token == "" {
		t.Fatalf("kubeconfig %s: %v\n%s", path, err, b)
	}
	return kc.Users[0].User.Token
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const cliNamespaces = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: default, labels: {kubernetes.io/metadata.name: default}}
  status: {phase: Active}
- apiVersion: v1
  kind: Namespace
  metadata: {name: kube-system, labels: {kubernetes.io/metadata.name: kube-system}}
  status: {phase: Active}
- apiVersion: v1
  kind: Namespace
  metadata: {name: shop, labels: {kubernetes.io/metadata.name: shop, env: prod, team: checkout}}
  status: {phase: Active}
`

// TestCLINewcomerPath is issue #13's newcomer's path, driven through the
// admin CLI against a real gateway and PostgreSQL: create a tenant and a
// cluster, apply the baseline policies, test a good and a bad review, and
// check that the real webhook, called with the credential the CLI wrote,
// gives the same verdicts.
func TestCLINewcomerPath(t *testing.T) {
	samples, err := filepath.Abs(filepath.Join("..", "..", "samples", "baseline"))
	if err != nil {
		t.Fatal(err)
	}
	goodPodJSON, err := os.ReadFile(filepath.Join(samples, "pod.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The gateway's own decision recorder, so that decisions are stored.
	m := startMain(t, testConfig(t, pgtest.URL(t)))
	e := &e2e{t: t, m: m, client: webhookClient(t, m, nil)}
	a := operatorCLI(t, e)
	operator, work := a.env["PORTCULLIS_TOKEN"], a.env["HOME"]

	// login checks the token, then the file alone is enough.
	out := a.ok("login")
	if !strings.Contains(out, `"e2e-operator"`) || !strings.Contains(out, "operator") {
		t.Fatalf("login: %q", out)
	}
	cfgFile := filepath.Join(work, ".config", "portcullis", "config.yaml")
	if st, err := os.Stat(cfgFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", st, err)
	}
	a.env = map[string]string{"HOME": work}
	if out := a.ok("whoami"); !strings.Contains(out, "e2e-operator") {
		t.Fatalf("whoami from the config file: %q", out)
	}
	(&adminCLI{t: t, env: map[string]string{"HOME": work, "PORTCULLIS_TOKEN": "adm_wrong"}}).fails(1, "Unauthorized", "tenant", "list")
	(&adminCLI{t: t, env: map[string]string{"HOME": t.TempDir()}}).fails(2, "admin login --server URL --token T", "tenant", "list")
	a.fails(1, "checking the token", "login", "--server", e.m.AdminURL(), "--token", "adm_wrong", "--ca-file", e.m.CAFile)
	(&adminCLI{t: t, env: map[string]string{"HOME": t.TempDir()}}).fails(1, "pass the CA that signed it with --ca-file",
		"login", "--server", e.m.AdminURL(), "--token", operator)
	// The token from a file, not the command line.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(operator+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := (&adminCLI{t: t, env: map[string]string{"HOME": t.TempDir()}}).ok("login", "--server", e.m.AdminURL(),
		"--token-file", tokenFile, "--ca-file", e.m.CAFile); !strings.Contains(out, "e2e-operator") {
		t.Fatalf("login --token-file: %q", out)
	}

	// Tenant and cluster.
	golden(t, "tenant-create.txt", a.ok("tenant", "create", "acme", "--display-name", "Acme Corp"), false)
	a.fails(1, "already exists", "tenant", "create", "acme")
	a.ok("tenant", "create", "globex")
	golden(t, "tenant-list.txt", a.ok("tenant", "list"), true)
	var tenants struct{ Items []struct{ Name string } }
	if err := json.Unmarshal([]byte(a.ok("tenant", "list", "-o", "json")), &tenants); err != nil || len(tenants.Items) != 2 {
		t.Fatalf("tenant list -o json: %v %+v", err, tenants)
	}

	out = a.ok("cluster", "create", "prod-eu", "--tenant", "acme", "--auth", "token", "--labels", "env=prod,region=eu", "--out", "out/prod-eu")
	golden(t, "cluster-create.txt", out, false)
	for name, mode := range map[string]os.FileMode{"kubeconfig.yaml": 0o600, "admission-configuration.yaml": 0o644, "webhooks.yaml": 0o644} {
		st, err := os.Stat(filepath.Join("out", "prod-eu", name))
		if err != nil || st.Mode().Perm() != mode {
			t.Fatalf("%s: %v %v, want mode %v", name, st, err, mode)
		}
	}
	if b, _ := os.ReadFile(filepath.Join("out", "prod-eu", "webhooks.yaml")); !strings.Contains(string(b), "/t/acme/validate") ||
		!strings.Contains(string(b), "kind: MutatingWebhookConfiguration") || !strings.Contains(string(b), "/t/acme/mutate") {
		t.Fatalf("webhooks.yaml does not call the tenant's path:\n%s", b)
	}
	token := kubeconfigToken(t, filepath.Join("out", "prod-eu", "kubeconfig.yaml"))
	golden(t, "cluster-list.txt", a.ok("cluster", "list", "--tenant", "acme"), true)

	// Namespaces first, as the wiring paragraph says.
	writeFile(t, "namespaces.yaml", cliNamespaces)
	golden(t, "namespaces-import.txt", a.ok("namespaces", "import", "--tenant", "acme", "--cluster", "prod-eu", "-f", "namespaces.yaml"), false)
	golden(t, "get-namespaces.txt", a.ok("get", "namespaces", "--tenant", "acme", "--cluster", "prod-eu"), true)
	// As issue #13 writes it, without --cluster: the tenant's only cluster.
	golden(t, "get-namespaces.txt", a.ok("get", "--tenant", "acme", "namespaces"), true)

	// The baseline policies.
	// The two files, not the directory: samples/baseline also holds pod.json,
	// which apply would store as a param.
	policies, bindings := filepath.Join(samples, "policies.yaml"), filepath.Join(samples, "bindings.yaml")
	golden(t, "apply-baseline.txt", a.ok("apply", "--tenant", "acme", "-f", policies, "-f", bindings), false)
	golden(t, "apply-baseline-again.txt", a.ok("apply", "--tenant", "acme", "-f", policies, "-f", bindings), false)
	golden(t, "get-policies.txt", a.ok("get", "policies", "--tenant", "acme"), true)
	// Rewriting the cluster's artifacts issues no credential and leaves
	// Events and reviews out of the webhooks (issue 21, section 8).
	out = a.ok("cluster", "artifacts", "prod-eu", "--tenant", "acme", "--out", "out/prod-eu-again")
	if !strings.Contains(out, "webhooks.yaml") || !strings.Contains(out, "credential is unchanged") {
		t.Fatalf("cluster artifacts: %q", out)
	}
	if _, err := os.Stat(filepath.Join("out", "prod-eu-again", "kubeconfig.yaml")); err == nil {
		t.Fatal("cluster artifacts wrote a kubeconfig")
	}
	if b, _ := os.ReadFile(filepath.Join("out", "prod-eu-again", "webhooks.yaml")); !strings.Contains(string(b), "exclude-events") ||
		!strings.Contains(string(b), "exclude-reviews") || !strings.Contains(string(b), "/t/acme/validate") {
		t.Fatalf("rewritten webhooks.yaml:\n%s", b)
	}
	golden(t, "get-bindings.txt", a.ok("get", "bindings", "--tenant", "acme"), true)
	var policy map[string]any
	if err := json.Unmarshal([]byte(a.ok("get", "policies", "baseline-no-privileged", "--tenant", "acme", "-o", "json")), &policy); err != nil || policy["kind"] != "ValidatingAdmissionPolicy" {
		t.Fatalf("get policies NAME -o json: %v %v", err, policy)
	}
	if out := a.ok("get", "VAP", "baseline-no-privileged", "--tenant", "acme", "-o", "yaml"); !strings.Contains(out, "kind: ValidatingAdmissionPolicy\n") {
		t.Fatalf("get VAP NAME -o yaml:\n%s", out)
	}

	// A good and a bad review: allow and deny, from admin test and from the
	// real webhook with the credential the CLI wrote.
	hostNetwork := strings.Replace(string(goodPodJSON), `"serviceAccountName": "api",`, `"serviceAccountName": "api", "hostNetwork": true,`, 1)
	if hostNetwork == string(goodPodJSON) {
		t.Fatal("could not make the bad pod")
	}
	reviews := map[string]string{
		"good": podReview("admission.k8s.io/v1", "good-1", "shop", string(goodPodJSON), false),
		"bad":  podReview("admission.k8s.io/v1", "bad-1", "shop", hostNetwork, false),
	}
	want := map[string]bool{"good": true, "bad": false}
	e.waitAccepted(e.client, token)
	for _, name := range []string{"good", "bad"} {
		file := writeFile(t, name+"-review.json", reviews[name])
		golden(t, "test-"+name+".txt", a.ok("test", "--tenant", "acme", "--cluster", "prod-eu", "-f", file), false)
		var fromCLI struct {
			Response struct {
				UID     string
				Allowed bool
				Status  *struct {
					Code    int
					Message string
				}
			}
		}
		if err := json.Unmarshal([]byte(a.ok("test", "--tenant", "acme", "--cluster", "prod-eu", "-f", file, "-o", "json")), &fromCLI); err != nil {
			t.Fatalf("test -o json: %v", err)
		}
		code, body := e.post(e.client, "/t/acme/validate?timeout=10s", token, "application/json", reviews[name])
		if code != 200 {
			t.Fatalf("webhook: %d %s", code, body)
		}
		fromWebhook := verify(t, "admission.k8s.io/v1", name+"-1", body)
		if fromCLI.Response.Allowed != want[name] || fromWebhook.Allowed != want[name] {
			t.Fatalf("%s review: admin test allowed=%v, webhook allowed=%v, want %v", name, fromCLI.Response.Allowed, fromWebhook.Allowed, want[name])
		}
		if !want[name] && (fromCLI.Response.Status == nil || fromWebhook.Result == nil || fromCLI.Response.Status.Message != fromWebhook.Result.Message) {
			t.Fatalf("%s review: admin test and the webhook disagree on the message:\n%+v\n%+v", name, fromCLI.Response.Status, fromWebhook.Result)
		}
	}
	// The webhook's decisions, as the gateway stored them.
	var denied string
	defer func() {
		if t.Failed() {
			t.Logf("admin decisions printed:\n%s", denied)
		}
	}()
	testutil.Eventually(t, 5*time.Second, "the denial to be stored", func() bool {
		denied = a.ok("decisions", "--tenant", "acme", "--verdict", "denied", "--namespace", "shop", "--since", "1h")
		return strings.Contains(denied, "baseline-no-host-namespaces")
	})
	golden(t, "decisions-denied.txt", denied, true)
	var decisions struct {
		Items []struct {
			UID, Verdict, Cluster string
		}
	}
	if err := json.Unmarshal([]byte(a.ok("decisions", "--tenant", "acme", "--cluster", "prod-eu", "-o", "json")), &decisions); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, d := range decisions.Items {
		verdicts[d.UID] = d.Verdict
	}
	if verdicts["good-1"] != "allowed" || verdicts["bad-1"] != "denied" {
		t.Fatalf("decisions -o json: %+v", decisions.Items)
	}
	a.fails(1, `tenant "initech" not found`, "decisions", "--tenant", "initech")
	golden(t, "test-bad-explain.txt", a.ok("test", "--tenant", "acme", "--cluster", "prod-eu", "-f", "bad-review.json", "--explain"), false)
	// A bare object is reviewed as a CREATE.
	if out := a.ok("test", "--tenant", "acme", "--cluster", "prod-eu", "-f", filepath.Join(samples, "pod.json")); out != "validating webhook (no MutatingAdmissionPolicy matches): allowed\n" {
		t.Fatalf("test with a bare Pod: %q", out)
	}
}

const (
	cliPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: require-team}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods"]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: "the team label is required"
`
	cliBinding = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: require-team}
spec:
  policyName: require-team
  validationActions: [Deny]
`
)

// TestCLIPolicyLifecycle drives apply errors, history, diff, rollback,
// delete, credentials and tokens through the CLI against a real gateway.
func TestCLIPolicyLifecycle(t *testing.T) {
	a := operatorCLI(t, newE2E(t, pgtest.URL(t)))
	a.ok("tenant", "create", "acme")
	a.ok("cluster", "create", "prod", "--tenant", "acme", "--out", "prod")

	// Errors name the file, the document and the field; nothing is
	// written when one document of the invocation is bad.
	if err := os.Mkdir("policies", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, "policies/1-policy.yaml", cliPolicy)
	writeFile(t, "policies/2-binding.yaml", "# the binding\n---\n"+strings.Replace(cliBinding, "policyName: require-team\n", "", 1))
	stderr := a.fails(1, "policies/2-binding.yaml, document 2", "apply", "--tenant", "acme", "-f", "policies")
	if !strings.Contains(stderr, "spec.policyName") {
		t.Fatalf("the error does not name the field:\n%s", stderr)
	}
	if out := a.ok("get", "policies", "--tenant", "acme"); out != "No policies found.\n" {
		t.Fatalf("a refused apply wrote something:\n%s", out)
	}
	writeFile(t, "typo.yaml", strings.Replace(cliBinding, "kind: ValidatingAdmissionPolicyBinding", "kind: ValidatingAdmissionPolicyBindng", 1))
	a.fails(1, "typo.yaml, document 1", "apply", "--tenant", "acme", "-f", "typo.yaml")
	a.fails(2, "missing.yaml: no such file", "apply", "--tenant", "acme", "-f", "missing.yaml")
	// A key given twice is refused, not the last one silently kept.
	writeFile(t, "twice.yaml", "# the binding\n---\n"+cliBinding+"  validationActions: [Audit]\n")
	stderr = a.fails(1, "twice.yaml, document 2", "apply", "--tenant", "acme", "-f", "twice.yaml")
	if !strings.Contains(stderr, "validationActions") {
		t.Fatalf("the error does not name the key:\n%s", stderr)
	}

	// Dry run, then the real apply, from stdin too.
	writeFile(t, "policies/2-binding.yaml", cliBinding)
	golden(t, "apply-dry-run.txt", a.ok("apply", "--tenant", "acme", "-f", "policies", "--dry-run"), false)
	if out := a.ok("get", "policies", "--tenant", "acme"); out != "No policies found.\n" {
		t.Fatalf("a dry run wrote something:\n%s", out)
	}
	a.ok("apply", "--tenant", "acme", "-f", "policies")
	// A param no policy uses is stored, with a warning on stderr.
	writeFile(t, "param.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limits, namespace: policy}\ndata: {max: \"3\"}\n")
	code, out, stderr := a.run("apply", "--tenant", "acme", "-f", "param.yaml", "--dry-run")
	if code != 0 || out != "configmap/limits created (dry run)\n" || !strings.Contains(stderr, "Warning: configmap/limits: ") {
		t.Fatalf("apply of an unused param: %d %q %q", code, out, stderr)
	}
	a.ok("apply", "--tenant", "acme", "-f", "param.yaml")
	golden(t, "get-params.txt", a.ok("get", "params", "--tenant", "acme"), true)
	if out := a.ok("get", "configmap", "limits", "-n", "policy", "--tenant", "acme", "-o", "json"); !strings.Contains(out, `"max": "3"`) {
		t.Fatalf("get configmap limits -o json:\n%s", out)
	}
	// The same kind in another group: the core group's ConfigMap is
	// still reached, with -f and with --group "".
	writeFile(t, "param-other.yaml", "apiVersion: example.com/v1\nkind: ConfigMap\nmetadata: {name: limits, namespace: policy}\ndata: {max: \"5\"}\n")
	a.ok("apply", "--tenant", "acme", "-f", "param-other.yaml")
	a.fails(1, "say which", "get", "configmap", "limits", "-n", "policy", "--tenant", "acme")
	if out := a.ok("get", "configmap", "limits", "-n", "policy", "--group", "", "--tenant", "acme", "-o", "json"); !strings.Contains(out, `"max": "3"`) {
		t.Fatalf("get configmap limits --group '' -o json:\n%s", out)
	}
	if out := a.ok("delete", "--tenant", "acme", "-f", "param.yaml"); out != "configmap/limits deleted\n" {
		t.Fatalf("delete -f of the core group's ConfigMap:\n%s", out)
	}
	if out := a.ok("get", "configmap", "limits", "-n", "policy", "--group", "example.com", "--tenant", "acme", "-o", "json"); !strings.Contains(out, `"max": "5"`) {
		t.Fatalf("the other group's ConfigMap:\n%s", out)
	}
	a.ok("delete", "--tenant", "acme", "-f", "param-other.yaml")

	// A second version: first tried with test --with, then applied; then
	// history, diff and rollback.
	writeFile(t, "policy-v2.yaml", strings.Replace(cliPolicy, "the team label is required", "every pod needs a team label", 1))
	writeFile(t, "no-team.json", podReview("admission.k8s.io/v1", "no-team", "default", noTeamPod, false))
	if out := a.ok("test", "--tenant", "acme", "--cluster", "prod", "-f", "no-team.json"); !strings.HasPrefix(out, "validating webhook (no MutatingAdmissionPolicy matches): denied (422 Invalid)") || !strings.Contains(out, "the team label is required") {
		t.Fatalf("test:\n%s", out)
	}
	if out := a.ok("test", "--tenant", "acme", "--cluster", "prod", "-f", "no-team.json", "--with", "policy-v2.yaml"); !strings.Contains(out, "every pod needs a team label") {
		t.Fatalf("test --with the candidate policy:\n%s", out)
	}
	if out := a.ok("test", "--tenant", "acme", "--cluster", "prod", "-f", "no-team.json", "--with", "policy-v2.yaml", "--replace"); out != "validating webhook (no MutatingAdmissionPolicy matches): allowed\n" {
		t.Fatalf("test --with a policy without its binding, --replace:\n%s", out)
	}
	// A bad candidate is named by its file and document.
	writeFile(t, "bad-candidate.yaml", "# the policy\n---\n"+strings.Replace(cliPolicy, "'team' in object.metadata.labels", "'team' in", 1))
	stderr = a.fails(1, "bad-candidate.yaml, document 2, field spec.validations[0].expression",
		"test", "--tenant", "acme", "--cluster", "prod", "-f", "no-team.json", "--with", "bad-candidate.yaml")
	if strings.Contains(stderr, "objects[") {
		t.Fatalf("test --with a bad candidate:\n%s", stderr)
	}
	a.ok("apply", "--tenant", "acme", "-f", "policy-v2.yaml")
	golden(t, "history.txt", a.ok("history", "--tenant", "acme", "vap", "require-team"), true)
	if out := a.ok("diff", "--tenant", "acme", "vap", "require-team", "--from", "1"); !strings.Contains(out, "-    message: the team label is required") ||
		!strings.Contains(out, "+    message: every pod needs a team label") {
		t.Fatalf("diff:\n%s", out)
	}
	golden(t, "rollback.txt", a.ok("rollback", "--tenant", "acme", "ValidatingAdmissionPolicy", "require-team", "--to", "1"), false)
	if out := a.ok("get", "vap", "require-team", "--tenant", "acme", "-o", "yaml"); !strings.Contains(out, "the team label is required") {
		t.Fatalf("after the rollback:\n%s", out)
	}
	a.fails(1, "NotFound", "history", "--tenant", "acme", "vap", "no-such-policy")
	a.fails(1, "NotFound", "rollback", "--tenant", "acme", "vap", "require-team", "--to", "99")

	// A viewer may read but not write.
	out = a.ok("token", "create", "--name", "acme-viewer", "--role", "viewer", "--tenant", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	viewer := a.withToken(lines[len(lines)-1])
	viewer.ok("get", "bindings", "--tenant", "acme")
	viewer.fails(1, "Forbidden", "delete", "--tenant", "acme", "vapb", "require-team")
	viewer.fails(1, "NotFound", "get", "policies", "--tenant", "globex")

	// Delete by file and by name.
	golden(t, "delete-file.txt", a.ok("delete", "--tenant", "acme", "-f", "policies/2-binding.yaml"), false)
	golden(t, "delete-name.txt", a.ok("delete", "--tenant", "acme", "vap", "require-team"), false)
	a.fails(1, "policies/2-binding.yaml, document 1", "delete", "--tenant", "acme", "-f", "policies/2-binding.yaml")

	// The audit log saw it all.
	out = a.ok("audit", "--tenant", "acme")
	for _, want := range []string{"e2e-operator", "require-team"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit does not show %q:\n%s", want, out)
		}
	}

}

// TestCLICredentialsAndTokens drives credentials, admin tokens, the audit
// log and deletion through the CLI against a real gateway.
func TestCLICredentialsAndTokens(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	a := operatorCLI(t, e)
	a.ok("tenant", "create", "acme")
	a.ok("cluster", "create", "prod", "--tenant", "acme", "--out", "prod")
	a.fails(2, "--out is required", "cluster", "create", "prod", "--tenant", "acme")
	a.fails(1, "already exists", "cluster", "create", "prod", "--tenant", "acme", "--out", "again")
	a.fails(1, `tenant "globex" not found`, "cluster", "create", "prod", "--tenant", "globex", "--out", "again")
	// An --out that cannot be written is refused before the server creates
	// anything or issues a secret it shows once.
	writeFile(t, "a-file", "")
	a.fails(2, "--out a-file/staging", "cluster", "create", "staging", "--tenant", "acme", "--out", "a-file/staging")
	if out := a.ok("cluster", "list", "--tenant", "acme"); strings.Contains(out, "staging") {
		t.Fatalf("cluster create with a bad --out created the cluster:\n%s", out)
	}
	a.fails(2, "--out a-file/cred", "credential", "create", "--tenant", "acme", "--cluster", "prod", "--out", "a-file/cred")
	a.fails(2, "--out a-file/cred", "credential", "rotate", "1", "--tenant", "acme", "--cluster", "prod", "--out", "a-file/cred")
	if out := a.ok("credential", "list", "--tenant", "acme", "--cluster", "prod"); strings.Count(out, "\n") != 2 {
		t.Fatalf("credential create with a bad --out issued a credential:\n%s", out)
	}

	// Credentials: a second one for rotation without downtime, then the
	// first revoked; the webhook refuses it at once and takes the new one.
	first := kubeconfigToken(t, filepath.Join("prod", "kubeconfig.yaml"))
	out := a.ok("credential", "create", "--tenant", "acme", "--cluster", "prod", "--description", "rotation", "--out", "prod-2")
	second := kubeconfigToken(t, filepath.Join("prod-2", "kubeconfig.yaml"))
	if !strings.Contains(out, "credential 2 (token) issued") || !strings.Contains(out, "token: "+second) {
		t.Fatalf("credential create:\n%s", out)
	}
	golden(t, "credential-list.txt", a.ok("credential", "list", "--tenant", "acme", "--cluster", "prod"), true)
	golden(t, "credential-revoke.txt", a.ok("credential", "revoke", "1", "--tenant", "acme", "--cluster", "prod"), false)
	if out := a.ok("credential", "list", "--tenant", "acme", "--cluster", "prod", "--active"); strings.Contains(out, "revoked") || !strings.Contains(out, "rotation") {
		t.Fatalf("credential list --active:\n%s", out)
	}
	e.waitAccepted(e.client, second)
	var code int
	defer func() {
		if t.Failed() {
			t.Logf("the revoked credential's last answer: %d", code)
		}
	}()
	testutil.Eventually(t, 5*time.Second, "the revoked credential to be refused", func() bool {
		code, _ = e.post(e.client, "/t/acme/validate", first, "application/json", podReview("admission.k8s.io/v1", "r", "default", goodPod, false))
		return code == 401 || code == 403
	})

	// Certificates and basic auth put their secret in the kubeconfig too.
	out = a.ok("credential", "create", "--tenant", "acme", "--cluster", "prod", "--auth", "basic", "--expires", "720h")
	if !strings.Contains(out, "username: ") || !strings.Contains(out, "password: ") {
		t.Fatalf("basic credential:\n%s", out)
	}
	a.ok("credential", "create", "--tenant", "acme", "--cluster", "prod", "--auth", "cert", "--out", "prod-cert")
	if b, err := os.ReadFile(filepath.Join("prod-cert", "kubeconfig.yaml")); err != nil || !strings.Contains(string(b), "client-key-data") {
		t.Fatalf("certificate kubeconfig: %v\n%s", err, b)
	}
	var rotated struct{ Credential struct{ ID int64 } }
	if err := json.Unmarshal([]byte(a.ok("credential", "rotate", "2", "--tenant", "acme", "--cluster", "prod", "--grace", "0s", "-o", "json")), &rotated); err != nil || rotated.Credential.ID == 0 {
		t.Fatalf("rotate -o json: %v %+v", err, rotated)
	}
	a.fails(1, "NotFound", "credential", "revoke", "999", "--tenant", "acme", "--cluster", "prod")

	// Admin tokens: a tenant admin sees only its tenant.
	out = a.ok("token", "create", "--name", "acme-admin", "--role", "admin", "--tenant", "acme", "--expires", "24h")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	admin := a.withToken(lines[len(lines)-1])
	a.ok("tenant", "create", "globex")
	if out := admin.ok("tenant", "list"); !strings.Contains(out, "acme") || strings.Contains(out, "globex") {
		t.Fatalf("a tenant admin's tenant list:\n%s", out)
	}
	admin.fails(1, `tenant "globex" not found`, "cluster", "list", "--tenant", "globex")
	admin.fails(1, "Forbidden", "tenant", "create", "initech")
	golden(t, "token-list.txt", a.ok("token", "list"), true)
	// A tenant's token reads its audit log on the tenant's route.
	if out := admin.ok("audit", "--tenant", "acme"); !strings.Contains(out, "e2e-operator") {
		t.Fatalf("a tenant admin's audit --tenant:\n%s", out)
	}
	a.ok("token", "revoke", "2")
	admin.fails(1, "Unauthorized", "tenant", "list")

	// The audit log saw it all.
	out = a.ok("audit")
	for _, want := range []string{"e2e-operator", "acme-admin", "prod"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit does not show %q:\n%s", want, out)
		}
	}

	// get namespaces without --cluster: the only cluster, else say which.
	a.ok("get", "namespaces", "--tenant", "acme")
	a.ok("cluster", "create", "staging", "--tenant", "acme", "--out", "staging")
	a.fails(2, `tenant "acme" has 2 clusters (prod, staging): say which with --cluster`, "get", "namespaces", "--tenant", "acme")
	a.fails(2, `tenant "globex" has no cluster`, "get", "namespaces", "--tenant", "globex")

	golden(t, "cluster-delete.txt", a.ok("cluster", "delete", "prod", "--tenant", "acme"), false)
	golden(t, "tenant-delete.txt", a.ok("tenant", "delete", "acme"), false)
	a.fails(1, "NotFound", "cluster", "list", "--tenant", "acme")
	// An operator still reads a deleted tenant's audit log.
	if out := a.ok("audit", "--tenant", "acme"); !strings.Contains(out, "acme-admin") || strings.Contains(out, "globex") {
		t.Fatalf("audit --tenant of a deleted tenant:\n%s", out)
	}
}
