package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// crdsYAML is kubectl get crd -o yaml, shortened.
const crdsYAML = `apiVersion: v1
kind: List
items:
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata:
    name: widgets.example.com
    managedFields: [{manager: kubectl}]
  spec:
    group: example.com
    names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
    scope: Namespaced
    conversion: {strategy: None}
    versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
    - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
  status: {storedVersions: [v1]}
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: gadgets.example.com}
  spec:
    group: example.com
    names: {kind: Gadget, plural: gadgets}
    scope: Cluster
    versions: [{name: v1, served: true, storage: true}]
`

func TestCRDInventory(t *testing.T) {
	e := newEnv(t)
	e.cluster(e.tenantA.ID, "prod")
	path := "/api/v1/tenants/a/clusters/prod/crds"
	var imp apiv1.CRDImport
	e.doJSON(e.adminA, "PUT", path, crdsYAML, http.StatusOK, &imp)
	if imp.CRDs != 2 {
		t.Fatalf("import = %+v", imp)
	}
	var l apiv1.List[json.RawMessage]
	e.doJSON(e.viewerA, "GET", path, nil, http.StatusOK, &l)
	if got := objectNames(t, l.Items); !slices.Equal(got, []string{"CustomResourceDefinition//gadgets.example.com", "CustomResourceDefinition//widgets.example.com"}) {
		t.Fatalf("inventory = %v", got)
	}
	if strings.Contains(string(l.Items[1]), "managedFields") || !strings.Contains(string(l.Items[1]), `"storedVersions"`) {
		t.Fatalf("widgets = %s", l.Items[1])
	}
	var p apiv1.List[json.RawMessage]
	e.doJSON(e.viewerA, "GET", path+"?limit=1", nil, http.StatusOK, &p)
	if len(p.Items) != 1 || p.Continue == "" {
		t.Fatalf("page = %+v", p)
	}
	if last := e.auditEntries()[0]; last.Action != "import" || last.Kind != "CRDInventory" || last.Name != "prod" || last.Detail["cluster"] != "prod" {
		t.Fatalf("audit = %+v", last)
	}
	// A viewer may read, not upload; another tenant sees no such cluster.
	if code, _ := e.do(e.viewerA, "PUT", path, crdsYAML); code != http.StatusForbidden {
		t.Fatalf("viewer upload = %d", code)
	}

	const crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
	bad := []struct {
		name, body string
		code       int
		cause      string
	}{
		{"a Namespace", crd + "metadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n", 422, "items[1].kind: "},
		{"v1beta1", "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: a}\n", 422, "items[0].apiVersion: "},
		{"a wrong type", crd + "metadata: {name: a}\nspec: {versions: 3}\n", 422, "items[0]: "},
		{"no group", crd + "metadata: {name: widgets.}\nspec: {names: {kind: W, plural: widgets}, scope: Cluster, versions: [{name: v1, storage: true}]}\n", 422, "items[0].spec.group: "},
		{"a bad scope", crd + "metadata: {name: ws.example.com}\nspec: {group: example.com, names: {kind: W, plural: ws}, scope: Global, versions: [{name: v1, storage: true}]}\n", 422, "items[0].spec.scope: "},
		{"a bad strategy", crd + "metadata: {name: ws.example.com}\nspec: {group: example.com, names: {kind: W, plural: ws}, scope: Cluster, conversion: {strategy: Magic}, versions: [{name: v1, storage: true}]}\n", 422, "items[0].spec.conversion.strategy: "},
		{"empty", "", 400, ""},
		{"comments only", "# kubectl printed nothing\n---\n", 400, ""},
		{"a List without items", "apiVersion: v1\nkind: List\n", 422, "items[0].kind: "},
	}
	for _, b := range bad {
		code, raw := e.do(e.adminA, "PUT", path, b.body)
		_, _, _, causes := statusOf(t, raw)
		if code != b.code || (b.cause != "" && !slices.ContainsFunc(causes, func(c string) bool { return strings.HasPrefix(c, b.cause) })) {
			t.Errorf("%s: = %d %s, want %d with a cause on %s", b.name, code, raw, b.code, b.cause)
		}
	}
	e.doJSON(e.viewerA, "GET", path, nil, http.StatusOK, &l)
	if len(l.Items) != 2 {
		t.Fatalf("a refused upload changed the inventory: %d", len(l.Items))
	}
	if code, _ := e.do(e.viewerA, "GET", "/api/v1/tenants/a/clusters/nope/crds", nil); code != 404 {
		t.Fatalf("unknown cluster = %d", code)
	}

	// A cluster whose CRDs were all removed says so with an empty List,
	// as kubectl get crd -o json|yaml prints it then.
	for _, empty := range []string{
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinitionList","items":[]}`,
		"apiVersion: v1\nkind: List\nitems: []\n",
	} {
		e.doJSON(e.adminA, "PUT", path, crdsYAML, http.StatusOK, &imp)
		imp = apiv1.CRDImport{CRDs: -1}
		e.doJSON(e.adminA, "PUT", path, empty, http.StatusOK, &imp)
		if imp.CRDs != 0 {
			t.Fatalf("empty import %s = %+v", empty, imp)
		}
		e.doJSON(e.viewerA, "GET", path, nil, http.StatusOK, &l)
		if len(l.Items) != 0 {
			t.Fatalf("after an empty import %s: %d CRDs left", empty, len(l.Items))
		}
	}
}
