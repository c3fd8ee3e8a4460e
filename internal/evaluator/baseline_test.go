package evaluator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/yaml"
)

const baselineDir = "../../samples/baseline"

// loadBaseline reads the baseline policy set and the realistic Pod.
func loadBaseline(tb testing.TB) (Objects, map[string]any) {
	tb.Helper()
	var objs Objects
	for _, f := range []string{"policies.yaml", "bindings.yaml"} {
		data, err := os.ReadFile(filepath.Join(baselineDir, f))
		if err != nil {
			tb.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				tb.Fatal(err)
			}
			switch meta.Kind {
			case "ValidatingAdmissionPolicy":
				p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
				if err := yaml.UnmarshalStrict(doc, p); err != nil {
					tb.Fatal(err)
				}
				objs.Policies = append(objs.Policies, p)
			case "ValidatingAdmissionPolicyBinding":
				b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
				if err := yaml.UnmarshalStrict(doc, b); err != nil {
					tb.Fatal(err)
				}
				objs.Bindings = append(objs.Bindings, b)
			default:
				tb.Fatalf("unexpected kind %q in %s", meta.Kind, f)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(baselineDir, "pod.json"))
	if err != nil {
		tb.Fatal(err)
	}
	pod, err := DecodeObject(data)
	if err != nil {
		tb.Fatal(err)
	}
	return objs, pod
}

func baselineRequest(pod map[string]any) *Request {
	return &Request{
		Kind: podGVK, Resource: podGVR, Name: "api-7d9f8c6b5-x2k9q", Namespace: "shop", Operation: "CREATE",
		UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}},
		Object: pod,
	}
}

// fillerPolicies returns n policies (and bindings) that never match a Pod:
// they select other groups and resources, as a big tenant's would.
func fillerPolicies(n int) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for i := range n {
		res := fmt.Sprintf("widgets%d", i%37)
		p := policy(fmt.Sprintf("filler-%04d", i),
			rules(rule([]string{"CREATE", "UPDATE"}, []string{fmt.Sprintf("g%d.example.com", i%53)}, []string{"v1"}, []string{res})),
			variable("name", "object.metadata.name"),
			validation("variables.name.size() < 64"),
			validationFull("has(object.spec)", "", "'widget ' + variables.name + ' needs a spec'", ""))
		ps = append(ps, p)
		bs = append(bs, binding(p.Name, p.Name))
	}
	return ps, bs
}

func TestBaselinePodPasses(t *testing.T) {
	objs, pod := loadBaseline(t)
	if len(objs.Policies) != 10 || len(objs.Bindings) != 10 {
		t.Fatalf("baseline has %d policies and %d bindings, want 10 and 10", len(objs.Policies), len(objs.Bindings))
	}
	s := Compile(objs, CompileOptions{Mode: NewExpressions})
	if errs := s.CompileErrors(); len(errs) != 0 {
		t.Fatalf("compile errors: %v", errs)
	}
	res := s.Evaluate(context.Background(), Validating, baselineRequest(pod), WithNamespaces(NamespaceMap{"shop": namespaceObj("shop", nil)}))
	if !res.Allowed || len(res.Warnings) != 0 || len(res.AuditAnnotations) != 0 {
		t.Fatalf("baseline pod: allowed=%v status=%+v warnings=%v", res.Allowed, res.Status, res.Warnings)
	}
	if len(res.Bindings) != 9 {
		t.Errorf("%d bindings evaluated, want the 9 that select pods", len(res.Bindings))
	}
}

func clonePod(pod map[string]any) map[string]any {
	b, _ := json.Marshal(pod)
	out, _ := DecodeObject(b)
	return out
}

func BenchmarkCompileBaseline(b *testing.B) {
	objs, _ := loadBaseline(b)
	b.ReportAllocs()
	for b.Loop() {
		Compile(objs, CompileOptions{})
	}
	b.StopTimer()
	b.ReportMetric(float64(heapPerCompile(objs))/float64(len(objs.Policies)), "heapB/policy")
}

// BenchmarkCompileBaselineCold compiles the baseline policies with every
// expression made unique (a trailing comment), so that no compile result
// is shared with an earlier snapshot: the cost of a tenant whose policies
// no other tenant uses.
func BenchmarkCompileBaselineCold(b *testing.B) {
	objs, _ := loadBaseline(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		o := Objects{Bindings: objs.Bindings}
		for _, p := range objs.Policies {
			p = p.DeepCopy()
			suffix := fmt.Sprintf("\n// cold %d", n)
			for i := range p.Spec.Variables {
				p.Spec.Variables[i].Expression += suffix
			}
			for i := range p.Spec.Validations {
				p.Spec.Validations[i].Expression += suffix
				if p.Spec.Validations[i].MessageExpression != "" {
					p.Spec.Validations[i].MessageExpression += suffix
				}
			}
			for i := range p.Spec.MatchConditions {
				p.Spec.MatchConditions[i].Expression += suffix
			}
			for i := range p.Spec.AuditAnnotations {
				p.Spec.AuditAnnotations[i].ValueExpression += suffix
			}
			o.Policies = append(o.Policies, p)
		}
		b.StartTimer()
		if s := Compile(o, CompileOptions{}); len(s.CompileErrors()) != 0 {
			b.Fatalf("compile errors: %v", s.CompileErrors())
		}
	}
}

// heapPerCompile measures the live heap a compiled snapshot retains.
func heapPerCompile(objs Objects) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := Compile(objs, CompileOptions{})
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

func BenchmarkValidateBaseline(b *testing.B) {
	objs, pod := loadBaseline(b)
	ns := NamespaceMap{"shop": namespaceObj("shop", nil)}
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			var o Objects
			if n < 10 {
				o = Objects{Policies: objs.Policies[:n], Bindings: objs.Bindings[:n]}
			} else {
				fp, fb := fillerPolicies(n - 10)
				o = Objects{Policies: append(append([]*admissionregistrationv1.ValidatingAdmissionPolicy{}, objs.Policies...), fp...),
					Bindings: append(append([]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, objs.Bindings...), fb...)}
			}
			s := Compile(o, CompileOptions{})
			req := baselineRequest(pod)
			ctx := context.Background()
			if res := s.Evaluate(ctx, Validating, req, WithNamespaces(ns)); !res.Allowed {
				b.Fatalf("denied: %+v", res.Status)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Evaluate(ctx, Validating, req, WithNamespaces(ns))
			}
		})
	}
}
