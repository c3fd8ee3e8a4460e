package policystore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// baselineDocs returns the evaluator's baseline set: 10 policies and their
// 10 bindings, one YAML document each.
func baselineDocs(tb testing.TB) [][]byte {
	tb.Helper()
	var docs [][]byte
	for _, f := range []string{"policies.yaml", "bindings.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "samples", "baseline", f))
		if err != nil {
			tb.Fatal(err)
		}
		for _, d := range strings.Split(string(b), "\n---") {
			if strings.Contains(d, "kind:") {
				docs = append(docs, []byte(d))
			}
		}
	}
	return docs
}

// seedBaseline writes the baseline set for a new tenant through Apply.
func seedBaseline(tb testing.TB, s *Store) int64 {
	tb.Helper()
	tenant := pgtest.InsertTenant(tb, s.pool)
	for i, d := range baselineDocs(tb) {
		if _, err := s.Apply(context.Background(), tenant, "bench", d); err != nil {
			tb.Fatalf("baseline doc %d: %v", i, err)
		}
	}
	return tenant
}

// The baseline policies pass write validation, and the snapshot compiles
// them without errors.
func TestBaselineAcceptedAndCompiled(t *testing.T) {
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := seedBaseline(t, s)
	c, err := NewCache(s, CacheConfig{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.load(tenant)
	if err != nil {
		t.Fatal(err)
	}
	st := snap.Compiled.Stats()
	if st.Policies != 10 || st.Bindings != 10 || st.CompileErrors != 0 || snap.Version != 20 {
		t.Fatalf("stats %+v version %d", st, snap.Version)
	}
}

func BenchmarkCacheHit(b *testing.B) {
	pool := pgtest.Pool(b)
	s := New(pool)
	tenant := seedBaseline(b, s)
	c, err := NewCache(s, CacheConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Snapshot(ctx, tenant); err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Snapshot(ctx, tenant); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Snapshot(ctx, tenant); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// A cold load: read the tenant's version and objects from Postgres in one
// transaction, decode and compile the 10 baseline policies and bindings.
func BenchmarkColdLoadCompile10Policies(b *testing.B) {
	pool := pgtest.Pool(b)
	s := New(pool)
	tenant := seedBaseline(b, s)
	c, err := NewCache(s, CacheConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.Invalidate(tenant)
		if _, err := c.load(tenant); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeapPerTenant compiles many copies of the 10-policy tenant, keeps
// them all, and reports the live heap each holds (after GC), the cache's
// estimate for it, and the extrapolation to 10,000 warm tenants: "shared"
// when the tenants have the same policies, "unique" when every expression
// of every tenant differs (a comment appended), so nothing is shared.
func BenchmarkHeapPerTenant(b *testing.B) {
	for _, unique := range []bool{false, true} {
		name := "shared"
		if unique {
			name = "unique"
		}
		b.Run(name, func(b *testing.B) { benchHeapPerTenant(b, unique) })
	}
}

// uniqueExpressions appends a comment naming the tenant to every
// expression of a policy.
func uniqueExpressions(v any, tenant int) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expression" || k == "messageExpression" || k == "valueExpression") {
				v[k] = s + fmt.Sprintf("\n// tenant %d", tenant)
				continue
			}
			uniqueExpressions(x, tenant)
		}
	case []any:
		for _, x := range v {
			uniqueExpressions(x, tenant)
		}
	}
}

func benchHeapPerTenant(b *testing.B, unique bool) {
	var objs []*unstructured.Unstructured
	size := 0
	for _, d := range baselineDocs(b) {
		js, err := yaml.YAMLToJSON(d)
		if err != nil {
			b.Fatal(err)
		}
		size += len(js)
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			b.Fatal(err)
		}
		objs = append(objs, u)
	}
	const n = 200
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		kept := make([]*Snapshot, n)
		for i := range kept {
			// Each tenant decodes its own objects, as a load from the
			// database does.
			own := make([]*unstructured.Unstructured, len(objs))
			for j, o := range objs {
				own[j] = o.DeepCopy()
				if unique {
					uniqueExpressions(own[j].Object, i)
				}
			}
			compiled, err := compileObjects(context.Background(), own)
			if err != nil {
				b.Fatal(err)
			}
			kept[i] = &Snapshot{Compiled: compiled, Bytes: estimateBytes(compiled, size)}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(after.HeapAlloc-before.HeapAlloc) / n
		b.ReportMetric(per, "heap-bytes/tenant")
		b.ReportMetric(float64(kept[0].Bytes), "estimated-bytes/tenant")
		b.ReportMetric(per*10_000/(1<<30), "GiB/10k-tenants")
		runtime.KeepAlive(kept)
	}
}

// smallParams returns n small ConfigMaps, one YAML document each: the shape
// of a large apply of params.
func smallParams(n int) [][]byte {
	docs := make([][]byte, n)
	for i := range docs {
		docs[i] = fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p%d, namespace: prod}\ndata: {max: \"%d\"}\n", i, i)
	}
	return docs
}

// BenchmarkApplyAll applies n new small objects in one apply, then the same
// n again changed. Time per document must not grow with n (it grew
// linearly, so the apply quadratically, while each document upserted the
// head row and took a savepoint: 1,000 objects 2.7 s, 2,000 10.5 s).
func BenchmarkApplyAll(b *testing.B) {
	pool := pgtest.Pool(b)
	s := New(pool)
	ctx := context.Background()
	for _, n := range []int{1000, 2000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			docs := smallParams(n)
			changed := make([][]byte, n)
			for i, d := range docs {
				changed[i] = bytes.Replace(d, []byte("max:"), []byte("min:"), 1)
			}
			for b.Loop() {
				tenant := pgtest.InsertTenant(b, pool)
				for _, ds := range [][][]byte{docs, changed} {
					if _, _, err := s.ApplyAll(ctx, tenant, "bench", ds, false); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*n*b.N), "µs/doc")
		})
	}
}
