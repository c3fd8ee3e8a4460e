package apiv1

import "time"

// Decision is one recorded admission decision: GET
// /api/v1/tenants/{tenant}/decisions lists them.
type Decision struct {
	ID               string            `json:"id"`
	Time             time.Time         `json:"time"`
	Tenant           string            `json:"tenant"`
	Cluster          string            `json:"cluster"`
	UID              string            `json:"uid"`
	Operation        string            `json:"operation"`
	Group            string            `json:"group"`
	Version          string            `json:"version"`
	Resource         string            `json:"resource"`
	SubResource      string            `json:"subResource"`
	Kind             string            `json:"kind"`
	Namespace        string            `json:"namespace"`
	Name             string            `json:"name"`
	UserName         string            `json:"userName"`
	UserGroups       []string          `json:"userGroups"`
	DryRun           bool              `json:"dryRun"`
	Verdict          string            `json:"verdict"` // allowed, denied, warned, error or rejected
	HTTPStatus       int               `json:"httpStatus"`
	Code             int               `json:"code"`
	Reason           string            `json:"reason"`
	Message          string            `json:"message"`
	Warnings         []string          `json:"warnings"`
	AuditAnnotations map[string]string `json:"auditAnnotations"`
	Bindings         []DecisionBinding `json:"bindings"`
	LatencyMs        float64           `json:"latencyMs"`
	Instance         string            `json:"instance"`
	SnapshotVersion  int64             `json:"snapshotVersion"`
	// Endpoint is validate or mutate. Mutated: the answer carried a patch.
	// MutatedBy: the policies whose mutations applied. Patch is the patch
	// as sent, cut at 16 KiB when PatchTruncated (then not JSON).
	Endpoint       string   `json:"endpoint"`
	Mutated        bool     `json:"mutated"`
	MutatedBy      []string `json:"mutatedBy"`
	Patch          string   `json:"patch"`
	PatchTruncated bool     `json:"patchTruncated"`
}

// DecisionBinding is one matched binding of a decision.
type DecisionBinding struct {
	Policy               string   `json:"policy"`
	Binding              string   `json:"binding"`
	Param                string   `json:"param"`
	Outcome              string   `json:"outcome"`
	Denied               bool     `json:"denied"`
	FailurePolicyApplied bool     `json:"failurePolicyApplied"`
	Timeout              bool     `json:"timeout"`
	Error                string   `json:"error"`
	Messages             []string `json:"messages"`
	// Mutated: a MutatingAdmissionPolicy's mutations applied. Reinvoked:
	// the result of the plugin's second pass. Absent for validating
	// bindings.
	Mutated   bool `json:"mutated,omitempty"`
	Reinvoked bool `json:"reinvoked,omitempty"`
}

// DecisionList is one page of decisions, newest first. Unlike List,
// Continue is always present: empty on the last page.
type DecisionList struct {
	Items    []Decision `json:"items"`
	Continue string     `json:"continue"`
}

// DecisionStats is GET /api/v1/tenants/{tenant}/decisions/stats: a
// tenant's decision counts per time bucket, oldest first, every bucket
// of the window present.
type DecisionStats struct {
	Since   time.Time        `json:"since"`
	Until   time.Time        `json:"until"`
	Bucket  string           `json:"bucket"` // a Go duration: 1m0s, 1h0m0s, 24h0m0s
	Buckets []DecisionBucket `json:"buckets"`
}

// DecisionBucket counts the decisions of [Start, Start+bucket): by
// verdict, by the policies that denied them (a decision denied by two
// policies counts for both) and by cluster.
type DecisionBucket struct {
	Start    time.Time        `json:"start"`
	Total    int64            `json:"total"`
	Verdicts map[string]int64 `json:"verdicts"`
	DeniedBy map[string]int64 `json:"deniedBy"`
	Clusters map[string]int64 `json:"clusters"`
}

// FleetDecisionStats is GET /api/v1/decisions/stats (operators): the
// buckets count every tenant's decisions; Tenants counts each tenant's
// decisions of the whole window, every tenant there, by name.
type FleetDecisionStats struct {
	Since   time.Time              `json:"since"`
	Until   time.Time              `json:"until"`
	Bucket  string                 `json:"bucket"`
	Buckets []DecisionBucket       `json:"buckets"`
	Tenants []TenantDecisionCounts `json:"tenants"`
}

// TenantDecisionCounts are one tenant's decisions of a window.
type TenantDecisionCounts struct {
	Tenant   string           `json:"tenant"`
	Total    int64            `json:"total"`
	Verdicts map[string]int64 `json:"verdicts"`
	DeniedBy map[string]int64 `json:"deniedBy"`
}
