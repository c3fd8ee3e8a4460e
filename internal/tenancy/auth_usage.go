package tenancy

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// usage records the last successful use, carried from snapshot to snapshot.
type usage struct {
	last    atomic.Int64 // unix nanoseconds
	flushed atomic.Int64
}

// FlushUsage writes last_used_at for every credential used since the last
// flush, in one statement. Run calls it periodically.
func (a *Authenticator) FlushUsage(ctx context.Context) error {
	s := a.snap.Load()
	if s == nil {
		return nil
	}
	var ids []int64
	var times []time.Time
	var pending []*usage
	var marks []int64
	for id, e := range s.byID {
		last := e.usage.last.Load()
		if last != 0 && last != e.usage.flushed.Load() {
			ids = append(ids, id)
			times = append(times, time.Unix(0, last))
			pending = append(pending, e.usage)
			marks = append(marks, last)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := a.pool.Exec(ctx, `
		UPDATE credentials c SET last_used_at = u.t
		FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, t)
		WHERE c.id = u.id AND (c.last_used_at IS NULL OR c.last_used_at < u.t)`, ids, times)
	if err != nil {
		return fmt.Errorf("flush last_used_at: %w", err)
	}
	for i, u := range pending {
		u.flushed.Store(marks[i])
	}
	return nil
}
