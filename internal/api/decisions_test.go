package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// recordDecisions stores ds through the real recorder.
func (e *env) recordDecisions(ds ...*decisions.Decision) {
	e.t.Helper()
	r, err := decisions.NewPGRecorder(decisions.RecorderConfig{Pool: e.pool, SpillDir: e.t.TempDir(),
		Registerer: prometheus.NewRegistry(), FlushInterval: 10 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range ds {
		r.Record(d)
	}
	if err := r.Close(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) decision(tenantName string, tenantID int64, cluster string, at time.Time, deniedBy string) *decisions.Decision {
	d := &decisions.Decision{ID: uuid.Must(uuid.NewV7()).String(), Time: at.UTC(), Instance: "test",
		TenantID: tenantID, TenantName: tenantName, ClusterID: 1, ClusterName: cluster,
		UID: uuid.NewString(), Operation: "CREATE", Version: "v1", Resource: "pods", Kind: "Pod",
		Namespace: "shop", Name: "web", UserName: "alice", Verdict: decisions.VerdictAllowed, HTTPStatus: 200,
		Bindings: []decisions.BindingRecord{{Policy: "require-team", Binding: "require-team", Outcome: string(evaluator.OutcomePass)}}}
	if deniedBy != "" {
		d.Verdict, d.Code, d.Message = decisions.VerdictDenied, 403, "denied by "+deniedBy
		d.Bindings = append(d.Bindings, decisions.BindingRecord{Policy: deniedBy, Binding: deniedBy,
			Outcome: string(evaluator.OutcomeViolation), Denied: true})
	}
	return d
}

func TestDecisionRoutes(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.recordDecisions(
		e.decision("a", e.tenantA.ID, "c1", now.Add(-3*time.Minute), ""),
		e.decision("a", e.tenantA.ID, "c1", now.Add(-2*time.Minute), ""),
		e.decision("a", e.tenantA.ID, "c2", now.Add(-time.Minute), "no-privileged"),
		e.decision("b", e.tenantB.ID, "c1", now.Add(-time.Minute), "no-privileged"),
	)

	list := func(token, query string) decisions.Page {
		t.Helper()
		var p decisions.Page
		e.doJSON(token, "GET", "/api/v1/tenants/a/decisions"+query, nil, http.StatusOK, &p)
		return p
	}
	if p := list(e.viewerA, ""); len(p.Items) != 3 || p.Items[0].Verdict != "denied" || p.Continue != "" {
		t.Fatalf("all: %+v", p)
	}
	for query, want := range map[string]int{
		"?verdict=denied": 1, "?policy=no-privileged": 1, "?policy=require-team": 3, "?cluster=c1": 2,
		"?since=90s": 1, "?until=90s": 2, "?user=bob": 0, "?namespace=shop&kind=Pod": 3,
		"?operation=CREATE": 3, "?operation=DELETE": 0, "?resource=pods": 3, "?resource=deployments": 0,
	} {
		if p := list(e.operator, query); len(p.Items) != want {
			t.Errorf("%s: %d items, want %d", query, len(p.Items), want)
		}
	}
	first := list(e.adminA, "?limit=2")
	if len(first.Items) != 2 || first.Continue == "" {
		t.Fatalf("page 1: %+v", first)
	}
	second := list(e.adminA, "?limit=2&continue="+first.Continue)
	if len(second.Items) != 1 || second.Continue != "" || second.Items[0].ID == first.Items[1].ID {
		t.Fatalf("page 2: %+v", second)
	}

	// Tenant b sees its own decision only.
	var pb decisions.Page
	e.doJSON(e.adminB, "GET", "/api/v1/tenants/b/decisions", nil, http.StatusOK, &pb)
	if len(pb.Items) != 1 || pb.Items[0].Tenant != "b" {
		t.Fatalf("tenant b: %+v", pb)
	}

	var st decisions.Stats
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a/decisions/stats?since=1h&bucket=1h", nil, http.StatusOK, &st)
	var total, denied, byPolicy int64
	for _, b := range st.Buckets {
		total += b.Total
		denied += b.Verdicts["denied"]
		byPolicy += b.DeniedBy["no-privileged"]
	}
	if total != 3 || denied != 1 || byPolicy != 1 {
		t.Fatalf("stats: total %d denied %d by policy %d: %+v", total, denied, byPolicy, st)
	}

	for _, tt := range []struct{ path, field string }{
		{"/api/v1/tenants/a/decisions?verdict=maybe", "verdict"},
		{"/api/v1/tenants/a/decisions?since=yesterday", "since"},
		{"/api/v1/tenants/a/decisions?limit=x", "limit"},
		{"/api/v1/tenants/a/decisions?limit=100000", "limit"},
		{"/api/v1/tenants/a/decisions?continue=garbage", "continue"},
		{"/api/v1/tenants/a/decisions?since=1m&until=1h", "since"},
		{"/api/v1/tenants/a/decisions/stats?bucket=90s", "bucket"},
		{"/api/v1/tenants/a/decisions/stats?bucket=soon", "bucket"},
	} {
		code, raw := e.do(e.viewerA, "GET", tt.path, nil)
		_, _, _, causes := statusOf(t, raw)
		if code != http.StatusUnprocessableEntity || len(causes) != 1 || !strings.HasPrefix(causes[0], tt.field+": ") {
			t.Errorf("%s = %d %s, want 422 on %s", tt.path, code, raw, tt.field)
		}
	}
}

// The API shape of a decision: lowerCamelCase, bindings and annotations as
// stored. (Moved from the store's tests with the wire types.)
func TestDecisionJSON(t *testing.T) {
	e := newEnv(t)
	d := e.decision("a", e.tenantA.ID, "prod", time.Now(), "no-latest")
	d.Bindings[1].Param = "default/limits"
	d.AuditAnnotations = []decisions.AuditAnnotation{{Key: "no-latest/image", Value: "nginx:latest"}}
	d.Warnings = []string{"careful"}
	d.UserGroups = []string{"system:authenticated"}
	d.Latency = 1500 * time.Microsecond
	e.recordDecisions(d)
	code, b := e.do(e.viewerA, "GET", "/api/v1/tenants/a/decisions", nil)
	if code != http.StatusOK {
		t.Fatalf("list: %d %s", code, b)
	}
	b = compact(t, b)
	var got map[string]any
	_ = json.Unmarshal(b, &got)
	items, _ := got["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("items: %s", b)
	}
	item := items[0].(map[string]any)
	for _, k := range []string{"id", "time", "tenant", "cluster", "uid", "operation", "group", "version", "resource",
		"subResource", "kind", "namespace", "name", "userName", "userGroups", "dryRun", "verdict", "httpStatus", "code",
		"reason", "message", "warnings", "auditAnnotations", "bindings", "latencyMs", "instance", "snapshotVersion",
		"endpoint", "mutated", "mutatedBy", "patch", "patchTruncated"} {
		if _, ok := item[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
	if len(item) != 32 {
		t.Errorf("%d keys, want 32: %s", len(item), b)
	}
	if _, ok := got["continue"]; !ok {
		t.Error("no continue in the page")
	}
	bind := item["bindings"].([]any)[1].(map[string]any)
	for _, k := range []string{"policy", "binding", "param", "outcome", "denied", "failurePolicyApplied", "timeout", "error", "messages"} {
		if _, ok := bind[k]; !ok {
			t.Errorf("no %q in binding %v", k, bind)
		}
	}
	if _, ok := bind["mutated"]; ok {
		t.Errorf("a validating binding has mutated: %v", bind)
	}
	if code, empty := e.do(e.adminB, "GET", "/api/v1/tenants/b/decisions", nil); code != http.StatusOK ||
		string(compact(t, empty)) != `{"items":[],"continue":""}` {
		t.Errorf("empty page = %d %s", code, empty)
	}
	if !strings.Contains(string(b), `"userGroups":["system:authenticated"]`) || strings.Contains(string(b), "null") {
		t.Errorf("lists are not arrays: %s", b)
	}
	var page apiv1.DecisionList
	_ = json.Unmarshal(b, &page)
	r := page.Items[0]
	if r.ID != d.ID || r.AuditAnnotations["no-latest/image"] != "nginx:latest" || r.Bindings[1].Param != "default/limits" ||
		r.LatencyMs != 1.5 || r.Code != 403 || r.Warnings[0] != "careful" || !r.Time.Equal(d.Time.Truncate(time.Microsecond)) {
		t.Fatalf("record %+v", r)
	}
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return out.Bytes()
}

// The operator's fleet-wide routes merge every tenant's decisions, newest
// first, and count them; no tenant's token may call them.
func TestFleetDecisionRoutes(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.recordDecisions(
		e.decision("a", e.tenantA.ID, "c1", now.Add(-4*time.Minute), ""),
		e.decision("b", e.tenantB.ID, "c1", now.Add(-3*time.Minute), "no-privileged"),
		e.decision("a", e.tenantA.ID, "c2", now.Add(-2*time.Minute), "no-privileged"),
		e.decision("b", e.tenantB.ID, "c9", now.Add(-time.Minute), ""),
	)
	list := func(query string) apiv1.DecisionList {
		t.Helper()
		var l apiv1.DecisionList
		e.doJSON(e.operator, "GET", "/api/v1/decisions"+query, nil, http.StatusOK, &l)
		return l
	}
	tenants := func(l apiv1.DecisionList) (s string) {
		for _, d := range l.Items {
			s += d.Tenant + "/" + d.Cluster + " "
		}
		return s
	}
	if l := list(""); tenants(l) != "b/c9 a/c2 b/c1 a/c1 " || l.Continue != "" {
		t.Fatalf("all: %s %+v", tenants(l), l)
	}
	for query, want := range map[string]string{
		"?tenant=a": "a/c2 a/c1 ", "?tenant=b&verdict=denied": "b/c1 ", "?policy=no-privileged": "a/c2 b/c1 ",
		"?cluster=c1": "b/c1 a/c1 ", "?since=150s": "b/c9 a/c2 ", "?tenant=nobody": "",
	} {
		if got := tenants(list(query)); got != want {
			t.Errorf("%s: %q, want %q", query, got, want)
		}
	}
	var pages []string
	for l := list("?limit=3"); ; l = list("?limit=3&continue=" + l.Continue) {
		pages = append(pages, tenants(l))
		if l.Continue == "" {
			break
		}
	}
	if len(pages) != 2 || pages[0] != "b/c9 a/c2 b/c1 " || pages[1] != "a/c1 " {
		t.Errorf("pages: %q", pages)
	}

	var st apiv1.FleetDecisionStats
	e.doJSON(e.operator, "GET", "/api/v1/decisions/stats?since=1h&bucket=1h", nil, http.StatusOK, &st)
	var total, denied int64
	for _, b := range st.Buckets {
		total += b.Total
		denied += b.DeniedBy["no-privileged"]
	}
	if total != 4 || denied != 2 {
		t.Errorf("fleet stats: %d decisions, %d denied by no-privileged: %+v", total, denied, st)
	}
	byTenant := map[string]apiv1.TenantDecisionCounts{}
	for _, c := range st.Tenants {
		byTenant[c.Tenant] = c
	}
	if a := byTenant["a"]; a.Total != 2 || a.Verdicts["denied"] != 1 || a.DeniedBy["no-privileged"] != 1 {
		t.Errorf("tenant a: %+v", a)
	}
	if len(st.Tenants) != len(byTenant) || byTenant["b"].Total != 2 {
		t.Errorf("tenants: %+v", st.Tenants)
	}
	e.doJSON(e.operator, "GET", "/api/v1/decisions/stats?since=1h&bucket=1h&tenant=b", nil, http.StatusOK, &st)
	if len(st.Tenants) != 1 || st.Tenants[0].Tenant != "b" || st.Tenants[0].Total != 2 {
		t.Errorf("tenant b's stats: %+v", st.Tenants)
	}

	for _, token := range []string{e.adminA, e.viewerA, e.adminB} {
		for _, path := range []string{"/api/v1/decisions", "/api/v1/decisions/stats", "/api/v1/decisions?tenant=a"} {
			if code, raw := e.do(token, "GET", path, nil); code != http.StatusForbidden {
				t.Errorf("a tenant's token: GET %s = %d %s, want 403", path, code, raw)
			}
		}
	}
	if code, raw := e.do(e.operator, "GET", "/api/v1/decisions?verdict=maybe", nil); code != http.StatusUnprocessableEntity {
		t.Errorf("bad verdict: %d %s", code, raw)
	}
}
