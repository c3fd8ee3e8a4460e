package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// configMaps is a multi-document YAML body of n small ConfigMaps.
func configMaps(n int, value string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p%d, namespace: prod}\ndata: {v: %q}\n---\n", i, value)
	}
	return b.String()
}

// A large apply is answered, recorded and audited in full. 6,000 objects
// (600 KB) used to run for minutes, growing with the square of the count,
// until the listener's write timeout reset the stream; the time is
// measured by BenchmarkApplyAll (internal/policystore), not asserted here.
func TestLargeApply(t *testing.T) {
	e := newEnv(t)
	const n = 10_000
	start := time.Now()
	res := e.apply(e.adminA, "/api/v1/tenants/a/apply", configMaps(n, "1"))
	t.Logf("%d new objects applied through the API in %v", n, time.Since(start).Round(time.Millisecond))
	if len(res.Results) != n || actions(res)[apiv1.ActionCreated] != n || res.Version != n ||
		res.Results[n-1].ResourceVersion != n {
		t.Fatalf("apply: %d results, %v, version %d", len(res.Results), actions(res), res.Version)
	}
	start = time.Now()
	res = e.apply(e.adminA, "/api/v1/tenants/a/apply", configMaps(n, "2"))
	t.Logf("%d changed objects applied through the API in %v", n, time.Since(start).Round(time.Millisecond))
	if actions(res)[apiv1.ActionConfigured] != n || res.Version != 2*n || res.Results[0].ResourceVersion != n+1 {
		t.Fatalf("second apply: %v, version %d", actions(res), res.Version)
	}
	var count int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM admin_audit_log WHERE tenant_id = $1 AND kind = 'ConfigMap'`,
		e.tenantA.ID).Scan(&count); err != nil || count != 2*n {
		t.Fatalf("%d audit entries for %d changes, %v", count, 2*n, err)
	}
	latest := e.auditEntries()[0]
	if latest.ActorName != "alice" || !strings.HasPrefix(latest.Actor, "token:") || latest.Name != fmt.Sprintf("p%d", n-1) || *latest.VersionAfter != 2*n || *latest.VersionBefore != n {
		t.Fatalf("latest audit entry = %+v", latest)
	}
}

// An apply over the document cap is refused as too large, naming the cap,
// and writes nothing.
func TestApplyDocumentCap(t *testing.T) {
	e := newEnv(t)
	e.s.MaxApplyDocuments = 3
	e.apply(e.adminA, "/api/v1/tenants/a/apply", configMaps(3, "1"))
	code, raw := e.do(e.adminA, "POST", "/api/v1/tenants/a/apply", configMaps(4, "2"))
	st, reason, msg, _ := statusOf(t, raw)
	if code != http.StatusRequestEntityTooLarge || st != 413 || reason != "RequestEntityTooLarge" ||
		!strings.Contains(msg, "the apply holds 4 objects, more than the 3 one apply may hold") {
		t.Fatalf("over the cap: %d %s", code, raw)
	}
	var v int64
	e.doJSON(e.adminA, "GET", "/api/v1/tenants/a/objects/ConfigMap/p0?namespace=prod", nil, http.StatusOK, nil)
	if err := e.pool.QueryRow(t.Context(), `SELECT version FROM policy_heads WHERE tenant_id = $1`, e.tenantA.ID).Scan(&v); err != nil || v != 3 {
		t.Fatalf("version after a refused apply = %d, %v", v, err)
	}
	// Candidate objects of an evaluation are held to the same cap.
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "prod"}, 201, nil)
	var objs []json.RawMessage
	for i := range 4 {
		objs = append(objs, json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c%d","namespace":"prod"}}`, i)))
	}
	code, raw = e.do(e.viewerA, "POST", "/api/v1/tenants/a/clusters/prod/evaluate",
		apiv1.EvaluateRequest{Review: review(t, "admission.k8s.io/v1", "shop", sample(t, "pod.json")), Objects: objs})
	if _, _, msg, _ := statusOf(t, raw); code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "candidate objects are 4, more than the 3") {
		t.Fatalf("4 candidates over the cap of 3: %d %s", code, raw)
	}
}
