package decisions

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// seed stores, for tenant 1, 100 decisions one minute apart ending at
// end: every 4th denied by "no-latest" in cluster "dev", every 10th by
// user bob in namespace "kube-system"; and 30 decisions of tenant 2.
func seed(t *testing.T, f *fixture, end time.Time) {
	t.Helper()
	var ds []*Decision
	for i := range 100 {
		d := decision(end.Add(-time.Duration(i) * time.Minute))
		if i%4 == 0 {
			denied(d, "no-latest")
			d.ClusterName = "dev"
		}
		if i%10 == 0 {
			d.UserName, d.Namespace, d.Kind = "bob", "kube-system", "Deployment"
		}
		ds = append(ds, d)
	}
	for i := range 30 {
		d := denied(decision(end.Add(-time.Duration(i)*time.Minute)), "no-latest")
		d.TenantID, d.TenantName = 2, "globex"
		ds = append(ds, d)
	}
	f.insert(t, ds...)
}

func TestListFilters(t *testing.T) {
	f := newFixture(t)
	end := time.Now().UTC().Truncate(time.Minute)
	seed(t, f, end)
	s := NewStore(f.pool)
	for _, tt := range []struct {
		name   string
		tenant int64
		f      Filter
		want   int
	}{
		{name: "all of tenant 1", tenant: 1, f: Filter{Limit: 500}, want: 100},
		{name: "all of tenant 2", tenant: 2, f: Filter{Limit: 500}, want: 30},
		{name: "unknown tenant", tenant: 3, f: Filter{}, want: 0},
		{name: "denied", tenant: 1, f: Filter{Verdict: "denied", Limit: 500}, want: 25},
		{name: "allowed", tenant: 1, f: Filter{Verdict: "allowed", Limit: 500}, want: 75},
		{name: "cluster", tenant: 1, f: Filter{Cluster: "dev", Limit: 500}, want: 25},
		{name: "policy", tenant: 1, f: Filter{Policy: "no-latest", Limit: 500}, want: 25},
		{name: "policy matched by every decision", tenant: 1, f: Filter{Policy: "require-team", Limit: 500}, want: 100},
		{name: "policy of nobody", tenant: 1, f: Filter{Policy: "nope"}, want: 0},
		{name: "namespace", tenant: 1, f: Filter{Namespace: "kube-system", Limit: 500}, want: 10},
		{name: "kind", tenant: 1, f: Filter{Kind: "Deployment", Limit: 500}, want: 10},
		{name: "user", tenant: 1, f: Filter{User: "bob", Limit: 500}, want: 10},
		{name: "user and verdict", tenant: 1, f: Filter{User: "bob", Verdict: "denied", Limit: 500}, want: 5},
		{name: "operation", tenant: 1, f: Filter{Operation: "CREATE", Limit: 500}, want: 100},
		{name: "operation of nothing", tenant: 1, f: Filter{Operation: "DELETE", Limit: 500}, want: 0},
		{name: "resource", tenant: 1, f: Filter{Resource: "pods", Limit: 500}, want: 100},
		{name: "resource of nothing", tenant: 1, f: Filter{Resource: "deployments", Limit: 500}, want: 0},
		{name: "since (inclusive)", tenant: 1, f: Filter{Since: end.Add(-9 * time.Minute), Limit: 500}, want: 10},
		{name: "until (exclusive)", tenant: 1, f: Filter{Until: end.Add(-89 * time.Minute), Limit: 500}, want: 10},
		{name: "window", tenant: 1, f: Filter{Since: end.Add(-20 * time.Minute), Until: end.Add(-10 * time.Minute), Limit: 500}, want: 10},
		{name: "default limit", tenant: 1, f: Filter{}, want: DefaultLimit},
		{name: "tenant 2 never sees tenant 1's cluster", tenant: 2, f: Filter{Cluster: "dev"}, want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			page, err := s.List(context.Background(), tt.tenant, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != tt.want {
				t.Fatalf("%d items, want %d", len(page.Items), tt.want)
			}
			for i, r := range page.Items {
				if tt.tenant == 2 && r.Tenant != "globex" || tt.tenant == 1 && r.Tenant != "acme" {
					t.Fatalf("tenant %d sees a decision of %s", tt.tenant, r.Tenant)
				}
				if i > 0 && r.Time.After(page.Items[i-1].Time) {
					t.Fatal("not newest first")
				}
			}
		})
	}
}

// Paging with the cursor visits every decision once, whatever the page
// size, including decisions that share a timestamp.
func TestListPaging(t *testing.T) {
	f := newFixture(t)
	end := time.Now().UTC().Truncate(time.Minute)
	seed(t, f, end)
	// Ten more at exactly the same time.
	for range 10 {
		f.insert(t, decision(end.Add(-30*time.Minute)))
	}
	s := NewStore(f.pool)
	all, err := s.List(context.Background(), 1, Filter{Limit: MaxLimit})
	if err != nil || len(all.Items) != 110 || all.Continue != "" {
		t.Fatalf("one page: %d items, continue %q, %v", len(all.Items), all.Continue, err)
	}
	for _, size := range []int{1, 7, 50, 109} {
		var ids []string
		cur := ""
		for pages := 0; ; pages++ {
			page, err := s.List(context.Background(), 1, Filter{Limit: size, Cursor: cur})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Items {
				ids = append(ids, r.ID)
			}
			if page.Continue == "" {
				break
			}
			cur = page.Continue
			if pages > 200 {
				t.Fatal("paging does not end")
			}
		}
		var want []string
		for _, r := range all.Items {
			want = append(want, r.ID)
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("page size %d: %d ids, differ from the single page", size, len(ids))
		}
	}
	// A cursor of tenant 1 gives tenant 2 only its own rows.
	p1, _ := s.List(context.Background(), 1, Filter{Limit: 1})
	p2, err := s.List(context.Background(), 2, Filter{Limit: 500, Cursor: p1.Continue})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p2.Items {
		if r.Tenant != "globex" {
			t.Fatal("tenant 2 sees tenant 1's rows through a cursor")
		}
	}
}

func TestListValidation(t *testing.T) {
	s := NewStore(nil) // refused before any query
	now := time.Now()
	for _, tt := range []struct {
		f     Filter
		field string
	}{
		{Filter{Cursor: "garbage!"}, "continue"},
		{Filter{Cursor: "eyJ0IjoiMjAyNi0xMS0yM1QxMzowMDowMFoiLCJpIjoibm9wZSJ9"}, "continue"},
		{Filter{Since: now, Until: now.Add(-time.Hour)}, "since"},
		{Filter{Verdict: "maybe"}, "verdict"},
		{Filter{Limit: MaxLimit + 1}, "limit"},
		{Filter{Limit: -1}, "limit"},
	} {
		_, err := s.List(context.Background(), 1, tt.f)
		var e *fault.Error
		if !errors.As(err, &e) || e.Code != fault.Invalid || len(e.Causes) != 1 || e.Causes[0].Field != tt.field {
			t.Errorf("List(%+v) = %v, want an invalid %s", tt.f, err, tt.field)
		}
	}
	for _, q := range []StatsQuery{
		{Bucket: 30 * time.Second},
		{Bucket: 90 * time.Second},
		{Since: now.Add(-48 * time.Hour), Bucket: time.Minute},
		{Since: now, Until: now.Add(-time.Hour)},
	} {
		_, err := s.Stats(context.Background(), 1, q)
		if fault.ErrorCode(err) != fault.Invalid {
			t.Errorf("Stats(%+v) = %v, want invalid", q, err)
		}
	}
}

func TestStats(t *testing.T) {
	f := newFixture(t)
	end := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	seed(t, f, end.Add(-time.Minute)) // 100 decisions over [10:20, 11:59]
	s := NewStore(f.pool)
	st, err := s.Stats(context.Background(), 1, StatsQuery{Since: end.Add(-3 * time.Hour), Until: end, Bucket: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Buckets) != 3 || !st.Buckets[0].Start.Equal(end.Add(-3*time.Hour)) {
		t.Fatalf("buckets: %+v", st.Buckets)
	}
	// 11:00-11:59 holds i = 0..59; 10:20-10:59 holds i = 60..99.
	b9, b10, b11 := st.Buckets[0], st.Buckets[1], st.Buckets[2]
	if b9.Total != 0 || b10.Total != 40 || b11.Total != 60 {
		t.Fatalf("totals %d %d %d, want 0 40 60", b9.Total, b10.Total, b11.Total)
	}
	if b11.Verdicts["denied"] != 15 || b11.Verdicts["allowed"] != 45 || b10.Verdicts["denied"] != 10 {
		t.Fatalf("verdicts %v %v", b10.Verdicts, b11.Verdicts)
	}
	if b11.DeniedBy["no-latest"] != 15 || len(b11.DeniedBy) != 1 {
		t.Fatalf("deniedBy %v", b11.DeniedBy)
	}
	if b11.Clusters["dev"] != 15 || b11.Clusters["prod"] != 45 {
		t.Fatalf("clusters %v", b11.Clusters)
	}
	// Tenant 2 sees only its own 30.
	st2, err := s.Stats(context.Background(), 2, StatsQuery{Since: end.Add(-3 * time.Hour), Until: end, Bucket: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, b := range st2.Buckets {
		total += b.Total
	}
	if total != 30 {
		t.Fatalf("tenant 2 total %d, want 30", total)
	}
	// Minute buckets and a cluster filter.
	st, err = s.Stats(context.Background(), 1, StatsQuery{Since: end.Add(-10 * time.Minute), Until: end, Bucket: time.Minute, Cluster: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	total = 0
	for _, b := range st.Buckets {
		total += b.Total
	}
	if len(st.Buckets) != 10 || total != 3 {
		t.Fatalf("%d minute buckets, %d in dev; want 10 and 3", len(st.Buckets), total)
	}
	// A size that does not divide an hour: Go and date_bin agree on the
	// bucket starts, so no decision falls outside them.
	st, err = s.Stats(context.Background(), 1, StatsQuery{Since: end.Add(-100 * time.Minute), Until: end, Bucket: 7 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	total = 0
	for _, b := range st.Buckets {
		total += b.Total
		if b.Total > 7 || b.Start.Unix()%(7*60) != 0 {
			t.Fatalf("bucket %+v", b)
		}
	}
	if total != 100 {
		t.Fatalf("7m buckets hold %d decisions, want 100", total)
	}
}

// List and Stats give up after the store's timeout, in the database, even
// waiting for a lock.
func TestQueriesAreBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.insert(t, decision(time.Now()))
	s := NewStore(f.pool)
	s.timeout = 300 * time.Millisecond
	locker, err := f.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Release()
	if _, err := locker.Exec(ctx, "BEGIN; LOCK TABLE decisions IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = locker.Exec(ctx, "ROLLBACK") }()
	for name, query := range map[string]func(context.Context) error{
		"List":  func(ctx context.Context) error { _, err := s.List(ctx, 1, Filter{Cluster: "prod"}); return err },
		"Stats": func(ctx context.Context) error { _, err := s.Stats(ctx, 1, StatsQuery{}); return err },
	} {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		err := query(qctx)
		cancel()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || time.Since(start) > 3*time.Second {
			t.Errorf("%s behind a lock: %v after %s; want a statement timeout (57014) within the store's timeout", name, err, time.Since(start))
		}
	}
}

// A /mutate decision keeps its patch (cut at MaxPatchBytes, flagged) and
// the policies that mutated, whether the batch was copied or replayed.
func TestRecordMutation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const patch = `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`
	mutated := func(p []byte) *Decision {
		d := decision(time.Now())
		d.Endpoint, d.Patch = EndpointMutate, p
		d.Bindings = []BindingRecord{
			{Policy: "add-team", Binding: "add-team", Outcome: "Pass", Mutated: true},
			{Policy: "add-team", Binding: "again", Outcome: "Pass", Mutated: true, Reinvoked: true},
			{Policy: "no-op", Binding: "no-op", Outcome: "Pass"},
			{Policy: "skipped", Binding: "skipped", Outcome: OutcomeNotMatched},
		}
		return d
	}
	small := mutated([]byte(patch))
	big := mutated(append(bytes.Repeat([]byte("x"), MaxPatchBytes-1), "€"...))
	preCut := mutated(nil)
	preCut.SetPatch(append(bytes.Repeat([]byte("y"), MaxPatchBytes), "z"...))
	unchanged := mutated(nil)
	validating := decision(time.Now())
	f.insert(t, small, big, preCut)
	if _, err := f.recorder(t).insertOnce(ctx, []*Decision{unchanged, validating}); err != nil {
		t.Fatal(err)
	}
	page, err := NewStore(f.pool).List(ctx, 1, Filter{})
	if err != nil || len(page.Items) != 5 {
		t.Fatal(page, err)
	}
	byID := map[string]Record{}
	for _, r := range page.Items {
		byID[r.ID] = r
	}
	tests := []struct {
		name      string
		d         *Decision
		endpoint  string
		mutated   bool
		mutatedBy []string
		patch     string
		cut       bool
	}{
		{"small patch", small, "mutate", true, []string{"add-team"}, patch, false},
		{"patch over the bound", big, "mutate", true, []string{"add-team"}, strings.Repeat("x", MaxPatchBytes-1), true},
		{"cut by SetPatch", preCut, "mutate", true, []string{"add-team"}, strings.Repeat("y", MaxPatchBytes), true},
		{"nothing changed", unchanged, "mutate", false, []string{"add-team"}, "", false},
		{"validating", validating, "validate", false, []string{}, "", false},
	}
	for _, tt := range tests {
		r := byID[tt.d.ID]
		if r.Endpoint != tt.endpoint || r.Mutated != tt.mutated || !slices.Equal(r.MutatedBy, tt.mutatedBy) || r.Patch != tt.patch || r.PatchTruncated != tt.cut {
			t.Errorf("%s: endpoint %q mutated %v by %q patch %.80q cut %v", tt.name, r.Endpoint, r.Mutated, r.MutatedBy, r.Patch, r.PatchTruncated)
		}
		if tt.endpoint == "mutate" && (!r.Bindings[0].Mutated || r.Bindings[0].Reinvoked || !r.Bindings[1].Reinvoked || r.Bindings[2].Mutated) {
			t.Errorf("%s: bindings %+v", tt.name, r.Bindings)
		}
	}
}
