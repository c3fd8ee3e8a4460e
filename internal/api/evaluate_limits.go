package api

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/limits"
)

// limitEvaluation charges one evaluation of the admin API (POST
// .../evaluate, and so the web UI's Test page) to the tenant's limits, as
// the webhook charges a request: it counts against the rate, holds one of
// the tenant's evaluation slots until release, and the options it returns
// bound the CEL cost. Its source is limits.AdminAPI, held to a cluster's
// share, so that evaluations in a loop never take more than half of what
// the tenant's clusters may use. A refusal is a 429 with Retry-After.
// Without a limiter (tests of other routes) nothing is limited.
func (s *Server) limitEvaluation(ctx context.Context, c *call) (release func(), _ []evaluator.Option, _ error) {
	if s.Limiter == nil {
		return func() {}, nil, nil
	}
	tenantID := c.tenant.ID
	if wait, _, err := s.Limiter.Admit(tenantID, limits.AdminAPI); err != nil {
		retryAfter(c, wait)
		return nil, nil, err
	}
	release, _, err := s.Limiter.Acquire(ctx, tenantID, limits.AdminAPI)
	if err != nil {
		retryAfter(c, time.Second)
		return nil, nil, err
	}
	return release, []evaluator.Option{evaluator.WithCostLimit(s.Limiter.CostLimit(tenantID))}, nil
}

func retryAfter(c *call, wait time.Duration) {
	c.w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
}
