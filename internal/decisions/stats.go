package decisions

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// MaxBuckets bounds the buckets one Stats query returns.
const MaxBuckets = 1_000

// StatsQuery selects the window and bucket size of Stats. Until defaults to
// now, Since to 24 buckets before Until, Bucket to one hour. Bucket must be
// a whole number of minutes; buckets start at multiples of it since the
// Unix epoch (UTC), so they are the same whichever window asks.
type StatsQuery struct {
	Since, Until time.Time
	Bucket       time.Duration
	Cluster      string
}

// Stats are a tenant's decision counts per time bucket, oldest first
// (apiv1.DecisionStats on the wire).
// Every bucket of the window is present, empty ones included.
type Stats struct {
	Since   time.Time
	Until   time.Time
	Bucket  string // a Go duration: 1m0s, 1h0m0s, 24h0m0s
	Buckets []Bucket
}

// Bucket counts the decisions of [Start, Start+bucket): by verdict, by the
// policies that denied them (a decision denied by two policies counts for
// both) and by cluster.
type Bucket struct {
	Start    time.Time
	Total    int64
	Verdicts map[string]int64
	DeniedBy map[string]int64
	Clusters map[string]int64
}

func (q *StatsQuery) normalize(now time.Time) error {
	if q.Bucket == 0 {
		q.Bucket = time.Hour
	}
	if q.Bucket < time.Minute || q.Bucket%time.Minute != 0 {
		return fault.InvalidField("bucket", "must be a whole number of minutes, at least 1m")
	}
	if q.Until.IsZero() {
		q.Until = now
	}
	if q.Since.IsZero() {
		q.Since = q.Until.Add(-24 * q.Bucket)
	}
	if err := checkRange(q.Since, q.Until); err != nil {
		return err
	}
	q.Since = binStart(q.Since, q.Bucket)
	q.Until = q.Until.UTC()
	if n := q.Until.Sub(q.Since) / q.Bucket; n >= MaxBuckets {
		return fault.InvalidField("bucket", "the window holds %d buckets; at most %d: widen the bucket or narrow the window", n+1, MaxBuckets)
	}
	return nil
}

// binStart is the start of t's bucket, counted from the Unix epoch as
// date_bin(bucket, t, 'epoch') does.
func binStart(t time.Time, bucket time.Duration) time.Time {
	sec, b := t.Unix(), int64(bucket/time.Second)
	start := sec - sec%b
	if sec%b < 0 {
		start -= b
	}
	return time.Unix(start, 0).UTC()
}

// Stats counts the tenant's decisions in time buckets. It reads the
// decision counts (counts.go): whole hours from the hourly table when the
// bucket is a number of hours, whole minutes from the minute table, and
// only the minute Until falls in from the decisions themselves.
func (s *Store) Stats(ctx context.Context, tenantID int64, q StatsQuery) (Stats, error) {
	if err := q.normalize(time.Now()); err != nil {
		return Stats{}, err
	}
	out := emptyStats(q)
	index := map[time.Time]*Bucket{}
	for i := range out.Buckets {
		index[out.Buckets[i].Start] = &out.Buckets[i]
	}
	err := s.readTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, countsSQL("tenant_id = $1"), countsArgs(tenantID, q)...)
		if err != nil {
			return err
		}
		var start time.Time
		var cluster, verdict, policy string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&start, &cluster, &verdict, &policy, &n}, func() error {
			if b := index[start.UTC()]; b != nil {
				b.add(cluster, verdict, policy, n)
			}
			return nil
		})
		return err
	})
	return out, err
}

// emptyStats has every bucket of q's window, empty.
func emptyStats(q StatsQuery) Stats {
	out := Stats{Since: q.Since, Until: q.Until, Bucket: q.Bucket.String()}
	for t := q.Since; t.Before(q.Until); t = t.Add(q.Bucket) {
		out.Buckets = append(out.Buckets, Bucket{Start: t, Verdicts: map[string]int64{},
			DeniedBy: map[string]int64{}, Clusters: map[string]int64{}})
	}
	return out
}

// add counts n decisions of a row of countsSQL.
func (b *Bucket) add(cluster, verdict, policy string, n int64) {
	if policy != "" {
		b.DeniedBy[policy] += n
		return
	}
	b.Verdicts[verdict] += n
	b.Clusters[cluster] += n
	b.Total += n
}

// countsSQL counts decisions by bucket ($4), cluster, verdict and denying
// policy (the empty string for all decisions) in [$2, $3), where the
// tenant condition holds. Its parts do not overlap: hours [$2, $6),
// minutes [$6, $7), and decisions [$7, $3). One statement reads them all,
// so one snapshot.
func countsSQL(tenant string) string {
	return `SELECT date_bin($4::interval, b, 'epoch'::timestamptz) AS bin, cluster, verdict, policy, sum(n)::bigint
		FROM (
			SELECT bucket AS b, cluster, verdict, policy, n FROM decision_counts_hour
			WHERE ` + tenant + ` AND bucket >= $2 AND bucket < $6 AND ($5 = '' OR cluster = $5)
			UNION ALL
			SELECT bucket, cluster, verdict, policy, n FROM decision_counts_minute
			WHERE ` + tenant + ` AND bucket >= $6 AND bucket < $7 AND ($5 = '' OR cluster = $5)
			UNION ALL
			SELECT time, cluster, verdict, '', 1 FROM decisions
			WHERE ` + tenant + ` AND time >= $7 AND time < $3 AND ($5 = '' OR cluster = $5)
			UNION ALL
			SELECT time, cluster, verdict, p, 1 FROM decisions, unnest(denied_by) AS p
			WHERE ` + tenant + ` AND time >= $7 AND time < $3 AND ($5 = '' OR cluster = $5)
		) AS x
		GROUP BY bin, cluster, verdict, policy`
}

// countsArgs are $2 to $7 of countsSQL for q (normalized), after first.
func countsArgs(first any, q StatsQuery) []any {
	minutes := binStart(q.Until, time.Minute) // after q.Since, which is whole minutes
	hours := q.Since                          // no hours unless the bucket is whole hours
	if q.Bucket%time.Hour == 0 {
		hours = binStart(minutes, time.Hour) // after q.Since, which is whole hours
	}
	return []any{first, q.Since, q.Until, fmt.Sprintf("%d seconds", int64(q.Bucket/time.Second)), q.Cluster, hours, minutes}
}
