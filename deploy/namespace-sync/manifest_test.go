// Package namespacesync holds the manifest that runs admin namespaces sync
// inside a tenant's cluster; this test keeps it valid.
package namespacesync

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Every document decodes strictly with client-go's scheme, the ClusterRole
// only reads, and the Deployment runs the sync with --watch.
func TestManifest(t *testing.T) {
	b, err := os.ReadFile("namespace-sync.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	kinds := map[string]bool{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		obj, gvk, err := dec.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("strict decode: %v\n%s", err, doc)
		}
		kinds[gvk.Kind] = true
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			for _, r := range o.Rules {
				for _, v := range r.Verbs {
					if !slices.Contains([]string{"get", "list", "watch"}, v) {
						t.Errorf("the ClusterRole may %s %v", v, r.Resources)
					}
				}
			}
		case *appsv1.Deployment:
			cmd := strings.Join(o.Spec.Template.Spec.Containers[0].Command, " ")
			if !strings.HasPrefix(cmd, "/admin namespaces sync ") || !strings.Contains(cmd, "--watch") {
				t.Errorf("command %q", cmd)
			}
		}
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret", "Deployment"} {
		if !kinds[k] {
			t.Errorf("no %s", k)
		}
	}
}
