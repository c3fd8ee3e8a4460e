package policystore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func docs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

const limitsParam = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limits, namespace: prod}\ndata: {max: \"3\"}\n"

func TestApplyAll(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)

	// A dry run first: the outcomes of the real apply, and nothing written.
	dry, dv, err := s.ApplyAll(ctx, tenant, "alice", docs(string(vap(5)), bindingYAML, limitsParam), true)
	if err != nil || dv != 3 || len(dry) != 3 {
		t.Fatalf("dry run = %d outcomes, version %d, %v", len(dry), dv, err)
	}
	if v, _ := s.TenantVersion(ctx, tenant); v != 0 {
		t.Fatalf("a dry run wrote version %d", v)
	}
	if _, err := s.Get(ctx, tenant, refVAP); fault.ErrorCode(err) != fault.NotFound {
		t.Fatalf("a dry run stored the policy: %v", err)
	}
	out, v, err := s.ApplyAll(ctx, tenant, "alice", docs(string(vap(5)), bindingYAML, limitsParam), false)
	if err != nil || v != 3 {
		t.Fatalf("apply = version %d, %v", v, err)
	}
	for i, o := range out {
		if o.Action != ActionCreated || o.VersionBefore != 0 || o.Object.ResourceVersion != int64(i+1) ||
			o.Object.ResourceVersion != dry[i].Object.ResourceVersion || o.Action != dry[i].Action {
			t.Fatalf("outcome %d = %+v (dry run %+v)", i, o, dry[i])
		}
	}
	if len(out[2].Warnings) != 1 || !strings.Contains(out[2].Warnings[0], "no policy has paramKind ConfigMap") ||
		len(out[0].Warnings)+len(out[1].Warnings) != 0 {
		t.Fatalf("warnings = %v %v %v", out[0].Warnings, out[1].Warnings, out[2].Warnings)
	}

	// Unchanged objects keep their versions; a changed one takes the next.
	out, v, err = s.ApplyAll(ctx, tenant, "bob", docs(string(vap(5)), bindingYAML, strings.Replace(limitsParam, `"3"`, `"4"`, 1)), false)
	if err != nil || v != 4 || out[0].Action != ActionUnchanged || out[1].Action != ActionUnchanged ||
		out[2].Action != ActionConfigured || out[2].VersionBefore != 3 || out[2].Object.ResourceVersion != 4 || out[0].Object.ResourceVersion != 1 {
		t.Fatalf("second apply = %v, %+v %v", v, out, err)
	}

	// A conflict in any document writes nothing, and names the document.
	stale := strings.Replace(string(vap(9)), "  name: max-replicas\n", "  name: max-replicas\n  resourceVersion: \"7\"\n", 1)
	_, _, err = s.ApplyAll(ctx, tenant, "carol", docs(strings.Replace(limitsParam, `"3"`, `"5"`, 1), stale), false)
	if fault.ErrorCode(err) != fault.Conflict || !strings.HasPrefix(err.Error(), "documents[1]: ") {
		t.Fatalf("stale document: %v", err)
	}
	if v, _ := s.TenantVersion(ctx, tenant); v != 4 {
		t.Fatalf("a refused apply wrote: version %d", v)
	}

	// A policy with the param's kind as paramKind, in the same apply,
	// silences the warning.
	withParamKind := strings.Replace(string(vap(5)), "spec:\n", "spec:\n  paramKind: {apiVersion: v1, kind: ConfigMap}\n", 1)
	out, _, err = s.ApplyAll(ctx, tenant, "carol", docs(limitsParam, withParamKind), false)
	if err != nil || len(out[0].Warnings) != 0 || out[1].Action != ActionConfigured {
		t.Fatalf("with paramKind: %+v %v", out, err)
	}

	kinds, err := s.Kinds(ctx, tenant)
	if err != nil || len(kinds) != 3 || kinds[0] != (StoredKind{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Live: true}) {
		t.Fatalf("kinds = %v %v", kinds, err)
	}
}

func TestApplyAllRefusesEveryBadDocument(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	typo := strings.Replace(bindingYAML, "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBindng", 1)
	alpha := strings.Replace(bindingYAML, "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1alpha1", 1)
	webhookCfg := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: w}\n"
	badCEL := strings.Replace(string(vap(5)), "object.spec.replicas <= 5", "object.spec.replicas <=", 1)
	_, _, err := s.ApplyAll(ctx, tenant, "alice", docs(limitsParam, typo, alpha, webhookCfg, badCEL, limitsParam), false)
	e, ok := err.(*fault.Error)
	if !ok || e.Code != fault.Invalid {
		t.Fatalf("err = %v", err)
	}
	st := fault.Status(err)
	if st.Code != 422 || st.Details == nil {
		t.Fatalf("status = %+v", st)
	}
	want := []string{
		`documents[1].kind|ValidatingAdmissionPolicyBindng.admissionregistration.k8s.io "max-replicas-binding": Unsupported value: "ValidatingAdmissionPolicyBindng"`,
		`documents[2].apiVersion|ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "max-replicas-binding": Unsupported value: "admissionregistration.k8s.io/v1alpha1"`,
		`documents[3].kind|ValidatingWebhookConfiguration.admissionregistration.k8s.io "w": Unsupported value`,
		`documents[4].spec.validations[0].expression|ValidatingAdmissionPolicy.admissionregistration.k8s.io "max-replicas": Invalid value`,
		`documents[5].metadata.name|ConfigMap "limits": Invalid value: "limits": the same object as documents[0]`,
	}
	if len(st.Details.Causes) != len(want) {
		t.Fatalf("causes = %+v", st.Details.Causes)
	}
	for i, c := range st.Details.Causes {
		field, msg, _ := strings.Cut(want[i], "|")
		if c.Field != field || !strings.HasPrefix(c.Message, msg) {
			t.Errorf("cause %d = %s: %s\nwant %s: %s", i, c.Field, c.Message, field, msg)
		}
		if !strings.Contains(st.Message, field) {
			t.Errorf("the message does not name %s: %s", field, st.Message)
		}
	}
	if !strings.HasPrefix(st.Message, "5 of the 6 documents are invalid; nothing was written: ") {
		t.Errorf("message = %s", st.Message)
	}
	if v, _ := s.TenantVersion(ctx, tenant); v != 0 {
		t.Fatalf("a refused apply wrote version %d", v)
	}
	if _, _, err := s.ApplyAll(ctx, tenant+1000, "alice", docs(limitsParam), false); fault.ErrorCode(err) != fault.NotFound {
		t.Fatalf("an unknown tenant: %v", err)
	}
	// The single-object Apply refuses the typo too, instead of storing a
	// param.
	if _, err := s.Apply(ctx, tenant, "alice", []byte(typo)); fault.ErrorCode(err) != fault.Invalid {
		t.Fatalf("Apply(typo) = %v", err)
	}
}

func TestCandidateSnapshotAndDryRunDelete(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	if _, _, err := s.ApplyAll(ctx, tenant, "alice", docs(string(vap(5)), bindingYAML), false); err != nil {
		t.Fatal(err)
	}
	req := &evaluator.Request{UID: "u",
		Kind:     schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Name:     "d", Namespace: "prod", Operation: "CREATE",
		Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "d", "namespace": "prod"}, "spec": map[string]any{"replicas": int64(7)}},
	}
	allowed := func(snap *Snapshot) bool {
		return snap.Compiled.Evaluate(ctx, evaluator.Validating, req, evaluator.WithNamespaces(evaluator.NamespaceMap{})).Allowed
	}
	live, err := s.CandidateSnapshot(ctx, tenant, nil, false)
	if err != nil || live.Version != 2 || allowed(live) {
		t.Fatalf("live snapshot: version %v, %v", live, err)
	}
	overlay, err := s.CandidateSnapshot(ctx, tenant, docs(string(vap(10))), false)
	if err != nil || overlay.Version != 2 || !allowed(overlay) {
		t.Fatalf("overlay: %v", err)
	}
	// Replaced by a lone policy: no binding, so nothing applies.
	alone, err := s.CandidateSnapshot(ctx, tenant, docs(string(vap(1))), true)
	if err != nil || !allowed(alone) || alone.Compiled.Stats().Bindings != 0 {
		t.Fatalf("replace: %v", err)
	}
	if _, err := s.CandidateSnapshot(ctx, tenant, docs(bindingYAML, "kind: Nothing\n"), false); fault.ErrorCode(err) != fault.Invalid ||
		!strings.Contains(err.Error(), "objects[1].apiVersion") {
		t.Fatalf("bad candidate: %v", err)
	}
	if v, _ := s.TenantVersion(ctx, tenant); v != 2 {
		t.Fatalf("candidates were written: version %d", v)
	}

	del, err := s.Delete(ctx, tenant, "bob", refVAP, DeleteOptions{ResourceVersion: "1", DryRun: true})
	if err != nil || del.Tombstone.Version != 3 || del.VersionBefore != 1 {
		t.Fatalf("dry-run delete = %+v %d %v", del.Tombstone, del.VersionBefore, err)
	}
	if _, err := s.Get(ctx, tenant, refVAP); err != nil {
		t.Fatalf("a dry-run delete deleted: %v", err)
	}
	if _, err := s.Delete(ctx, tenant, "bob", refVAP, DeleteOptions{ResourceVersion: "2", DryRun: true}); fault.ErrorCode(err) != fault.Conflict {
		t.Fatalf("dry-run delete with a stale version: %v", err)
	}
}

// An apply moves the tenant's version once, with one notification, however
// many documents it holds; each changed document still gets its own
// version and history entry. (Each document used to take a savepoint and
// upsert the head row, which made an apply quadratic and sent one
// notification per document: 6,000 objects were cut off at 60 s.)
func TestApplyAllIsOneHeadMove(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+ChannelPolicies); err != nil {
		t.Fatal(err)
	}
	const n = 500
	params := smallParams(n)
	out, v, err := s.ApplyAll(ctx, tenant, "alice", params, false)
	if err != nil || v != n {
		t.Fatalf("apply = version %d, %v", v, err)
	}
	for i, o := range out {
		if o.Action != ActionCreated || o.Object.ResourceVersion != int64(i+1) {
			t.Fatalf("outcome %d = %s at %d", i, o.Action, o.Object.ResourceVersion)
		}
	}
	// A later single write marks the end of the apply's notifications.
	if _, err := s.Apply(ctx, tenant, "alice", vap(3)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		note, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, note.Payload)
		if note.Payload == fmt.Sprintf("%d:%d", tenant, n+1) {
			break
		}
	}
	if want := []string{fmt.Sprintf("%d:%d", tenant, n), fmt.Sprintf("%d:%d", tenant, n+1)}; !slices.Equal(got, want) {
		t.Fatalf("notifications = %v, want %v", got, want)
	}
	h, err := s.History(ctx, tenant, Ref{Kind: "ConfigMap", Namespace: "prod", Name: "p7"})
	if err != nil || len(h) != 1 || h[0].Version != 8 || h[0].Operation != OpCreate || h[0].Author != "alice" {
		t.Fatalf("history of p7 = %+v, %v", h, err)
	}

	// The same documents again, half of them changed: the unchanged keep
	// their versions, the changed take the next ones in document order.
	for i := 0; i < n; i += 2 {
		params[i] = bytes.Replace(params[i], []byte("max:"), []byte("min:"), 1)
	}
	out, v, err = s.ApplyAll(ctx, tenant, "bob", params, false)
	if err != nil || v != n+1+n/2 {
		t.Fatalf("second apply = version %d, %v", v, err)
	}
	if out[0].Action != ActionConfigured || out[0].Object.ResourceVersion != n+2 || out[0].VersionBefore != 1 ||
		out[1].Action != ActionUnchanged || out[1].Object.ResourceVersion != 2 ||
		out[2].Object.ResourceVersion != n+3 || out[2].Object.Generation != 2 {
		t.Fatalf("second apply = %+v %+v %+v", out[0], out[1], out[2])
	}
	h, err = s.History(ctx, tenant, Ref{Kind: "ConfigMap", Namespace: "prod", Name: "p2"})
	if err != nil || len(h) != 2 || h[0].Operation != OpUpdate || h[0].Author != "bob" || h[1].Version != 3 {
		t.Fatalf("history of p2 = %+v, %v", h, err)
	}
}

// ApplyAndDelete replaces a set of objects with another in one
// transaction: a deletion that fails leaves the apply unwritten too, so the
// tenant never runs half of each set.
func TestApplyAndDeleteIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	if _, _, err := s.ApplyAll(ctx, tenant, "alice", docs(string(vap(5)), bindingYAML, limitsParam), false); err != nil {
		t.Fatal(err)
	}
	refLimits := Ref{Kind: "ConfigMap", Namespace: "prod", Name: "limits"}
	refBinding := Ref{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding", Name: "max-replicas-binding"}
	missing := Ref{Kind: "ConfigMap", Namespace: "prod", Name: "never-there"}

	failures := []struct {
		name string
		dels []Deletion
		code fault.Code
	}{
		{"a deletion of a missing object", []Deletion{{Ref: refLimits}, {Ref: missing}}, fault.NotFound},
		{"a stale precondition", []Deletion{{Ref: refLimits, ResourceVersion: "2"}}, fault.Conflict},
		{"an object both applied and deleted", []Deletion{{Ref: refVAP}}, fault.BadRequest},
	}
	for _, f := range failures {
		for _, dry := range []bool{true, false} {
			_, _, _, err := s.ApplyAndDelete(ctx, tenant, "bob", docs(string(vap(7))), f.dels, dry)
			if fault.ErrorCode(err) != f.code {
				t.Errorf("%s (dry run %v): err = %v, want %s", f.name, dry, err, f.code)
			}
		}
		if v, _ := s.TenantVersion(ctx, tenant); v != 3 {
			t.Fatalf("%s: the tenant's version moved to %d", f.name, v)
		}
		if p, err := s.Get(ctx, tenant, refVAP); err != nil || p.ResourceVersion != 1 {
			t.Fatalf("%s: the apply was written: %+v %v", f.name, p, err)
		}
		if _, err := s.Get(ctx, tenant, refLimits); err != nil {
			t.Fatalf("%s: a deletion was written: %v", f.name, err)
		}
	}

	out, deleted, v, err := s.ApplyAndDelete(ctx, tenant, "bob", docs(string(vap(7))),
		[]Deletion{{Ref: refLimits, ResourceVersion: "3"}, {Ref: refBinding}}, false)
	if err != nil || v != 6 || len(out) != 1 || out[0].Object.ResourceVersion != 4 || len(deleted) != 2 ||
		deleted[0].Tombstone.Version != 5 || deleted[0].VersionBefore != 3 || deleted[1].Tombstone.Version != 6 {
		t.Fatalf("apply and delete = %+v %+v version %d, %v", out, deleted, v, err)
	}
	for _, r := range []Ref{refLimits, refBinding} {
		if _, err := s.Get(ctx, tenant, r); fault.ErrorCode(err) != fault.NotFound {
			t.Fatalf("%v after its deletion: %v", r, err)
		}
	}
}
