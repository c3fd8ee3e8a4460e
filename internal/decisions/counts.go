package decisions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The decision counts (decision_counts_minute and _hour, migration 00015)
// are what the stats read instead of the decisions: the writer adds a
// batch's counts in the transaction that writes the batch, so they equal
// counting the decisions table at every commit. Not a trigger: Citus runs
// none on distributed tables. So a release older than the counts writes
// decisions that stay uncounted (docs/decisions.md, "Upgrades").

// countKey is one row of the counts: policy "" counts decisions, a
// policy's name the decisions of that verdict it denied.
type countKey struct {
	tenantID int64
	bucket   int64 // Unix seconds
	cluster  string
	verdict  string
	policy   string
}

// counts of a set of decisions, per minute.
type counts map[countKey]int64

// add counts d as its row stores it: the cluster cleaned, denied_by as
// summarize makes it (each policy once, only from matched bindings).
func (c counts) add(d *Decision) {
	k := countKey{tenantID: d.TenantID, bucket: binStart(d.Time, time.Minute).Unix(),
		cluster: clean(d.ClusterName), verdict: string(d.Verdict)}
	c[k]++
	var seen []string
	for i := range d.Bindings {
		b := &d.Bindings[i]
		if !b.Denied || b.Outcome == OutcomeNotMatched || b.Outcome == OutcomeClusterSkipped {
			continue
		}
		p := clean(b.Policy)
		if slices.Contains(seen, p) {
			continue
		}
		seen = append(seen, p)
		k.policy = p
		c[k]++
	}
}

func countsOf(ds []*Decision) counts {
	c := counts{}
	for _, d := range ds {
		c.add(d)
	}
	return c
}

// per returns the counts in buckets of width (a multiple of a minute).
func (c counts) per(width time.Duration) counts {
	out := make(counts, len(c))
	for k, n := range c {
		k.bucket = binStart(time.Unix(k.bucket, 0), width).Unix()
		out[k] += n
	}
	return out
}

const upsertCountsSQL = `INSERT INTO %s AS c (tenant_id, bucket, cluster, verdict, policy, n)
	SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::bigint[])
	ON CONFLICT (tenant_id, bucket, cluster, verdict, policy) DO UPDATE SET n = c.n + EXCLUDED.n`

// queue adds the upsert of c into table to b. The rows go in key order:
// every writer locks the rows it adds to in the same order, so two
// replicas writing the same tenant's minute wait for each other but
// never deadlock.
func (c counts) queue(b *pgx.Batch, table string) {
	keys := make([]countKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b countKey) int {
		return cmp.Or(cmp.Compare(a.tenantID, b.tenantID), cmp.Compare(a.bucket, b.bucket),
			cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.verdict, b.verdict), cmp.Compare(a.policy, b.policy))
	})
	tenants, clusters, verdicts, policies := make([]int64, len(keys)), make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	buckets, ns := make([]time.Time, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		tenants[i], buckets[i], clusters[i], verdicts[i], policies[i], ns[i] = k.tenantID, time.Unix(k.bucket, 0).UTC(), k.cluster, k.verdict, k.policy, c[k]
	}
	b.Queue(fmt.Sprintf(upsertCountsSQL, table), tenants, buckets, clusters, verdicts, policies, ns)
}

// addCounts adds the counts of ds, which tx has just written, to both
// tables, in one round trip.
func addCounts(ctx context.Context, tx pgx.Tx, ds []*Decision) error {
	if len(ds) == 0 {
		return nil
	}
	minute := countsOf(ds)
	var b pgx.Batch
	minute.queue(&b, "decision_counts_minute")
	minute.per(time.Hour).queue(&b, "decision_counts_hour")
	return tx.SendBatch(ctx, &b).Close()
}

// deleteCountsSQL deletes a table's counts before $1, tenant by tenant
// (tenant_id leads the key, so each is an index range): a plain range
// delete on bucket would read the whole table.
const deleteCountsSQL = `WITH RECURSIVE t(id) AS (
		SELECT min(tenant_id) FROM %[1]s
		UNION ALL
		SELECT (SELECT min(tenant_id) FROM %[1]s WHERE tenant_id > t.id) FROM t WHERE t.id IS NOT NULL)
	DELETE FROM %[1]s c USING t WHERE c.tenant_id = t.id AND c.bucket < $1`

// deleteCounts deletes the counts of the days whose decisions retention
// has dropped: those before cutoff's day, and before the oldest day whose
// partition is still there (one whose drop failed keeps its counts).
func deleteCounts(ctx context.Context, db *pgxpool.Pool, cutoff time.Time) error {
	tables, err := partitionTables(ctx, db)
	if err != nil {
		return err
	}
	end := day(cutoff)
	for _, t := range tables {
		if t.day.Before(end) {
			end = t.day
		}
	}
	for _, table := range []string{"decision_counts_minute", "decision_counts_hour"} {
		if _, err := db.Exec(ctx, fmt.Sprintf(deleteCountsSQL, table), end); err != nil {
			return fmt.Errorf("delete %s before %s: %w", table, end.Format(time.DateOnly), err)
		}
	}
	return nil
}
