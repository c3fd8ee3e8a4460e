package main

import (
	"os"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// Bad input to the admin CLI is refused with an error that names what to
// fix as the user gave it: the flag, or the file and the field in it, not
// the API's own field names.
func TestCLIBadInputNamesFlagOrFileAndField(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	e.onboard()
	a := operatorCLI(t, e)
	files := map[string]string{
		"crds.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ws.example.com}\n" +
			"spec: {group: example.com, names: {kind: W, plural: ws}, scope: Global, versions: [{name: v1, storage: true}]}\n",
		"nss.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: Bad_Name}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a negative concurrency", []string{"tenant", "set-limits", "acme", "--concurrent-evaluations", "-3"}, 1, "--concurrent-evaluations: must be between 1 and 10000"},
		{"a negative CEL cost", []string{"tenant", "set-limits", "acme", "--cel-cost-per-request", "-3"}, 1, "--cel-cost-per-request: must be between 1 and 9007199254740991"},
		// issue 30, finding 12: out of range is a 422 naming the flag, never a 500.
		{"a CEL cost past 2^53", []string{"tenant", "set-limits", "acme", "--cel-cost-per-request", "10000000000000000"}, 1, "--cel-cost-per-request: must be between 1 and 9007199254740991"},
		{"a rate no replica serves", []string{"tenant", "set-limits", "acme", "--requests-per-second", "1e9"}, 1, "--requests-per-second: must be between 0.001 and 1e+06"},
		{"a negative rate", []string{"tenant", "set-limits", "acme", "--requests-per-second", "-1"}, 1, "--requests-per-second: must be between 0.001 and 1e+06"},
		{"a rate that is no number", []string{"tenant", "set-limits", "acme", "--requests-per-second", "abc"}, 2, `invalid value "abc" for flag -requests-per-second`},
		{"a bad label key", []string{"cluster", "label", "prod", "--tenant", "acme", "bad key=v"}, 1, `label key "bad key"`},
		{"a bad label value", []string{"cluster", "label", "prod", "--tenant", "acme", "k=bad value"}, 1, `label "k": value "bad value"`},
		{"a label change that is neither", []string{"cluster", "label", "prod", "--tenant", "acme", "k"}, 2, `"k": want KEY=VALUE`},
		{"an http webhook URL for artifacts", []string{"cluster", "artifacts", "prod", "--tenant", "acme", "--out", "x", "--webhook-url", "http://x"}, 1, `--webhook-url: gateway URL "http://x": the scheme must be https`},
		{"an artifacts directory that is a file", []string{"cluster", "artifacts", "prod", "--tenant", "acme", "--out", "crds.yaml"}, 2, "--out crds.yaml: mkdir crds.yaml: not a directory"},
		{"a bad cluster selector", []string{"catalog", "install", "pod-security-restricted", "--tenant", "acme", "--cluster-selector", "a in"}, 1, "--cluster-selector: not a label selector"},
		{"a bad action", []string{"catalog", "install", "pod-security-restricted", "--tenant", "acme", "--action", "Block"}, 2, `--action "Block"`},
		{"an unknown catalog entry", []string{"catalog", "install", "nope", "--tenant", "acme"}, 1, `the catalog has no entry "nope"`},
		{"a bad selector for cluster list", []string{"cluster", "list", "--tenant", "acme", "--selector", "a in"}, 1, "--selector: unable to parse requirement"},
		{"a bad selector for get", []string{"get", "policies", "--tenant", "acme", "-l", "a in"}, 1, `--selector: Invalid value: "a in"`},
		{"a bad label for cluster create", []string{"cluster", "create", "x", "--tenant", "acme", "--labels", "k=bad value", "--out", "x"}, 1, `--labels: label "k": value "bad value"`},
		{"an http webhook URL for cluster create", []string{"cluster", "create", "x", "--tenant", "acme", "--webhook-url", "http://x", "--out", "x"}, 1, `--webhook-url: gateway URL "http://x"`},
		{"an http webhook URL for a credential", []string{"credential", "create", "--tenant", "acme", "--cluster", "prod", "--webhook-url", "http://x"}, 1, `--webhook-url: gateway URL "http://x"`},
		{"a bad CRD in a file", []string{"crds", "import", "--tenant", "acme", "--cluster", "prod", "-f", "crds.yaml"}, 1, "crds.yaml: CustomResourceDefinitionList"},
		{"the bad CRD's field", []string{"crds", "import", "--tenant", "acme", "--cluster", "prod", "-f", "crds.yaml"}, 1, `items[0].spec.scope: Unsupported value: "Global"`},
		{"a bad namespace in a file", []string{"namespaces", "import", "--tenant", "acme", "--cluster", "prod", "-f", "nss.yaml"}, 1, `nss.yaml: NamespaceList`},
		{"the bad namespace's field", []string{"namespaces", "import", "--tenant", "acme", "--cluster", "prod", "-f", "nss.yaml"}, 1, `items[0].metadata.name: Invalid value: "Bad_Name"`},
		{"a missing file", []string{"crds", "import", "--tenant", "acme", "--cluster", "prod", "-f", "missing.yaml"}, 2, "missing.yaml: no such file"},
		{"a missing kubeconfig", []string{"namespaces", "sync", "--tenant", "acme", "--cluster", "prod", "--kubeconfig", "missing.yaml"}, 2, `--kubeconfig "missing.yaml"`},
		{"a kubeconfig that is not one", []string{"namespaces", "sync", "--tenant", "acme", "--cluster", "prod", "--kubeconfig", "nss.yaml"}, 2, `--kubeconfig "nss.yaml"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a.t = t
			a.fails(c.code, c.want, c.args...)
		})
	}
}
