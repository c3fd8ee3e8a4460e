package webhook

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// limit takes one of the tenant's evaluation slots (within the cluster's
// share) and says its CEL cost limit per request (0: none); a refusal
// names the limit.
func (h *Handler) limit(ctx context.Context, id tenancy.Identity) (release func(), costLimit int64, limit string, _ error) {
	if h.Limits == nil {
		return func() {}, 0, "", nil
	}
	tenantID := id.TenantID
	release, limit, err := h.Limits.Acquire(ctx, tenantID, id.ClusterID)
	if err != nil {
		return nil, 0, limit, err
	}
	return release, h.Limits.CostLimit(tenantID), "", nil
}

// refuse answers a request over a tenant limit (or its cluster's share of
// one): 429 with Retry-After, so that the apiserver's failurePolicy for
// the webhook decides.
func (h *Handler) refuse(w http.ResponseWriter, d *decisions.Decision, limit string, wait time.Duration, err error) {
	h.Metrics.limited.WithLabelValues(h.Metrics.tenantLabel(d.TenantName), limit).Inc()
	if limit == limits.LimitClusterRate || limit == limits.LimitClusterConcurrency {
		h.Metrics.clusterLimited.WithLabelValues(h.Metrics.tenantLabel(d.TenantName), h.Metrics.clusterLabel(d.ClusterName), limit).Inc()
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	h.fail(w, d, fault.Errorf(fault.ErrorCode(err), "%s; the webhook's failurePolicy applies", fault.Status(err).Message))
}
