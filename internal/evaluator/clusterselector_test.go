package evaluator

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func clusterSelector(sel string) bindingOpt {
	return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		b.Annotations = map[string]string{ClusterSelectorAnnotation: sel}
	}
}

func onCluster(labels map[string]string) reqOpt {
	return func(r *Request) { r.ClusterLabels = labels }
}

// A binding with a cluster selector applies only on the clusters whose
// labels it selects; elsewhere it is recorded as skipped, with the reason
// in the trace.
func TestClusterSelectorLimitsABinding(t *testing.T) {
	objs := Objects{
		Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{policy("deny-all", validation("false"))},
		Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("prod-only", "deny-all", clusterSelector("env=prod"))},
	}
	s := Compile(objs, CompileOptions{})
	if errs := s.CompileErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		allowed bool
	}{
		{"prod", map[string]string{"env": "prod", "region": "eu"}, false},
		{"dev", map[string]string{"env": "dev"}, true},
		{"no labels", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := s.Evaluate(context.Background(), Validating, podRequest("CREATE", onCluster(tc.labels)), WithTrace())
			if res.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%v)", res.Allowed, tc.allowed, res.Status)
			}
			if len(res.Bindings) != 1 {
				t.Fatalf("bindings = %+v, want one", res.Bindings)
			}
			want := OutcomeViolation
			if tc.allowed {
				want = OutcomeClusterSkipped
			}
			if got := res.Bindings[0].Outcome; got != want {
				t.Fatalf("outcome %q, want %q", got, want)
			}
			bt := res.Trace[0].Bindings[0]
			if tc.allowed && (bt.Matched || !strings.Contains(bt.Reason, `"env=prod"`) || bt.Outcome != OutcomeClusterSkipped) {
				t.Fatalf("trace %+v does not say the cluster selector skipped the binding", bt)
			}
		})
	}
}

// The selector is the usual label selector: set-based and negated forms
// work, and `!env` selects a cluster without labels.
func TestClusterSelectorForms(t *testing.T) {
	for _, tc := range []struct {
		sel    string
		labels map[string]string
		want   bool // the binding applies
	}{
		{"!env", nil, true},
		{"!env", map[string]string{"env": "dev"}, false},
		{"env in (prod, staging)", map[string]string{"env": "staging"}, true},
		{"env notin (prod)", map[string]string{"env": "dev"}, true},
		{"env,tier=gold", map[string]string{"env": "x"}, false},
		{"", map[string]string{"env": "x"}, true},
	} {
		objs := Objects{
			Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{policy("deny-all", validation("false"))},
			Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "deny-all", clusterSelector(tc.sel))},
		}
		res := Compile(objs, CompileOptions{}).Evaluate(context.Background(), Validating, podRequest("CREATE", onCluster(tc.labels)))
		if applied := !res.Allowed; applied != tc.want {
			t.Errorf("selector %q on %v: applied = %v, want %v", tc.sel, tc.labels, applied, tc.want)
		}
	}
}

// A selector that does not parse is a compile error on the annotation, and
// the binding applies nowhere: the store refuses such a binding, and one
// that got in must not widen to every cluster.
func TestMalformedClusterSelector(t *testing.T) {
	objs := Objects{
		Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{policy("deny-all", validation("false"))},
		Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "deny-all", clusterSelector("env in (prod"))},
	}
	s := Compile(objs, CompileOptions{})
	errs := s.CompileErrors()
	if len(errs) != 1 || errs[0].Field != "metadata.annotations[portcullis.dev/cluster-selector]" {
		t.Fatalf("compile errors %v, want one on the annotation", errs)
	}
	res := s.Evaluate(context.Background(), Validating, podRequest("CREATE", onCluster(map[string]string{"env": "prod"})))
	if !res.Allowed || len(res.Bindings) != 1 || res.Bindings[0].Outcome != OutcomeClusterSkipped {
		t.Fatalf("allowed %v, bindings %+v: want the binding skipped", res.Allowed, res.Bindings)
	}
}

// A MutatingAdmissionPolicyBinding follows the same annotation.
func TestClusterSelectorOnAMutatingBinding(t *testing.T) {
	p, b := newMAP("add-label", admissionregistrationv1.NeverReinvocationPolicy,
		applyConfig(`Object{metadata: Object.metadata{labels: {"team": "core"}}}`))
	b.Annotations = map[string]string{ClusterSelectorAnnotation: "env=prod"}
	s := Compile(Objects{MutatingPolicies: []*admissionregistrationv1.MutatingAdmissionPolicy{p},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}, CompileOptions{})
	if errs := s.CompileErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	for env, wantPatch := range map[string]bool{"prod": true, "dev": false} {
		req := mutatePodRequest()
		req.ClusterLabels = map[string]string{"env": env}
		res := s.Evaluate(context.Background(), Mutating, req)
		if !res.Allowed || (res.Patch != nil) != wantPatch {
			t.Errorf("env=%s: allowed %v, patch %s; want a patch: %v", env, res.Allowed, res.Patch, wantPatch)
		}
	}
}
