package ui

import (
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// The wire types the UI reads are internal/apiv1's; these few are the
// parts of them (or of stored Kubernetes objects) that its pages show.

type list[T any] struct {
	Items    []T    `json:"items"`
	Continue string `json:"continue"`
}

type tenant struct {
	Name        string    `json:"name"`
	DisplayName string    `json:"displayName"`
	CreatedAt   time.Time `json:"createdAt"`
}

// totals sums the buckets of a decisions/stats answer: requests, denials
// (denied and rejected), and denials by policy.
func totals(s apiv1.DecisionStats) (total, denied int64, byPolicy map[string]int64) {
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
