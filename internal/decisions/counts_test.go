package decisions

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// The counts the stats read equal counting the decisions table, for
// decisions written by the real writer and by replay (twice), for every
// window and bucket the UI and the API ask, and after retention.
func TestCountsEqualDecisions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	rng := rand.New(rand.NewPCG(1, 2))
	clusters := []string{"prod", "dev", "edge\x00"} // the NUL is cleaned away, as in the row
	verdicts := []Verdict{VerdictAllowed, VerdictDenied, VerdictWarned, VerdictError, VerdictRejected}
	policies := []string{"no-latest", "require-team", "bad\xffname"}
	gen := func(n int) []*Decision {
		var ds []*Decision
		for i := range n {
			// Most in the last hour and day, some over four days, a few in
			// the minute before now.
			age := time.Duration(rng.Int64N(int64(4 * 24 * time.Hour)))
			switch i % 4 {
			case 0:
				age = time.Duration(rng.Int64N(int64(time.Hour)))
			case 1:
				age = time.Duration(rng.Int64N(int64(24 * time.Hour)))
			}
			if i%50 == 0 {
				age = time.Duration(rng.Int64N(int64(time.Minute)))
			}
			d := decision(now.Add(-age))
			d.TenantID = int64(1 + i%2)
			d.ClusterName = clusters[rng.IntN(len(clusters))]
			d.Verdict = verdicts[rng.IntN(len(verdicts))]
			for range rng.IntN(3) {
				p := policies[rng.IntN(len(policies))]
				b := BindingRecord{Policy: p, Binding: p, Outcome: "Violation", Denied: true}
				if rng.IntN(5) == 0 {
					b.Outcome = OutcomeNotMatched // does not count, as in denied_by
				}
				d.Bindings = append(d.Bindings, b)
			}
			ds = append(ds, d)
		}
		return ds
	}

	r := f.recorder(t, func(c *RecorderConfig) { c.BatchRows = 97 })
	written := gen(3000)
	for _, d := range written {
		r.Record(d)
	}
	f.waitRows(t, len(written))
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Replayed decisions count once, however often the file is replayed.
	spilled := gen(500)
	for _, d := range spilled {
		normalize(d)
	}
	// A decision twice in a file is stored, and counted, once.
	writeSpill(t, f.dir, append(slices.Clone(spilled), spilled[:5]...))
	f.reg = prometheus.NewRegistry()
	r = f.recorder(t)
	f.waitRows(t, len(written)+len(spilled))
	writeSpill(t, f.dir, spilled)
	if n, err := r.Replay(ctx); err != nil || n != 0 {
		t.Fatalf("the second replay inserted %d (%v)", n, err)
	}
	rows, err := rowsOf(spilled[:10])
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.insertEach(ctx, spilled[:10], rows); err != nil || n != 0 {
		t.Fatalf("row by row, replay inserted %d (%v)", n, err)
	}

	check := func(when string) {
		t.Helper()
		sameCounts(t, f.pool)
		s := NewStore(f.pool)
		for _, q := range []StatsQuery{
			{Since: now.Add(-time.Hour), Bucket: time.Minute},
			{Since: now.Add(-24 * time.Hour), Bucket: time.Hour},
			{Since: now.Add(-7 * 24 * time.Hour), Bucket: 6 * time.Hour},
			{Since: now.Add(-30 * 24 * time.Hour), Bucket: 24 * time.Hour},
			{Since: now.Add(-24 * time.Hour), Bucket: time.Hour, Cluster: "dev"},
			{Since: now.Add(-5 * 24 * time.Hour), Bucket: 7 * time.Minute * 60},
			{Since: now.Add(-90 * time.Minute), Until: now.Add(-17*time.Minute - 3*time.Second), Bucket: 7 * time.Minute},
			{Since: now.Add(-50 * time.Hour), Until: now.Add(-3*time.Hour - 90*time.Second), Bucket: 2 * time.Hour},
		} {
			for tenant := int64(1); tenant <= 2; tenant++ {
				q.Until = cmpOr(q.Until, now.Add(time.Second))
				got, err := s.Stats(ctx, tenant, q)
				if err != nil {
					t.Fatal(err)
				}
				want := directStats(t, f.pool, tenant, q)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: tenant %d, %+v: the counts' stats differ from counting the decisions:\ngot  %+v\nwant %+v",
						when, tenant, q, got, want)
				}
				if total(got) == 0 && q.Cluster == "" && q.Since.Before(now.Add(-time.Hour)) {
					t.Errorf("%s: tenant %d, %+v: nothing counted; the test checks nothing", when, tenant, q)
				}
			}
		}
	}
	check("written")

	// Retention of two days drops the oldest partitions and their counts.
	p := &Partitions{Pool: f.pool, Retention: 48 * time.Hour, Now: func() time.Time { return now }}
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	var old int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM decision_counts_minute WHERE bucket < $1`, day(now.Add(-48*time.Hour))).Scan(&old); err != nil || old != 0 {
		t.Fatalf("%d minute counts left before the retention (%v)", old, err)
	}
	check("after retention")
}

func cmpOr(t, or time.Time) time.Time {
	if t.IsZero() {
		return or
	}
	return t
}

func total(s Stats) (n int64) {
	for _, b := range s.Buckets {
		n += b.Total
	}
	return n
}

// sameCounts: both count tables hold exactly what grouping the decisions
// gives.
func sameCounts(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for _, width := range []string{"minute", "hour"} {
		direct := fmt.Sprintf(`
			SELECT tenant_id, date_bin('1 %[1]s', time, 'epoch') AS bucket, cluster, verdict, '' AS policy, count(*) AS n FROM decisions GROUP BY 1, 2, 3, 4
			UNION ALL
			SELECT tenant_id, date_bin('1 %[1]s', time, 'epoch'), cluster, verdict, p, count(*) FROM decisions, unnest(denied_by) AS p GROUP BY 1, 2, 3, 4, 5`, width)
		stored := fmt.Sprintf(`SELECT tenant_id, bucket, cluster, verdict, policy, n FROM decision_counts_%s`, width)
		var diff, rows int
		err := pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT
			(SELECT count(*) FROM (((%[1]s) EXCEPT ALL (%[2]s)) UNION ALL ((%[2]s) EXCEPT ALL (%[1]s))) AS d),
			(SELECT count(*) FROM (%[2]s) AS s)`, direct, stored)).Scan(&diff, &rows)
		if err != nil {
			t.Fatal(err)
		}
		if diff != 0 || rows == 0 {
			t.Errorf("decision_counts_%s: %d rows, %d differ from counting the decisions", width, rows, diff)
		}
	}
}

// directStats is Stats counted from the decisions table, as it was before
// the counts: the oracle.
func directStats(t *testing.T, pool *pgxpool.Pool, tenantID int64, q StatsQuery) Stats {
	t.Helper()
	if err := q.normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	out := Stats{Since: q.Since, Until: q.Until, Bucket: q.Bucket.String()}
	index := map[time.Time]*Bucket{}
	for s := q.Since; s.Before(q.Until); s = s.Add(q.Bucket) {
		out.Buckets = append(out.Buckets, Bucket{Start: s, Verdicts: map[string]int64{},
			DeniedBy: map[string]int64{}, Clusters: map[string]int64{}})
	}
	for i := range out.Buckets {
		index[out.Buckets[i].Start] = &out.Buckets[i]
	}
	args := []any{tenantID, q.Since, q.Until, fmt.Sprintf("%d seconds", int64(q.Bucket/time.Second)), q.Cluster}
	const where = `tenant_id = $1 AND time >= $2 AND time < $3 AND ($5 = '' OR cluster = $5)`
	ctx := context.Background()
	rows, err := pool.Query(ctx, `
		SELECT date_bin($4::interval, time, 'epoch'::timestamptz) AS b, verdict, cluster, count(*)
		FROM decisions WHERE `+where+`
		GROUP BY GROUPING SETS ((b, verdict), (b, cluster))`, args...)
	if err != nil {
		t.Fatal(err)
	}
	var start time.Time
	var verdict, cluster *string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&start, &verdict, &cluster, &n}, func() error {
		b := index[start.UTC()]
		switch {
		case b == nil:
		case verdict != nil:
			b.Verdicts[*verdict] += n
			b.Total += n
		case cluster != nil:
			b.Clusters[*cluster] += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err = pool.Query(ctx, `
		SELECT date_bin($4::interval, time, 'epoch'::timestamptz) AS b, p, count(*)
		FROM decisions, unnest(denied_by) AS p WHERE `+where+`
		GROUP BY b, p`, args...)
	if err != nil {
		t.Fatal(err)
	}
	var policy string
	_, err = pgx.ForEachRow(rows, []any{&start, &policy, &n}, func() error {
		if b := index[start.UTC()]; b != nil {
			b.DeniedBy[policy] += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
