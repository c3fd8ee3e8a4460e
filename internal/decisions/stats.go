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

// Stats counts the tenant's decisions in time buckets.
func (s *Store) Stats(ctx context.Context, tenantID int64, q StatsQuery) (Stats, error) {
	if err := q.normalize(time.Now()); err != nil {
		return Stats{}, err
	}
	out := Stats{Since: q.Since, Until: q.Until, Bucket: q.Bucket.String()}
	index := map[time.Time]*Bucket{}
	for t := q.Since; t.Before(q.Until); t = t.Add(q.Bucket) {
		out.Buckets = append(out.Buckets, Bucket{Start: t, Verdicts: map[string]int64{},
			DeniedBy: map[string]int64{}, Clusters: map[string]int64{}})
	}
	for i := range out.Buckets {
		index[out.Buckets[i].Start] = &out.Buckets[i]
	}
	args := []any{tenantID, q.Since, q.Until, fmt.Sprintf("%d seconds", int64(q.Bucket/time.Second)), q.Cluster}
	const where = `tenant_id = $1 AND time >= $2 AND time < $3 AND ($5 = '' OR cluster = $5)`
	err := s.readTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT date_bin($4::interval, time, 'epoch'::timestamptz) AS b, verdict, cluster, count(*)
			FROM decisions WHERE `+where+`
			GROUP BY GROUPING SETS ((b, verdict), (b, cluster))`, args...)
		if err != nil {
			return err
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
			return err
		}
		rows, err = tx.Query(ctx, `
			SELECT date_bin($4::interval, time, 'epoch'::timestamptz) AS b, p, count(*)
			FROM decisions, unnest(denied_by) AS p WHERE `+where+`
			GROUP BY b, p`, args...)
		if err != nil {
			return err
		}
		var policy string
		_, err = pgx.ForEachRow(rows, []any{&start, &policy, &n}, func() error {
			if b := index[start.UTC()]; b != nil {
				b.DeniedBy[policy] += n
			}
			return nil
		})
		return err
	})
	return out, err
}
