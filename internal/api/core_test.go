package api

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// fillPath puts concrete values in a route's wildcards: tenant a, and a
// name for everything else.
func fillPath(path string) string {
	return regexp.MustCompile(`\{([a-zA-Z]+)\}`).ReplaceAllStringFunc(path, func(w string) string {
		if w == "{tenant}" {
			return "a"
		}
		return "x1"
	})
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	e := newEnv(t)
	var doc struct {
		OpenAPI string
		Paths   map[string]map[string]struct {
			Summary    string
			Parameters []struct{ Name, In string }
			Responses  map[string]any
		}
	}
	e.doJSON("", "GET", "/api/v1/openapi.json", nil, http.StatusOK, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	routes := e.s.routes()
	if len(routes) < 2 {
		t.Fatalf("only %d routes", len(routes))
	}
	seen := map[string]bool{}
	for _, rt := range routes {
		key := rt.method + " " + rt.path
		if seen[key] {
			t.Errorf("route %s declared twice", key)
		}
		seen[key] = true
		op, ok := doc.Paths[rt.path][strings.ToLower(rt.method)]
		if !ok {
			t.Errorf("%s is missing from the OpenAPI document", key)
			continue
		}
		if op.Summary == "" || op.Responses["default"] == nil {
			t.Errorf("%s: no summary or no error response", key)
		}
		declared := map[string]bool{}
		for _, p := range op.Parameters {
			declared[p.In+":"+p.Name] = true
		}
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			if !declared["path:"+m[1]] {
				t.Errorf("%s: path parameter %s not declared", key, m[1])
			}
		}
		for _, q := range rt.query {
			if !declared["query:"+q.name] {
				t.Errorf("%s: query parameter %s not declared", key, q.name)
			}
		}
		// The route is really served: the catch-all would say "no route".
		_, raw := e.do("", rt.method, fillPath(rt.path), nil)
		if strings.Contains(string(raw), "no route for") {
			t.Errorf("%s is documented but not served", key)
		}
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if !seen[strings.ToUpper(method)+" "+path] {
				t.Errorf("the document lists %s %s, which is not a route", method, path)
			}
		}
	}
}

// TestEveryRouteChecksAuthorization calls every route with no token, a
// token of the wrong tenant and a token with too small a role.
func TestEveryRouteChecksAuthorization(t *testing.T) {
	e := newEnv(t)
	_, unknown := e.do(e.operator, "GET", "/api/v1/tenants/nope/clusters/x1", nil)
	// A sync token of tenant a's cluster x1 (the cluster fillPath names),
	// and one of another cluster of tenant a.
	var issued apiv1.TokenIssued
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "x1"}, http.StatusCreated, nil)
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "x2"}, http.StatusCreated, nil)
	e.doJSON(e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "sync", Role: apiv1.RoleSync, Tenant: "a", Cluster: "x1"}, http.StatusCreated, &issued)
	syncX1 := issued.Secret
	e.doJSON(e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "sync", Role: apiv1.RoleSync, Tenant: "a", Cluster: "x2"}, http.StatusCreated, &issued)
	syncX2 := issued.Secret
	_, unknownCluster := e.do(e.operator, "GET", "/api/v1/tenants/a/clusters/nope", nil)
	for _, rt := range e.s.routes() {
		path := fillPath(rt.path)
		name := rt.method + " " + rt.path
		code, raw := e.do("", rt.method, path, nil)
		if rt.access == public {
			if code == http.StatusUnauthorized {
				t.Errorf("%s: public route answered 401", name)
			}
			continue
		}
		if code != http.StatusUnauthorized {
			t.Errorf("%s without a token = %d %s, want 401", name, code, raw)
		}
		if c, _ := e.do("pcadm_notatoken", rt.method, path, nil); c != http.StatusUnauthorized {
			t.Errorf("%s with a bad token = %d, want 401", name, c)
		}
		if rt.access != clusterSync {
			if c, raw := e.do(syncX1, rt.method, path, nil); c != http.StatusForbidden {
				t.Errorf("%s with a sync token = %d %s, want 403", name, c, raw)
			}
		}
		switch rt.access {
		case operatorOnly:
			if c, raw := e.do(e.adminA, rt.method, path, nil); c != http.StatusForbidden {
				t.Errorf("%s with a tenant admin token = %d %s, want 403", name, c, raw)
			}
		case clusterSync:
			// Another cluster's sync token sees x1 as a cluster that does
			// not exist; x1's own passes authorization.
			c, raw := e.do(syncX2, rt.method, path, nil)
			want := strings.Replace(mustStatusMessage(t, unknownCluster), `"nope"`, `"x1"`, 1)
			if c != http.StatusNotFound || mustStatusMessage(t, raw) != want {
				t.Errorf("%s with another cluster's sync token = %d %s, want 404 %q", name, c, raw, want)
			}
			if c, raw := e.do(syncX1, rt.method, path, nil); c == http.StatusForbidden || c == http.StatusNotFound || c == http.StatusUnauthorized {
				t.Errorf("%s with the cluster's sync token = %d %s", name, c, raw)
			}
			fallthrough
		case tenantViewer, tenantAdmin:
			// Tenant b's admin sees tenant a exactly as a tenant that
			// does not exist.
			c, raw := e.do(e.adminB, rt.method, path, nil)
			_, _, msg, _ := statusOf(t, raw)
			want := strings.Replace(mustStatusMessage(t, unknown), `"nope"`, `"a"`, 1)
			if c != http.StatusNotFound || msg != want {
				t.Errorf("%s with another tenant's token = %d %q, want 404 %q", name, c, msg, want)
			}
			if rt.access == tenantAdmin || rt.access == clusterSync {
				if c, raw := e.do(e.viewerA, rt.method, path, nil); c != http.StatusForbidden {
					t.Errorf("%s with a viewer token = %d %s, want 403", name, c, raw)
				}
			}
		}
	}
}

func mustStatusMessage(t *testing.T, raw []byte) string {
	_, _, msg, _ := statusOf(t, raw)
	return msg
}

func TestWhoAmI(t *testing.T) {
	e := newEnv(t)
	var who struct{ Name, Role, Tenant string }
	e.doJSON(e.viewerA, "GET", "/api/v1/whoami", nil, http.StatusOK, &who)
	if who.Name != "vera" || who.Role != "viewer" || who.Tenant != "a" {
		t.Fatalf("whoami = %+v", who)
	}
	who.Tenant = ""
	e.doJSON(e.operator, "GET", "/api/v1/whoami", nil, http.StatusOK, &who)
	if who.Role != "operator" || who.Tenant != "" {
		t.Fatalf("whoami = %+v", who)
	}
}

func TestUnknownRouteIsAStatus(t *testing.T) {
	e := newEnv(t)
	code, raw := e.do(e.operator, "GET", "/api/v1/nothing", nil)
	c, reason, msg, _ := statusOf(t, raw)
	if code != http.StatusNotFound || c != 404 || reason != "NotFound" || !strings.Contains(msg, "openapi.json") {
		t.Fatalf("= %d %s", code, raw)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
}

// Text PostgreSQL cannot store or compare (NUL, invalid UTF-8) is refused
// as bad input wherever a client can send it, never a 500.
func TestTextPostgresCannotHoldIsRefused(t *testing.T) {
	e := newEnv(t)
	e.cluster(e.tenantA.ID, "prod")
	for _, tt := range []struct {
		name, method, path string
		body               any
		code               int
		field              string
	}{
		{"invalid UTF-8 in a path", "GET", "/api/v1/tenants/a/clusters/%ff", nil, 404, ""},
		{"NUL in a path", "GET", "/api/v1/tenants/a/objects/vap/x%00", nil, 404, ""},
		{"NUL in the tenant", "GET", "/api/v1/tenants/%00/clusters", nil, 404, ""},
		{"NUL in a query", "GET", "/api/v1/tenants/a/audit?actor=%00", nil, 422, "actor"},
		{"invalid UTF-8 in a query", "GET", "/api/v1/tenants/a/decisions?user=%ff", nil, 422, "user"},
		{"NUL in a JSON body", "POST", "/api/v1/tenants/a/clusters/prod/credentials",
			`{"type": "token", "description": "a\u0000b"}`, 422, "description"},
		{"NUL in an applied object", "POST", "/api/v1/tenants/a/apply",
			`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "a\u0000b"}}`, 422, "documents[0].data.k"},
		{"NUL in a namespace", "PUT", "/api/v1/tenants/a/clusters/prod/namespaces",
			`{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "annotations": {"a": "\u0000"}}}`, 422, "metadata.annotations.a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, raw := e.do(e.adminA, tt.method, tt.path, tt.body)
			_, _, _, causes := statusOf(t, raw)
			if code != tt.code {
				t.Fatalf("= %d %s, want %d", code, raw, tt.code)
			}
			if tt.field != "" && (len(causes) == 0 || !strings.Contains(strings.Join(causes, "\n"), tt.field+": ")) {
				t.Fatalf("causes %q do not name %s", causes, tt.field)
			}
		})
	}
}

func TestTenantTokenCannotOutliveItsCreator(t *testing.T) {
	e := newEnv(t)
	limit := time.Now().Add(time.Hour).Truncate(time.Second)
	_, short, err := e.s.Tokens.Create(context.Background(), e.tenantA.ID, "short", adminauth.RoleAdmin, &limit, adminauth.Creator{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var issued apiv1.TokenIssued
	e.doJSON(short, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "child", Role: "viewer", Tenant: "a"}, http.StatusCreated, &issued)
	if issued.Token.ExpiresAt == nil || !issued.Token.ExpiresAt.Equal(limit) {
		t.Fatalf("child expires at %v, want %v", issued.Token.ExpiresAt, limit)
	}
	code, raw := e.do(short, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "long", Role: "viewer", Tenant: "a", ExpiresIn: "48h"})
	if _, _, _, causes := statusOf(t, raw); code != http.StatusUnprocessableEntity || len(causes) != 1 || !strings.HasPrefix(causes[0], "expiresIn: ") {
		t.Fatalf("= %d %s", code, raw)
	}
	// Operators are not limited.
	issued = apiv1.TokenIssued{}
	e.doJSON(e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "forever", Role: "viewer", Tenant: "a"}, http.StatusCreated, &issued)
	if issued.Token.ExpiresAt != nil {
		t.Fatalf("operator-made token expires at %v", issued.Token.ExpiresAt)
	}
}
