package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name     string
		policies []*admissionregistrationv1.ValidatingAdmissionPolicy
		bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
		mode     EnvMode
		want     []CompileError
	}{
		{name: "clean policy has none", policies: pols(policy("p", validation("true"))), want: nil},
		{name: "validation syntax error", policies: pols(policy("p", validation("true"), validation("1 +"))),
			want: []CompileError{{Kind: kindPolicy, Name: "p", Field: "spec.validations[1].expression"}}},
		{name: "messageExpression type error", policies: pols(policy("p", validationFull("true", "", "1", ""))),
			want: []CompileError{{Kind: kindPolicy, Name: "p", Field: "spec.validations[0].messageExpression"}}},
		{name: "variable error", policies: pols(policy("p", variable("v", "nope"))),
			want: []CompileError{{Kind: kindPolicy, Name: "p", Field: "spec.variables[0].expression"}}},
		{name: "matchCondition error", policies: pols(policy("p", matchCondition("m", "1"))),
			want: []CompileError{{Kind: kindPolicy, Name: "p", Field: "spec.matchConditions[0].expression"}}},
		{name: "audit annotation error", policies: pols(policy("p", auditAnnotation("k", "1"))),
			want: []CompileError{{Kind: kindPolicy, Name: "p", Field: "spec.auditAnnotations[0].valueExpression"}}},
		{name: "authorizer refused", policies: pols(policy("p", validation("authorizer.requestResource.check('get').allowed()"))),
			want: []CompileError{{Kind: kindPolicy, Name: "p", Field: "spec.validations[0].expression"}}},
		{name: "missing matchConstraints", policies: pols(policy("p", noConstraints())),
			want: []CompileError{{Kind: kindPolicy, Name: "p", Field: "spec.matchConstraints"}}},
		{name: "bad paramKind apiVersion", policies: pols(policy("p", paramKind("a/b/c", "X"))),
			want: []CompileError{{Kind: kindPolicy, Name: "p", Field: "spec.paramKind.apiVersion"}}},
		{name: "bad binding selector", policies: pols(policy("p")), bindings: binds(binding("b", "p", paramRefSelector("", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Nope"}}}, allow))),
			want: []CompileError{{Kind: kindBinding, Name: "b", Field: "spec.paramRef.selector"}}},
		{name: "errors sorted by policy name", policies: pols(policy("z", validation("1 +")), policy("a", validation("1 +"))),
			want: []CompileError{{Kind: kindPolicy, Name: "a", Field: "spec.validations[0].expression"}, {Kind: kindPolicy, Name: "z", Field: "spec.validations[0].expression"}}},
		{name: "NewExpressions mode compiles", policies: pols(policy("p", validation("object.metadata.name.lowerAscii() == 'web'"))), mode: NewExpressions, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Compile(Objects{Policies: tc.policies, Bindings: tc.bindings}, CompileOptions{Mode: tc.mode})
			got := s.CompileErrors()
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i].Kind != tc.want[i].Kind || got[i].Name != tc.want[i].Name || got[i].Field != tc.want[i].Field || got[i].Message == "" {
					t.Errorf("error %d = %+v, want %+v with a message", i, got[i], tc.want[i])
				}
			}
			if s.Stats().CompileErrors != len(tc.want) {
				t.Errorf("stats count %d", s.Stats().CompileErrors)
			}
		})
	}
}

func TestCompileDoesNotModifyInput(t *testing.T) {
	p := policy("p", validation("true"))
	b := binding("b", "p", matchResources(func(*admissionregistrationv1.MatchResources) {}))
	pc, bc := p.DeepCopy(), b.DeepCopy()
	Compile(Objects{Policies: pols(p), Bindings: binds(b)}, CompileOptions{})
	if !reflect.DeepEqual(p, pc) || !reflect.DeepEqual(b, bc) {
		t.Fatal("Compile modified its input")
	}
}

func TestStats(t *testing.T) {
	s := Compile(Objects{
		Policies: pols(policy("a", variable("v", "1"), validationFull("true", "", "'m'", ""), matchCondition("m", "true"), auditAnnotation("k", "'v'")), policy("unbound")),
		Bindings: binds(binding("b", "a"), binding("c", "a")),
		Params:   nil,
	}, CompileOptions{})
	want := Stats{Policies: 2, Hooks: 1, Bindings: 2, Expressions: 5}
	if got := s.Stats(); got != want {
		t.Fatalf("stats = %+v, want %+v", got, want)
	}
}

func TestDeadline(t *testing.T) {
	big := "[" + strings.Repeat("0,", 99) + "0]"
	slow := big + ".all(a, " + big + ".all(b, a + b >= 0))"
	cases := []struct {
		name      string
		fp        admissionregistrationv1.FailurePolicyType
		cancelled bool
		allowed   bool
	}{
		{name: "cancelled context with Fail denies", fp: admissionregistrationv1.Fail, cancelled: true, allowed: false},
		{name: "cancelled context with Ignore allows", fp: admissionregistrationv1.Ignore, cancelled: true, allowed: true},
		{name: "live context evaluates", fp: admissionregistrationv1.Fail, cancelled: false, allowed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Compile(Objects{Policies: pols(policy("p", validation(slow), failurePolicy(tc.fp))), Bindings: binds(binding("b", "p"))}, CompileOptions{})
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancelled {
				cancel()
			} else {
				defer cancel()
			}
			res := s.Evaluate(ctx, Validating, podRequest("CREATE"))
			if res.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v: %+v", res.Allowed, tc.allowed, res.Status)
			}
			if len(res.Bindings) != 1 || res.Bindings[0].Timeout != tc.cancelled {
				t.Fatalf("bindings = %+v", res.Bindings)
			}
			if tc.cancelled && !tc.allowed && res.Status.Message != denyMsg("p", "b", "evaluation did not finish: context canceled") {
				t.Errorf("message = %q", res.Status.Message)
			}
		})
	}
}

func TestDeadlineInterruptsEvaluation(t *testing.T) {
	big := "[" + strings.Repeat("0,", 119) + "0]"
	slow := big + ".all(a, " + big + ".all(b, " + big + ".all(c, a + b + c >= 0)))"
	s := Compile(Objects{Policies: pols(policy("p", validation(slow))), Bindings: binds(binding("b", "p"))}, CompileOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	res := s.Evaluate(ctx, Validating, podRequest("CREATE"))
	if res.Allowed || len(res.Bindings) != 1 {
		t.Fatalf("result = %+v", res)
	}
	// Either the deadline interrupted the expression or the cost limit
	// stopped it first; both deny under Fail. Only the first says Timeout.
	if b := res.Bindings[0]; b.Timeout != strings.Contains(b.Error, "deadline") {
		t.Errorf("binding = %+v", b)
	}
}

func TestTrace(t *testing.T) {
	s := Compile(Objects{
		Policies: pols(
			policy("a", matchCondition("m", "true"), validationFull("object.metadata.name == 'x'", "bad", "", ""), auditAnnotation("k", "'v'")),
			policy("b", rules(rule([]string{"DELETE"}, []string{""}, []string{"v1"}, []string{"pods"}))),
		),
		Bindings: binds(binding("ba", "a"), binding("bb", "b")),
	}, CompileOptions{})
	res := s.Evaluate(context.Background(), Validating, podRequest("CREATE"), WithTrace())
	if len(res.Trace) != 2 {
		t.Fatalf("trace = %+v", res.Trace)
	}
	a, b := res.Trace[0], res.Trace[1]
	if !a.Matched || len(a.Bindings) != 1 || b.Matched || b.Reason == "" {
		t.Fatalf("trace = %+v", res.Trace)
	}
	bt := a.Bindings[0]
	if !bt.Matched || bt.Outcome != OutcomeViolation || len(bt.MatchConditions) != 1 || len(bt.Validations) != 1 || len(bt.AuditAnnotations) != 1 {
		t.Fatalf("binding trace = %+v", bt)
	}
	if bt.Validations[0].Result != "false" || bt.Validations[0].Message != "bad" || bt.Validations[0].Cost <= 0 || bt.Cost <= 0 {
		t.Errorf("validation trace = %+v", bt.Validations[0])
	}
	if bt.AuditAnnotations[0].Name != "k" || bt.AuditAnnotations[0].Result != "v" {
		t.Errorf("audit trace = %+v", bt.AuditAnnotations[0])
	}
}

func TestIndexSkipsOtherResources(t *testing.T) {
	fp, fb := fillerPolicies(200)
	s := Compile(Objects{Policies: append(fp, policy("pods", validation("false"))), Bindings: append(fb, binding("b", "pods"))}, CompileOptions{})
	if got := s.index.lookup("CREATE", podGVR); len(got) != 1 {
		t.Fatalf("candidates = %v, want only the pod policy", got)
	}
	widget := schema.GroupVersionResource{Group: "g0.example.com", Version: "v1", Resource: "widgets0"}
	if got := s.index.lookup("CREATE", widget); len(got) == 0 {
		t.Fatal("no candidates for widgets0")
	}
}

func TestConcurrentValidate(t *testing.T) {
	objs, pod := loadBaseline(t)
	s := Compile(objs, CompileOptions{})
	ns := NamespaceMap{"shop": namespaceObj("shop", nil)}
	want := s.Evaluate(context.Background(), Validating, baselineRequest(pod), WithNamespaces(ns))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				got := s.Evaluate(context.Background(), Validating, baselineRequest(pod), WithNamespaces(ns))
				if !reflect.DeepEqual(got, want) {
					t.Error("concurrent results differ")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBaselineViolations(t *testing.T) {
	objs, pod := loadBaseline(t)
	s := Compile(objs, CompileOptions{})
	ns := NamespaceMap{"shop": namespaceObj("shop", nil)}
	mutate := func(f func(spec map[string]any, md map[string]any)) map[string]any {
		p := clonePod(pod)
		f(p["spec"].(map[string]any), p["metadata"].(map[string]any))
		return p
	}
	c0 := func(spec map[string]any) map[string]any { return spec["containers"].([]any)[0].(map[string]any) }
	msg := func(policy, m string) string {
		return "pods \"api-7d9f8c6b5-x2k9q\" is forbidden: ValidatingAdmissionPolicy '" + policy + "' with binding '" + policy + "' denied request: " + m
	}
	cases := []struct {
		name   string
		obj    map[string]any
		reason metav1.StatusReason
		msg    string
	}{
		{"privileged", mutate(func(s, _ map[string]any) { c0(s)["securityContext"].(map[string]any)["privileged"] = true }), metav1.StatusReasonForbidden,
			msg("baseline-no-privileged", "privileged containers are not allowed: api")},
		{"hostNetwork", mutate(func(s, _ map[string]any) { s["hostNetwork"] = true }), metav1.StatusReasonForbidden, msg("baseline-no-host-namespaces", "hostNetwork is not allowed")},
		{"hostPID", mutate(func(s, _ map[string]any) { s["hostPID"] = true }), metav1.StatusReasonForbidden, msg("baseline-no-host-namespaces", "hostPID is not allowed")},
		{"root", mutate(func(s, _ map[string]any) {
			s["securityContext"].(map[string]any)["runAsNonRoot"] = false
			c0(s)["securityContext"].(map[string]any)["runAsNonRoot"] = false
		}), metav1.StatusReasonInvalid, msg("baseline-run-as-non-root", "containers must set runAsNonRoot: api")},
		{"labels", mutate(func(_, md map[string]any) { delete(md["labels"].(map[string]any), "team") }), metav1.StatusReasonInvalid, msg("baseline-required-labels", "missing required labels: team")},
		{"registry", mutate(func(s, _ map[string]any) { c0(s)["image"] = "docker.io/library/nginx:1.27" }), metav1.StatusReasonForbidden,
			msg("baseline-image-registry-allowlist", "images from unapproved registries: docker.io/library/nginx:1.27")},
		{"latest", mutate(func(s, _ map[string]any) { c0(s)["image"] = "registry.example.com/shop/api:latest" }), metav1.StatusReasonInvalid,
			msg("baseline-no-latest-tag", "images must have a tag other than latest, or a digest")},
		{"untagged", mutate(func(s, _ map[string]any) { c0(s)["image"] = "registry.example.com/shop/api" }), metav1.StatusReasonInvalid,
			msg("baseline-no-latest-tag", "images must have a tag other than latest, or a digest")},
		{"limits", mutate(func(s, _ map[string]any) {
			delete(c0(s)["resources"].(map[string]any)["limits"].(map[string]any), "memory")
		}), metav1.StatusReasonInvalid,
			msg("baseline-resource-limits", "containers without cpu and memory limits: api")},
		{"rootfs", mutate(func(s, _ map[string]any) { c0(s)["securityContext"].(map[string]any)["readOnlyRootFilesystem"] = false }), metav1.StatusReasonInvalid,
			msg("baseline-read-only-root-filesystem", "containers must set readOnlyRootFilesystem: true")},
		{"capabilities", mutate(func(s, _ map[string]any) {
			c0(s)["securityContext"].(map[string]any)["capabilities"].(map[string]any)["add"] = []any{"SYS_ADMIN", "NET_BIND_SERVICE"}
		}), metav1.StatusReasonForbidden, msg("baseline-allowed-capabilities", "capabilities not allowed: SYS_ADMIN")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := s.Evaluate(context.Background(), Validating, baselineRequest(tc.obj), WithNamespaces(ns))
			if res.Allowed || res.Status.Message != tc.msg || res.Status.Reason != tc.reason {
				b, _ := json.Marshal(res.Status)
				t.Fatalf("got %s\nwant %q (%s)", b, tc.msg, tc.reason)
			}
		})
	}
	t.Run("too many replicas", func(t *testing.T) {
		req := &Request{Kind: deployGVK, Resource: deployGVR, Name: "api", Namespace: "shop", Operation: "CREATE",
			Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "api"}, "spec": map[string]any{"replicas": int64(51)}}}
		res := s.Evaluate(context.Background(), Validating, req, WithNamespaces(ns))
		want := "deployments.apps \"api\" is forbidden: ValidatingAdmissionPolicy 'baseline-max-replicas' with binding 'baseline-max-replicas' denied request: replicas must be at most 50, got 51"
		if res.Allowed || res.Status.Message != want {
			t.Fatalf("got %+v", res.Status)
		}
	})
}

// CompileContext stops when its context ends, so that compiling a
// candidate policy set for the admin API gives its evaluation slot back
// at the request's deadline (issue 30, finding 6); with a live context it
// compiles what Compile does.
func TestCompileContextStops(t *testing.T) {
	objs := Objects{Policies: pols(policy("a", validation("true")), policy("b", validation("true"))), Bindings: binds(binding("b", "a"))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := CompileContext(ctx, objs, CompileOptions{}); s != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, %v", s, err)
	}
	s, err := CompileContext(context.Background(), objs, CompileOptions{})
	if err != nil || s.Stats() != Compile(objs, CompileOptions{}).Stats() {
		t.Fatalf("live: %+v, %v", s, err)
	}
}
