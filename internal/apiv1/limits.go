package apiv1

// Limits are a tenant's evaluation limits, enforced by each gateway replica
// on its share of the tenant's webhook requests, and the bounds of each of
// its clusters' inventory. In Defaults and Effective a zero (absent) field
// means no limit; in Overrides it means the default.
type Limits struct {
	// ConcurrentEvaluations is how many of the tenant's requests one
	// replica evaluates at once; the others wait up to a second, then get
	// 429.
	ConcurrentEvaluations int `json:"concurrentEvaluations,omitempty"`
	// CELCostPerRequest bounds the CEL cost of one request summed over all
	// its bindings; past it, evaluations fail with the apiserver's
	// out-of-budget error and each binding's failurePolicy decides.
	CELCostPerRequest int64 `json:"celCostPerRequest,omitempty"`
	// RequestsPerSecond is the sustained rate one replica accepts (bursts
	// of one second's worth); more get 429.
	RequestsPerSecond float64 `json:"requestsPerSecond,omitempty"`
	// MaxNamespacesPerCluster bounds how many namespaces (committed and
	// provisional together) the inventory of one of the tenant's clusters
	// holds; an upload or sync push past it is a 422, a namespace learned
	// past it is dropped. The gateway's default is 10,000.
	MaxNamespacesPerCluster int `json:"maxNamespacesPerCluster,omitempty"`
	// MaxCRDsPerCluster bounds how many CRDs the inventory of one of the
	// tenant's clusters holds; an upload past it is a 422. The gateway's
	// default is 1,000.
	MaxCRDsPerCluster int `json:"maxCRDsPerCluster,omitempty"`
}

// TenantLimits is GET /api/v1/tenants/{tenant}/limits: the gateway's
// defaults, the tenant's overrides, and the result.
type TenantLimits struct {
	Tenant    string `json:"tenant"`
	Defaults  Limits `json:"defaults"`
	Overrides Limits `json:"overrides"`
	Effective Limits `json:"effective"`
}
