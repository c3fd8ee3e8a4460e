package ui

import "time"

// The wire types the UI reads, decoded from the admin API's JSON. Most
// are internal/apiv1's; decisions and audit entries are declared by their
// stores, which the UI must not import (see internal/archtest), so the
// fields it shows are declared here.

type list[T any] struct {
	Items    []T    `json:"items"`
	Continue string `json:"continue"`
}

type tenant struct {
	Name        string    `json:"name"`
	DisplayName string    `json:"displayName"`
	CreatedAt   time.Time `json:"createdAt"`
}

type decisionStats struct {
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Bucket  string    `json:"bucket"`
	Buckets []struct {
		Start    time.Time        `json:"start"`
		Total    int64            `json:"total"`
		Verdicts map[string]int64 `json:"verdicts"`
		DeniedBy map[string]int64 `json:"deniedBy"`
		Clusters map[string]int64 `json:"clusters"`
	} `json:"buckets"`
}

// totals sums the buckets: requests, denials (denied and rejected), and
// denials by policy.
func (s decisionStats) totals() (total, denied int64, byPolicy map[string]int64) {
	byPolicy = map[string]int64{}
	for _, b := range s.Buckets {
		total += b.Total
		denied += b.Verdicts["denied"] + b.Verdicts["rejected"]
		for p, n := range b.DeniedBy {
			byPolicy[p] += n
		}
	}
	return
}

type decision struct {
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
	Verdict          string            `json:"verdict"`
	HTTPStatus       int               `json:"httpStatus"`
	Code             int               `json:"code"`
	Reason           string            `json:"reason"`
	Message          string            `json:"message"`
	Warnings         []string          `json:"warnings"`
	AuditAnnotations map[string]string `json:"auditAnnotations"`
	Bindings         []struct {
		Policy               string   `json:"policy"`
		Binding              string   `json:"binding"`
		Param                string   `json:"param"`
		Outcome              string   `json:"outcome"`
		Denied               bool     `json:"denied"`
		FailurePolicyApplied bool     `json:"failurePolicyApplied"`
		Timeout              bool     `json:"timeout"`
		Error                string   `json:"error"`
		Messages             []string `json:"messages"`
		Mutated              bool     `json:"mutated"`
	} `json:"bindings"`
	LatencyMs       float64  `json:"latencyMs"`
	Instance        string   `json:"instance"`
	SnapshotVersion int64    `json:"snapshotVersion"`
	Endpoint        string   `json:"endpoint"`
	Mutated         bool     `json:"mutated"`
	MutatedBy       []string `json:"mutatedBy"`
	Patch           string   `json:"patch"`
	PatchTruncated  bool     `json:"patchTruncated"`
}

type auditEntry struct {
	ID            int64          `json:"id"`
	Time          time.Time      `json:"time"`
	Actor         string         `json:"actor"`
	Tenant        string         `json:"tenant"`
	Action        string         `json:"action"`
	Kind          string         `json:"kind"`
	Namespace     string         `json:"namespace"`
	Name          string         `json:"name"`
	VersionBefore *int64         `json:"versionBefore"`
	VersionAfter  *int64         `json:"versionAfter"`
	Detail        map[string]any `json:"detail"`
}

// object is the part of a stored Kubernetes object the lists show.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name              string    `json:"name"`
		Namespace         string    `json:"namespace"`
		ResourceVersion   string    `json:"resourceVersion"`
		CreationTimestamp time.Time `json:"creationTimestamp"`
	} `json:"metadata"`
}
