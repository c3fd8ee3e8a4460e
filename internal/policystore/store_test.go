package policystore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

var refVAP = Ref{Group: GroupAdmission, Kind: "ValidatingAdmissionPolicy", Name: "max-replicas"}

func TestWriteVersionConflictRollbackTombstone(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)

	// Create: version 1, generation 1, server metadata set.
	o1, err := s.Apply(ctx, tenant, "alice", vap(5))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if o1.ResourceVersion != 1 || o1.Generation != 1 || o1.UID == "" || o1.Object.GetResourceVersion() != "1" {
		t.Fatalf("create: rv=%d gen=%d uid=%q meta rv=%q", o1.ResourceVersion, o1.Generation, o1.UID, o1.Object.GetResourceVersion())
	}
	// Applying the same object again writes nothing.
	same, err := s.Apply(ctx, tenant, "alice", vap(5))
	if err != nil || same.ResourceVersion != 1 {
		t.Fatalf("no-op apply: rv=%v err=%v", same, err)
	}
	// Update with the current resourceVersion: version 2, same uid.
	withRV := strings.Replace(string(vap(10)), "  name: max-replicas\n", "  name: max-replicas\n  resourceVersion: \"1\"\n", 1)
	o2, err := s.Apply(ctx, tenant, "bob", []byte(withRV))
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if o2.ResourceVersion != 2 || o2.Generation != 2 || o2.UID != o1.UID {
		t.Fatalf("update: rv=%d gen=%d uid=%q (was %q)", o2.ResourceVersion, o2.Generation, o2.UID, o1.UID)
	}
	// The same stale resourceVersion again conflicts, and changes nothing.
	_, err = s.Apply(ctx, tenant, "carol", []byte(strings.Replace(withRV, "<= 10", "<= 11", 1)))
	if fault.ErrorCode(err) != fault.Conflict {
		t.Fatalf("stale update: err=%v, want conflict", err)
	}
	if v, _ := s.TenantVersion(ctx, tenant); v != 2 {
		t.Fatalf("tenant version after conflict = %d, want 2", v)
	}
	// An apply without resourceVersion is last-writer-wins.
	if _, err := s.Apply(ctx, tenant, "carol", vap(20)); err != nil {
		t.Fatalf("update without rv: %v", err)
	}

	// Rollback to version 1: a new version (4) equal to version 1.
	r4, err := s.Rollback(ctx, tenant, "dave", refVAP, RollbackOptions{ToVersion: 1})
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	o4 := r4.Object
	if r4.VersionBefore != 3 {
		t.Fatalf("rollback: version before = %d, want 3", r4.VersionBefore)
	}
	if o4.ResourceVersion != 4 || !strings.Contains(mustJSON(t, o4.Object), "object.spec.replicas \\u003c= 5") &&
		!strings.Contains(mustJSON(t, o4.Object), "object.spec.replicas <= 5") {
		t.Fatalf("rollback: rv=%d obj=%s", o4.ResourceVersion, mustJSON(t, o4.Object))
	}
	// Rollback with a stale precondition conflicts.
	if _, err := s.Rollback(ctx, tenant, "dave", refVAP, RollbackOptions{ToVersion: 2, ResourceVersion: "3"}); fault.ErrorCode(err) != fault.Conflict {
		t.Fatalf("stale rollback: err=%v, want conflict", err)
	}

	// Delete with a stale precondition conflicts; with the right one it
	// writes a tombstone.
	if _, err := s.Delete(ctx, tenant, "erin", refVAP, DeleteOptions{ResourceVersion: "2"}); fault.ErrorCode(err) != fault.Conflict {
		t.Fatalf("stale delete: err=%v, want conflict", err)
	}
	del, err := s.Delete(ctx, tenant, "erin", refVAP, DeleteOptions{ResourceVersion: "4"})
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	tomb := del.Tombstone
	if del.VersionBefore != 4 {
		t.Fatalf("delete: version before = %d, want 4", del.VersionBefore)
	}
	if tomb.Version != 5 || tomb.Operation != OpDelete || tomb.Object != nil {
		t.Fatalf("tombstone = %+v", tomb)
	}
	if _, err := s.Get(ctx, tenant, refVAP); fault.ErrorCode(err) != fault.NotFound {
		t.Fatalf("get after delete: err=%v, want not found", err)
	}
	if _, err := s.Delete(ctx, tenant, "erin", refVAP, DeleteOptions{}); fault.ErrorCode(err) != fault.NotFound {
		t.Fatalf("second delete: err=%v, want not found", err)
	}
	// An update that names a resourceVersion cannot resurrect a deleted object.
	if _, err := s.Apply(ctx, tenant, "bob", []byte(withRV)); fault.ErrorCode(err) != fault.Conflict {
		t.Fatalf("update of deleted: err=%v, want conflict", err)
	}

	// History keeps everything, newest first.
	hist, err := s.History(ctx, tenant, refVAP)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hist {
		got = append(got, h.Operation+":"+h.Author)
	}
	want := "delete:erin rollback:dave update:carol update:bob create:alice"
	if strings.Join(got, " ") != want {
		t.Fatalf("history = %q, want %q", strings.Join(got, " "), want)
	}
	if hist[1].RollbackOf != 1 {
		t.Fatalf("rollback_of = %d, want 1", hist[1].RollbackOf)
	}
	v2, err := s.GetVersion(ctx, tenant, refVAP, 2)
	if err != nil || !strings.Contains(mustJSON(t, v2.Object), "10") {
		t.Fatalf("version 2: %v %v", v2, err)
	}
	if _, err := s.Rollback(ctx, tenant, "x", refVAP, RollbackOptions{ToVersion: 5}); fault.ErrorCode(err) != fault.Invalid {
		t.Fatalf("rollback to tombstone: err=%v, want invalid", err)
	}

	// Rolling back a deleted object recreates it with a new uid.
	r7, err := s.Rollback(ctx, tenant, "frank", refVAP, RollbackOptions{ToVersion: 2})
	if err != nil {
		t.Fatalf("rollback after delete: %v", err)
	}
	o7 := r7.Object
	if r7.VersionBefore != 0 {
		t.Fatalf("rollback after delete: version before = %d, want 0", r7.VersionBefore)
	}
	if o7.UID == o1.UID || o7.Generation != 1 || o7.ResourceVersion != 6 {
		t.Fatalf("recreated: uid=%q gen=%d rv=%d", o7.UID, o7.Generation, o7.ResourceVersion)
	}

	// Versions are immutable in the database too.
	if _, err := pool.Exec(ctx, `UPDATE policy_versions SET author = 'mallory' WHERE tenant_id = $1`, tenant); err == nil {
		t.Fatal("UPDATE of policy_versions succeeded")
	}
}

func TestTenantIsolationAndNotFound(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	a, b := pgtest.InsertTenant(t, pool), pgtest.InsertTenant(t, pool)
	if _, err := s.Apply(ctx, a, "alice", vap(5)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
	}{
		{"get of another tenant's object", func() error { _, err := s.Get(ctx, b, refVAP); return err }()},
		{"history of another tenant's object", func() error { _, err := s.History(ctx, b, refVAP); return err }()},
		{"version of another tenant's object", func() error { _, err := s.GetVersion(ctx, b, refVAP, 1); return err }()},
		{"delete of another tenant's object", func() error { _, err := s.Delete(ctx, b, "x", refVAP, DeleteOptions{}); return err }()},
		{"rollback of another tenant's object", func() error { _, err := s.Rollback(ctx, b, "x", refVAP, RollbackOptions{ToVersion: 1}); return err }()},
		{"write for a tenant that does not exist", func() error { _, err := s.Apply(ctx, 999999, "x", vap(1)); return err }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if fault.ErrorCode(tt.err) != fault.NotFound {
				t.Fatalf("err = %v, want not found", tt.err)
			}
		})
	}
	if list, err := s.List(ctx, b, ListOptions{}); err != nil || len(list) != 0 {
		t.Fatalf("tenant b lists %d objects (err %v)", len(list), err)
	}
}

func TestParamsAndList(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	docs := []string{
		vapYAML,
		bindingYAML,
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limits, namespace: prod, labels: {env: prod}}\ndata: {max: \"3\"}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limits, namespace: dev, labels: {env: dev}}\ndata: {max: \"9\"}\n",
		"apiVersion: example.com/v1alpha1\nkind: ReplicaLimit\nmetadata: {name: global}\nspec: {max: 4, anything: [1, 2]}\n",
		`{"apiVersion":"example.com/v2","kind":"ReplicaLimit","metadata":{"name":"global"},"spec":{"max":5}}`,
	}
	for i, d := range docs {
		if strings.Contains(d, "%d") {
			d = string(vap(3))
		}
		if _, err := s.Apply(ctx, tenant, "alice", []byte(d)); err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
	}
	tests := []struct {
		name string
		opts ListOptions
		want []string
	}{
		{"everything", ListOptions{}, []string{"ConfigMap dev/limits", "ConfigMap prod/limits",
			"ValidatingAdmissionPolicy.admissionregistration.k8s.io max-replicas",
			"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io max-replicas-binding",
			"ReplicaLimit.example.com global"}},
		{"one kind", ListOptions{Group: "", Kind: "ConfigMap"}, []string{"ConfigMap dev/limits", "ConfigMap prod/limits"}},
		{"one namespace", ListOptions{Namespace: "prod"}, []string{"ConfigMap prod/limits"}},
		{"label selector", ListOptions{LabelSelector: "env in (prod, staging)"}, []string{"ConfigMap prod/limits"}},
		{"label existence", ListOptions{LabelSelector: "team"}, []string{"ValidatingAdmissionPolicy.admissionregistration.k8s.io max-replicas"}},
		{"a param written as two versions is one object", ListOptions{Group: "example.com"}, []string{"ReplicaLimit.example.com global"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := s.List(ctx, tenant, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range list {
				got = append(got, o.Ref.String())
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
	o, err := s.Get(ctx, tenant, Ref{Group: "example.com", Kind: "ReplicaLimit", Name: "global"})
	if err != nil || o.APIVersion != "example.com/v2" || o.ResourceVersion != 6 {
		t.Fatalf("param: %+v %v", o, err)
	}
	if _, err := s.List(ctx, tenant, ListOptions{LabelSelector: "env in (("}); fault.ErrorCode(err) != fault.Invalid {
		t.Fatalf("bad selector: %v", err)
	}
}

func mustJSON(t *testing.T, o interface{ MarshalJSON() ([]byte, error) }) string {
	t.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var _ = errors.New
