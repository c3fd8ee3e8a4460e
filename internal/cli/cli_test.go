package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// runCLI runs the CLI with only the given environment and stdin.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := &env_{ctx: context.Background(), stdout: &out, stderr: &errOut, stdin: strings.NewReader(stdin),
		getenv: func(k string) string { return env[k] }, now: time.Now}
	code := e.run(args)
	return code, out.String(), errOut.String()
}

type env_ = env

func TestCommandLineErrors(t *testing.T) {
	home := t.TempDir() // no config file in it
	conn := []string{"--server", "https://127.0.0.1:1", "--token", "t"}
	with := func(args ...string) []string { return append(args, conn...) }
	pod, comments := filepath.Join(home, "pod.yaml"), filepath.Join(home, "empty.yaml")
	if err := os.WriteFile(pod, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(comments, []byte("# nothing here yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badGV := filepath.Join(home, "bad-gv.yaml")
	if err := os.WriteFile(badGV, []byte("apiVersion: a/b/c\nkind: Pod\nmetadata: {name: p}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"group without verb", []string{"tenant"}, 2, "tenant needs a subcommand: create, delete, list"},
		{"unknown verb", []string{"tenant", "remove", "x"}, 2, `unknown subcommand "remove" of tenant`},
		{"no server", []string{"tenant", "list"}, 2, "no server to talk to: run `admin login --server URL --token T"},
		{"no token", []string{"tenant", "list", "--server", "https://x"}, 2, "no token for https://x"},
		{"bad server URL", []string{"tenant", "list", "--server", "localhost:9443", "--token", "t"}, 2, `server "localhost:9443": want a URL`},
		{"missing CA file", with("tenant", "list", "--ca-file", "/nonexistent/ca.crt"), 2, "CA file: open /nonexistent/ca.crt"},
		{"bad output", with("tenant", "list", "-o", "xml"), 2, `-o "xml": use json or yaml`},
		{"tenant create without name", with("tenant", "create"), 2, "missing NAME (usage: admin tenant create NAME"},
		{"tenant create two names", with("tenant", "create", "a", "b"), 2, `unexpected argument "b"`},
		{"cluster create without tenant", with("cluster", "create", "c", "--out", "d"), 2, "--tenant is required"},
		{"cluster create without out", with("cluster", "create", "c", "--tenant", "t"), 2, "--out is required"},
		{"cluster create bad auth", with("cluster", "create", "c", "--tenant", "t", "--out", "d", "--auth", "oidc"), 2, `--auth "oidc": use token, cert or basic`},
		{"cluster create bad labels", with("cluster", "create", "c", "--tenant", "t", "--out", "d", "--labels", "env"), 2, `--labels "env": want k=v,k=v`},
		{"credential list without cluster", with("credential", "list", "--tenant", "t"), 2, "--cluster is required"},
		{"credential create bad expiry", with("credential", "create", "--tenant", "t", "--cluster", "c", "--expires", "a month"), 2, `--expires "a month"`},
		{"credential revoke bad ID", with("credential", "revoke", "abc", "--tenant", "t", "--cluster", "c"), 2, `ID "abc": want the number`},
		{"namespaces import without file", with("namespaces", "import", "--tenant", "t", "--cluster", "c"), 2, "--f is required"},
		{"namespaces import missing file", with("namespaces", "import", "--tenant", "t", "--cluster", "c", "-f", "/nonexistent.yaml"), 2, "open /nonexistent.yaml"},
		{"apply without file", with("apply", "--tenant", "t"), 2, "-f is required"},
		{"apply stray argument", with("apply", "--tenant", "t", "-f", "x.yaml", "y.yaml"), 2, `unexpected argument "y.yaml"`},
		{"get without what", with("get", "--tenant", "t"), 2, "missing what to get"},
		{"delete both ways", with("delete", "--tenant", "t", "-f", "x.yaml", "vap", "x"), 2, "not both"},
		{"delete kind only", with("delete", "--tenant", "t", "vap"), 2, "give -f FILE or KIND NAME"},
		{"history without name", with("history", "--tenant", "t", "vap"), 2, "missing KIND NAME"},
		{"rollback without version", with("rollback", "--tenant", "t", "vap", "x"), 2, "--to is required"},
		{"rollback bad version", with("rollback", "--tenant", "t", "vap", "x", "--to", "v3"), 2, `--to "v3": want a version number`},
		{"test without file", with("test", "--tenant", "t", "--cluster", "c"), 2, "--f is required"},
		{"test replace without with", with("test", "--tenant", "t", "--cluster", "c", "-f", "x", "--replace"), 2, "--replace needs --with"},
		{"test stdin twice", with("test", "--tenant", "t", "--cluster", "c", "-f", "-", "--with", "-"), 2, "cannot both read standard input"},
		{"test bad apiVersion", with("test", "--tenant", "t", "--cluster", "c", "-f", badGV), 1, badGV + ", document 1, field apiVersion: unexpected GroupVersion string: a/b/c"},
		{"test with nothing", with("test", "--tenant", "t", "--cluster", "c", "-f", pod, "--with", comments), 1, "--with " + comments + ": no objects found"},
		{"decisions bad since", with("decisions", "--tenant", "t", "--since", "yesterday"), 2, `--since "yesterday"`},
		{"decisions bad verdict", with("decisions", "--tenant", "t", "--verdict", "deny"), 2, `--verdict "deny"`},
		{"decisions bad limit", with("decisions", "--tenant", "t", "--limit", "0"), 2, "--limit 0"},
		{"decisions limit too large", with("decisions", "--tenant", "t", "--limit", "501"), 2, "--limit 501: want 1 to 500"},
		{"token create bad role", with("token", "create", "--name", "n", "--role", "root"), 2, `--role "root"`},
		{"unknown flag", with("tenant", "list", "--tenat", "x"), 2, "flag provided but not defined: -tenat"},
		{"server unreachable", with("tenant", "list"), 1, "connect"},
		{"help", []string{"apply", "-h"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, map[string]string{"HOME": home}, "", tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("code %d stderr %q, want %d and %q", code, stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	code, out, _ := runCLI(t, nil, "", "help")
	if code != 0 {
		t.Fatalf("help exit %d", code)
	}
	// The commands issue #13 requires, exactly as written there.
	for _, c := range []string{"migrate", "bootstrap", "login", "tenant create", "tenant list", "tenant delete",
		"cluster create", "credential list", "credential create", "credential revoke", "namespaces import",
		"apply", "get", "delete", "history", "rollback", "test", "decisions"} {
		if !strings.Contains(out, "\n  "+c+" ") {
			t.Errorf("help does not list %q", c)
		}
	}
	code, out, _ = runCLI(t, nil, "", "cluster", "create", "-h")
	if code != 0 || !strings.Contains(out, "Usage: admin cluster create NAME --tenant T") || !strings.Contains(out, "-webhook-url") {
		t.Fatalf("cluster create -h: %d %q", code, out)
	}
}

func TestConnectionSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "portcullis", "config.yaml")
	if err := writeConfig(cfgPath, Config{Server: "https://saved:9443", Token: "saved-token", CAFile: "/saved/ca.crt"}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(cfgPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file mode: %v %v", st.Mode(), err)
	}
	tests := []struct {
		name  string
		flags connFlags
		env   map[string]string
		want  Config
	}{
		{"file", connFlags{}, nil, Config{"https://saved:9443", "saved-token", "/saved/ca.crt"}},
		{"env over file", connFlags{}, map[string]string{"PORTCULLIS_TOKEN": "env-token"},
			Config{"https://saved:9443", "env-token", "/saved/ca.crt"}},
		{"flag over env", connFlags{token: "flag-token"}, map[string]string{"PORTCULLIS_TOKEN": "env-token"},
			Config{"https://saved:9443", "flag-token", "/saved/ca.crt"}},
		{"same server, trailing slash", connFlags{server: "https://saved:9443/"}, nil,
			Config{"https://saved:9443/", "saved-token", "/saved/ca.crt"}},
		// The saved token is never sent to another server.
		{"other server", connFlags{server: "https://other:9443", token: "t"}, nil, Config{"https://other:9443", "t", ""}},
		{"all from env", connFlags{}, map[string]string{"PORTCULLIS_SERVER": "https://e", "PORTCULLIS_TOKEN": "e", "PORTCULLIS_CA_FILE": "/e"},
			Config{"https://e", "e", "/e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envs := map[string]string{"XDG_CONFIG_HOME": dir}
			for k, v := range tt.env {
				envs[k] = v
			}
			e := &env{getenv: func(k string) string { return envs[k] }}
			got, err := e.resolve(&tt.flags)
			if err != nil || got != tt.want {
				t.Fatalf("resolve = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}

	// Another server without a token is an error, not the saved token.
	e := &env{getenv: func(k string) string { return map[string]string{"XDG_CONFIG_HOME": dir}[k] }}
	if _, err := e.resolve(&connFlags{server: "https://other:9443"}); err == nil || !strings.Contains(err.Error(), "no token for https://other:9443") {
		t.Fatalf("other server without a token: %v", err)
	}
	// PORTCULLIS_CONFIG and --config choose the file.
	e = &env{getenv: func(k string) string { return map[string]string{"PORTCULLIS_CONFIG": cfgPath}[k] }}
	if got, err := e.resolve(&connFlags{}); err != nil || got.Token != "saved-token" {
		t.Fatalf("PORTCULLIS_CONFIG: %+v %v", got, err)
	}
	if got, err := (&env{getenv: func(string) string { return "" }}).resolve(&connFlags{config: cfgPath}); err != nil || got.Token != "saved-token" {
		t.Fatalf("--config: %+v %v", got, err)
	}
	// A broken file says which file.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("server: [\n"), 0o600)
	if _, err := (&env{getenv: func(string) string { return "" }}).resolve(&connFlags{config: bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("broken config file: %v", err)
	}
}

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestTables(t *testing.T) {
	exp := now.Add(48 * time.Hour)
	used := now.Add(-90 * time.Second)
	revoked := now.Add(-time.Hour)
	var b bytes.Buffer
	printTenants(&b, now, []apiv1.Tenant{
		{Name: "acme", DisplayName: "Acme Corp", CreatedAt: now.Add(-3 * 24 * time.Hour)},
		{Name: "demo-tenant-long-name", CreatedAt: now.Add(-5 * time.Minute)},
	})
	b.WriteString("--\n")
	printCredentials(&b, now, []apiv1.Credential{
		{ID: 1, Type: "token", Description: "issued by admin cluster create", Active: true, CreatedAt: now.Add(-2 * time.Hour), LastUsedAt: &used},
		{ID: 12, Type: "basic", Username: "kind-demo-2", Active: false, CreatedAt: now.Add(-time.Hour), RevokedAt: &revoked, ExpiresAt: &exp},
	})
	b.WriteString("--\n")
	printHistory(&b, now, []apiv1.Version{
		{Version: 3, Operation: "update", Author: "ops", APIVersion: "admissionregistration.k8s.io/v1", RollbackOf: 1, Time: now.Add(-10 * time.Second)},
		{Version: 1, Operation: "create", Author: "bootstrap", APIVersion: "admissionregistration.k8s.io/v1", Time: now.Add(-26 * time.Hour)},
	})
	b.WriteString("--\n")
	printApply(&b, apiv1.ApplyResult{DryRun: true, Results: []apiv1.ApplyItem{
		{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy", Name: "p", Action: "created"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "limits", Action: "unchanged"},
	}})
	want := `NAME                    DISPLAY NAME   AGE
acme                    Acme Corp      3d
demo-tenant-long-name   <none>         5m
--
ID   TYPE    IDENTITY      DESCRIPTION                      STATUS    EXPIRES   LAST USED   AGE
1    token   <none>        issued by admin cluster create   active    <none>    90s ago     120m
12   basic   kind-demo-2   <none>                           revoked   in 2d     <never>     60m
--
VERSION   OPERATION   AUTHOR      API VERSION                       NOTE                    AGE
3         update      ops         admissionregistration.k8s.io/v1   rollback to version 1   10s
1         create      bootstrap   admissionregistration.k8s.io/v1   <none>                  26h
--
validatingadmissionpolicy.admissionregistration.k8s.io/p created (dry run)
configmap/limits unchanged (dry run)
`
	if b.String() != want {
		t.Fatalf("tables:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestDocuments(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", "# a comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: ns}\n")
	write("a.json", `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]}`)
	write("notes.txt", "ignored")
	docs, err := (&env{}).readDocuments([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.where()+" "+d.meta.Kind+"/"+d.meta.Metadata.Name)
	}
	want := []string{
		filepath.Join(dir, "a.json") + ", document 1, items[0] Secret/s",
		filepath.Join(dir, "b.yaml") + ", document 2 ConfigMap/one",
		filepath.Join(dir, "b.yaml") + ", document 3 ConfigMap/two",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("documents:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The body has one document per object, in that order.
	var body []map[string]any
	if err := json.Unmarshal(applyBody(docs), &body); err != nil || len(body) != 3 || body[2]["metadata"].(map[string]any)["name"] != "two" {
		t.Fatalf("body %v %v", body, err)
	}

	// The server's documents[i] becomes the file and document.
	se := &statusError{Code: 422, Status: Status{Reason: "Invalid", Message: "documents[2].spec.policyName: Required value"}}
	se.Status.Details = &struct {
		Name   string  `json:"name,omitempty"`
		Kind   string  `json:"kind,omitempty"`
		Causes []Cause `json:"causes,omitempty"`
	}{Causes: []Cause{{Field: "documents[2].spec.policyName", Message: "Required value"}}}
	err = nameDocuments(se, docs, "documents")
	wantErr := filepath.Join(dir, "b.yaml") + ", document 3, field spec.policyName: Required value (Invalid, HTTP 422)"
	if err.Error() != wantErr {
		t.Fatalf("error %q\nwant  %q", err, wantErr)
	}
	se.Status.Message = `1 of the 3 documents is invalid; nothing was written: ConfigMap "two" documents[2].spec.policyName: Required value`
	wantErr = "1 of the 3 documents is invalid; nothing was written (Invalid, HTTP 422)\n  " + filepath.Join(dir, "b.yaml") + ", document 3, field spec.policyName: Required value"
	if err.Error() != wantErr {
		t.Fatalf("error %q\nwant  %q", err, wantErr)
	}
	se.Status.Message = "2 documents are invalid"
	se.Status.Details.Causes = append(se.Status.Details.Causes, Cause{Field: "documents[0]", Message: "unknown kind"})
	wantErr = "2 documents are invalid (Invalid, HTTP 422)\n  " + filepath.Join(dir, "b.yaml") + ", document 3, field spec.policyName: Required value\n  " +
		filepath.Join(dir, "a.json") + ", document 1, items[0]: unknown kind"
	if err.Error() != wantErr {
		t.Fatalf("error %q\nwant  %q", err, wantErr)
	}
	// admin test --with: the server names the candidates objects[i].
	se = &statusError{Code: 422, Status: Status{Reason: "Invalid", Message: "objects[1].spec.validations[0].expression: compilation failed"}}
	wantErr = filepath.Join(dir, "b.yaml") + ", document 2, field spec.validations[0].expression: compilation failed (Invalid, HTTP 422)"
	if err := nameDocuments(se, docs, "objects"); err.Error() != wantErr {
		t.Fatalf("error %q\nwant  %q", err, wantErr)
	}

	// Bad files are refused before anything is sent, naming the file.
	for name, content := range map[string]string{
		"nokind.yaml": "apiVersion: v1\nmetadata: {name: x}\n",
		"bad.yaml":    "apiVersion: v1\nkind: [\n",
		"scalar.yaml": "just a string\n",
		"number.yaml": "apiVersion: 1\nkind: ConfigMap\n",
		// A key given twice is an error, not the last one kept.
		"duplicate.yaml": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n" +
			"metadata: {name: b}\nspec:\n  policyName: p\n  validationActions: [Deny]\n  validationActions: [Audit]\n",
	} {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := (&env{}).readDocuments([]string{p}); err == nil || !strings.Contains(err.Error(), p+", document 1") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// YAML reads `name: y` as true: the server judges it, naming the field.
	p := writeTemp(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n")
	if docs, err := (&env{}).readDocuments([]string{p}); err != nil || len(docs) != 1 || docs[0].meta.Kind != "ConfigMap" {
		t.Errorf("a name that is not a string: %v", err)
	}
	if _, err := (&env{}).readDocuments([]string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "has no *.yaml") {
		t.Errorf("empty directory: %v", err)
	}
	// - is stdin, once.
	in := &env{stdin: strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-stdin}\n")}
	if docs, err := in.readDocuments([]string{"-"}); err != nil || len(docs) != 1 || docs[0].where() != "<stdin>, document 1" {
		t.Errorf("stdin: %v %+v", err, docs)
	}
	if _, err := in.readDocuments([]string{"-", "-"}); err == nil || !strings.Contains(err.Error(), "-f - given twice") {
		t.Errorf("stdin twice: %v", err)
	}
	var ee exitError
	if _, err := (&env{}).readDocuments([]string{"/nonexistent"}); !errors.As(err, &ee) || ee.code != exitUsage {
		t.Errorf("missing file: %v", err)
	}
}

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
	if !strings.Contains(flat, "copy out/kubeconfig.yaml to /etc/kubernetes/portcullis/kubeconfig.yaml") {
		t.Fatalf("the paragraph does not say where the kubeconfig goes:\n%s", p)
	}
}

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{"Pod": "pods", "Ingress": "ingresses", "NetworkPolicy": "networkpolicies",
		"Gateway": "gateways", "ConfigMap": "configmaps", "Deployment": "deployments"} {
		if got := plural(kind); got != want {
			t.Errorf("plural(%s) = %s, want %s", kind, got, want)
		}
	}
}

func TestObjectAndDecisionTables(t *testing.T) {
	var objs []storedObject
	for _, js := range []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"limits","resourceVersion":"4","creationTimestamp":"2026-11-23T11:00:00Z"},
		  "spec":{"failurePolicy":"Ignore","paramKind":{"apiVersion":"v1","kind":"ConfigMap"},"validations":[{"expression":"true"},{"expression":"true"}]}}`,
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"limits-prod","resourceVersion":"5","creationTimestamp":"2026-11-23T11:59:30Z"},
		  "spec":{"policyName":"limits","paramRef":{"name":"prod-limits","namespace":"policy"},"validationActions":["Deny","Audit"]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"prod-limits","namespace":"policy","resourceVersion":"6"}}`,
	} {
		var o storedObject
		if err := json.Unmarshal([]byte(js), &o); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	var b bytes.Buffer
	printObjects(&b, now, "", objs)
	b.WriteString("--\n")
	printObjects(&b, now, apiv1.TypeParams, nil)
	b.WriteString("--\n")
	printDecisions(&b, now, []decision{{Time: now.Add(-2 * time.Minute), Cluster: "prod-eu", Operation: "CREATE", Kind: "Pod",
		Namespace: "shop", Name: "api-x", UserName: "system:serviceaccount:kube-system:replicaset-controller", Verdict: "denied",
		Message: `pods "api-x" is forbidden: ValidatingAdmissionPolicy 'baseline-no-privileged' with binding 'baseline-no-privileged' denied request: ` +
			strings.Repeat("privileged containers are not allowed ", 3),
		Bindings: []struct {
			Policy string `json:"policy"`
			Denied bool   `json:"denied"`
		}{{Policy: "baseline-no-privileged", Denied: true}, {Policy: "baseline-required-labels"}}},
		{Time: now.Add(-3 * time.Minute), Cluster: "prod-eu", Operation: "CREATE", Kind: "Pod", Namespace: "shop", Name: "api-y",
			UserName: "alice", Verdict: "denied", Message: "three policies",
			Bindings: []struct {
				Policy string `json:"policy"`
				Denied bool   `json:"denied"`
			}{{Policy: "a", Denied: true}, {Policy: "b", Denied: true}, {Policy: "c", Denied: true}}}})
	b.WriteString("--\n")
	before, after := int64(3), int64(4)
	printAudit(&b, now, []auditEntry{{Time: now.Add(-time.Minute), Actor: "ops", Tenant: "acme", Action: "apply", Kind: "ValidatingAdmissionPolicy",
		Name: "limits", VersionBefore: &before, VersionAfter: &after, DryRun: true}})
	want := `NAME     KIND                        VALIDATIONS   FAILURE POLICY   PARAM KIND   VERSION   AGE
limits   ValidatingAdmissionPolicy   2             Ignore           ConfigMap    4         60m

NAME          KIND                               POLICY   PARAM                ACTIONS      VERSION   AGE
limits-prod   ValidatingAdmissionPolicyBinding   limits   policy/prod-limits   Deny,Audit   5         30s

NAMESPACE   NAME          KIND        API VERSION   VERSION   AGE
policy      prod-limits   ConfigMap   v1            6         <unknown>
--
No params found.
--
VERDICT   CLUSTER   OPERATION   KIND   NAMESPACE   NAME    USER                                                      DENIED BY                MESSAGE                                                        AGE
denied    prod-eu   CREATE      Pod    shop        api-x   system:serviceaccount:kube-system:replicaset-controller   baseline-no-privileged   privileged containers are not allowed privileged containe...   2m
denied    prod-eu   CREATE      Pod    shop        api-y   alice                                                     a,b,+1 more              three policies                                                 3m
--
ACTOR   TENANT   ACTION            KIND                        NAMESPACE   NAME     VERSION   AGE
ops     acme     apply (dry run)   ValidatingAdmissionPolicy   <none>      limits   3 -> 4    60s
`
	if b.String() != want {
		t.Fatalf("tables:\n%s\nwant:\n%s", b.String(), want)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "doc.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBareObjectIsReviewedAsCreate(t *testing.T) {
	docs, err := splitDocuments("pod.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {containers: [{name: c, image: nginx}]}\n"))
	if err != nil || len(docs) != 1 {
		t.Fatal(err)
	}
	b, err := asReview(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	var rv struct {
		APIVersion, Kind string
		Request          struct {
			UID, Name, Namespace, Operation string
			Kind                            struct{ Group, Version, Kind string }
			Resource                        struct{ Group, Version, Resource string }
			Object                          struct{ Metadata struct{ Name string } }
		}
	}
	if err := json.Unmarshal(b, &rv); err != nil {
		t.Fatal(err)
	}
	r := rv.Request
	if rv.Kind != "AdmissionReview" || rv.APIVersion != "admission.k8s.io/v1" || r.UID == "" || r.Operation != "CREATE" ||
		r.Name != "web" || r.Namespace != "shop" || r.Kind.Kind != "Pod" || r.Kind.Version != "v1" || r.Resource.Resource != "pods" ||
		r.Object.Metadata.Name != "web" {
		t.Fatalf("review %s", b)
	}
	// An AdmissionReview is sent as it is.
	docs, _ = splitDocuments("r.json", []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`))
	if b, _ := asReview(docs[0]); !strings.Contains(string(b), `"admission.k8s.io/v1beta1"`) {
		t.Fatalf("review %s", b)
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
