package evaluator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
)

// ClusterSelectorAnnotation on a ValidatingAdmissionPolicyBinding or a
// MutatingAdmissionPolicyBinding limits it to the tenant's clusters whose
// labels match the selector it holds (the usual string form, as in
// `kubectl get -l`). An annotation, not a field, so that the same binding
// applied to a real cluster is an ordinary binding there: an apiserver
// keeps annotations and ignores them.
const ClusterSelectorAnnotation = "portcullis.dev/cluster-selector"

// ParseClusterSelector parses the annotation's value. The empty string
// selects every cluster, as labels.Parse does.
func ParseClusterSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("not a label selector: %w", err)
	}
	return sel, nil
}

// clusterSelectorOf compiles a binding's annotation; nil when the binding
// has none, and an error naming the annotation when it does not parse.
func clusterSelectorOf(annotations map[string]string) (labels.Selector, error) {
	s, ok := annotations[ClusterSelectorAnnotation]
	if !ok {
		return nil, nil
	}
	return ParseClusterSelector(s)
}

// clusterSkips reports whether the binding does not apply to the calling
// cluster.
func (cb *compiledBinding) clusterSkips(r *Request) bool {
	return cb.clusterSel != nil && !cb.clusterSel.Matches(labels.Set(r.ClusterLabels))
}
