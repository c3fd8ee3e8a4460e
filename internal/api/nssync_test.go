package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func TestNamespaceSyncPushes(t *testing.T) {
	e := newEnv(t)
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "prod"}, http.StatusCreated, nil)
	var issued apiv1.TokenIssued
	e.doJSON(e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "sync", Role: apiv1.RoleSync, Tenant: "a", Cluster: "prod"}, http.StatusCreated, &issued)
	sync := issued.Secret
	if issued.Token.Cluster != "prod" {
		t.Fatalf("issued sync token = %+v", issued.Token)
	}
	// A sync token is scoped to its cluster, and a token list says which.
	var tokens apiv1.List[apiv1.Token]
	e.doJSON(e.adminA, "GET", "/api/v1/tokens", nil, http.StatusOK, &tokens)
	if i := slices.IndexFunc(tokens.Items, func(tk apiv1.Token) bool { return tk.ID == issued.Token.ID }); i < 0 || tokens.Items[i].Cluster != "prod" {
		t.Fatalf("the sync token in the token list: %+v", tokens.Items)
	}
	path := "/api/v1/tenants/a/clusters/prod/namespaces/sync"
	ns := func(name string) json.RawMessage {
		return json.RawMessage(`{"metadata":{"name":"` + name + `","labels":{"env":"prod"}}}`)
	}
	e.run(t, []apiCase{
		{"full list", sync, "POST", path, apiv1.NamespaceSync{Full: true, Namespaces: []json.RawMessage{ns("a"), ns("b")}}, 200, "", ""},
		{"watch events", sync, "POST", path, apiv1.NamespaceSync{Namespaces: []json.RawMessage{ns("c")}, Deleted: []string{"a"}}, 200, "", ""},
		{"heartbeat", sync, "POST", path, apiv1.NamespaceSync{}, 200, "", ""},
		{"bad name", sync, "POST", path, apiv1.NamespaceSync{Namespaces: []json.RawMessage{ns("Bad_Name")}}, 422, "", "namespaces[0].metadata.name"},
		{"not a namespace", sync, "POST", path, apiv1.NamespaceSync{Namespaces: []json.RawMessage{json.RawMessage(`{"kind":"Pod","metadata":{"name":"x"}}`)}}, 422, "must be Namespace", "namespaces[0].kind"},
		{"full list deleting by name", sync, "POST", path, apiv1.NamespaceSync{Full: true, Deleted: []string{"b"}}, 422, "deletes nothing by name", "deleted"},
		{"empty deleted name", sync, "POST", path, apiv1.NamespaceSync{Deleted: []string{""}}, 422, "is empty", "deleted[0]"},
		{"unknown field", sync, "POST", path, `{"items":[]}`, 400, `unknown field "items"`, ""},
		{"a viewer", e.viewerA, "POST", path, apiv1.NamespaceSync{}, 403, "needs an admin token", ""},
		{"the admin", e.adminA, "POST", path, apiv1.NamespaceSync{}, 200, "", ""},
		{"the sync token reads nothing", sync, "GET", "/api/v1/tenants/a/clusters/prod/namespaces", nil, 403, "sync token", ""},
	})
	var list apiv1.List[json.RawMessage]
	e.doJSON(e.adminA, "GET", "/api/v1/tenants/a/clusters/prod/namespaces", nil, 200, &list)
	if len(list.Items) != 2 {
		t.Fatalf("inventory after the pushes: %s", list.Items)
	}
	var names []string
	for _, it := range list.Items {
		var o struct{ Metadata struct{ Name string } }
		_ = json.Unmarshal(it, &o)
		names = append(names, o.Metadata.Name)
	}
	if names[0] != "b" || names[1] != "c" {
		t.Fatalf("inventory after the pushes: %v", names)
	}
	// Pushes that changed the inventory are audited, heartbeats are not.
	syncs := 0
	for _, en := range e.auditEntries() {
		if en.Action == "sync" {
			syncs++
		}
	}
	if syncs != 2 {
		t.Fatalf("%d sync entries in the audit log, want 2", syncs)
	}
}
