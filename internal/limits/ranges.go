package limits

import (
	"math"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// The ranges of the overrides, which the admin API checks and the columns
// of tenant_limits hold (migrations 00017 and 00019 state the same
// bounds): what the API accepts is always stored, never a 500.
const (
	MaxConcurrentEvaluations = 10_000
	// MaxCELCostPerRequest is the largest integer every JSON client reads
	// exactly (2^53-1); it is 9e8 times the apiserver's budget of one
	// evaluation, so no tenant needs more.
	MaxCELCostPerRequest int64 = 1<<53 - 1
	// MinRequestsPerSecond is one request in 1000 s: below it the wait a
	// refusal announces (Retry-After) grows past what a Duration holds.
	MinRequestsPerSecond = 0.001
	// MaxRequestsPerSecond is far above what one replica serves.
	MaxRequestsPerSecond = 1_000_000
	// MaxNamespacesPerCluster is 100 times the 10,000 namespaces
	// Kubernetes is tested to, and about 1.4 GB of typical namespaces on
	// every replica serving the cluster (docs/production.md): past it an
	// override is a typo, not a plan.
	MaxNamespacesPerCluster = 1_000_000
	// MaxCRDsPerCluster is 100 times the inventory's default of 1,000.
	MaxCRDsPerCluster = 100_000
)

// Check says whether every field of the overrides o is in its range (zero
// is always allowed: the default). The error is a 422 naming the field as
// the admin API spells it.
func Check(o Limits) error {
	switch {
	case o.ConcurrentEvaluations < 0 || o.ConcurrentEvaluations > MaxConcurrentEvaluations:
		return fault.InvalidField("concurrentEvaluations", "must be between 1 and %d, or 0 for the default", MaxConcurrentEvaluations)
	case o.CELCostPerRequest < 0 || o.CELCostPerRequest > MaxCELCostPerRequest:
		return fault.InvalidField("celCostPerRequest", "must be between 1 and %d, or 0 for the default", MaxCELCostPerRequest)
	case math.IsNaN(o.RequestsPerSecond) || o.RequestsPerSecond < 0 ||
		(o.RequestsPerSecond > 0 && o.RequestsPerSecond < MinRequestsPerSecond) || o.RequestsPerSecond > MaxRequestsPerSecond:
		return fault.InvalidField("requestsPerSecond", "must be between %g and %g, or 0 for the default", MinRequestsPerSecond, float64(MaxRequestsPerSecond))
	case o.MaxNamespacesPerCluster < 0 || o.MaxNamespacesPerCluster > MaxNamespacesPerCluster:
		return fault.InvalidField("maxNamespacesPerCluster", "must be between 1 and %d, or 0 for the default", MaxNamespacesPerCluster)
	case o.MaxCRDsPerCluster < 0 || o.MaxCRDsPerCluster > MaxCRDsPerCluster:
		return fault.InvalidField("maxCRDsPerCluster", "must be between 1 and %d, or 0 for the default", MaxCRDsPerCluster)
	}
	return nil
}
