package evaluator

import (
	"context"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// crdInventory is a cluster inventory with CRDs, as the webhook's is.
type crdInventory struct {
	NamespaceMap
	crds map[schema.GroupResource]crdInfo
}

type crdInfo struct {
	strategy string
	versions []string
}

func (c crdInventory) CRDConversion(gr schema.GroupResource) (string, []string, bool) {
	info, ok := c.crds[gr]
	return info.strategy, info.versions, ok
}

var (
	widgetsGR = schema.GroupResource{Group: "example.com", Resource: "widgets"}
	widgetV1  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetV2  = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
)

// convertedWidget is an UPDATE of a Widget made in v1 that the apiserver
// converted to v2 for the webhook (its rules name v2 only, matchPolicy
// Equivalent).
func convertedWidget() *Request {
	obj := func(size int64) map[string]any {
		return map[string]any{"apiVersion": "example.com/v2", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "default", "labels": map[string]any{"app": "w"}},
			"spec":     map[string]any{"size": size}}
	}
	return &Request{
		Kind: widgetV2, Resource: widgetsGR.WithVersion("v2"),
		RequestKind: widgetV1, RequestResource: widgetsGR.WithVersion("v1"),
		Name: "w", Namespace: "default", Operation: "UPDATE", Object: obj(3), OldObject: obj(2),
	}
}

func widgetRule(version string) policyOpt {
	return rules(rule([]string{"*"}, []string{"example.com"}, []string{version}, []string{"widgets"}))
}

// A policy that matched the version the request was made in sees the
// object in that version, as the plugin's converter hands it over, when the
// CRD converts with strategy None; otherwise the binding fails as before.
func TestConvertedCustomResource(t *testing.T) {
	const sees = "object.apiVersion == 'example.com/v1' && oldObject.apiVersion == 'example.com/v1' && " +
		"object.kind == 'Widget' && object.spec.size == 3 && oldObject.spec.size == 2 && " +
		"request.kind.version == 'v1' && request.resource.version == 'v1'"
	onV1 := policy("p", widgetRule("v1"), validation(sees), matchCondition("v1", "object.apiVersion == 'example.com/v1'"))
	withCRD := func(strategy string, versions ...string) crdInventory {
		return crdInventory{NamespaceMap: NamespaceMap{"default": namespaceObj("default", nil)},
			crds: map[schema.GroupResource]crdInfo{widgetsGR: {strategy: strategy, versions: versions}}}
	}
	cannot := "widgets.example.com \"w\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: " +
		"failed to configure binding: failed to convert object version: the webhook received the object as example.com/v2, Kind=Widget, not as example.com/v1, Kind=Widget"
	tests := []struct {
		name       string
		policies   []*admissionregistrationv1.ValidatingAdmissionPolicy
		bindings   []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
		inv        NamespaceLookup
		req        *Request
		want       want
		missingCRD bool
	}{
		{name: "strategy None: the object in the requested version",
			policies: pols(onV1), bindings: binds(binding("b", "p")), inv: withCRD("None", "v1", "v2"),
			req: convertedWidget(), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "strategy unset is None",
			policies: pols(onV1), bindings: binds(binding("b", "p")), inv: withCRD("", "v1", "v2"),
			req: convertedWidget(), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "a denial's message sees the requested version",
			policies: pols(policy("p", widgetRule("v1"), validationFull("false", "", "'as ' + object.apiVersion", ""))),
			bindings: binds(binding("b", "p")), inv: withCRD("None", "v1", "v2"), req: convertedWidget(),
			want: want{message: "widgets.example.com \"w\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: as example.com/v1",
				outcomes: outs(violation)}},
		{name: "a DELETE converts oldObject",
			policies: pols(policy("p", widgetRule("v1"), validation("object == null && oldObject.apiVersion == 'example.com/v1'"))),
			bindings: binds(binding("b", "p")), inv: withCRD("None", "v1", "v2"),
			req: func() *Request {
				r := convertedWidget()
				r.Operation, r.Object = "DELETE", nil
				return r
			}(), want: want{allowed: true, outcomes: outs(pass)}},
		{name: "each policy sees the version it matched, shared variables apart",
			policies: pols(
				policy("p", widgetRule("v1"), variable("av", "object.apiVersion"), validation("variables.av == 'example.com/v1'")),
				policy("q", widgetRule("v2"), variable("av", "object.apiVersion"), validation("variables.av == 'example.com/v2'")),
				policy("r", widgetRule("v1"), variable("av", "object.apiVersion"), validation("variables.av == 'example.com/v1'"))),
			bindings: binds(binding("b", "p"), binding("bq", "q"), binding("br", "r")), inv: withCRD("None", "v1", "v2"),
			req: convertedWidget(), want: want{allowed: true, outcomes: outs(pass, pass, pass)}},
		{name: "strategy Webhook cannot convert",
			policies: pols(onV1), bindings: binds(binding("b", "p")), inv: withCRD("Webhook", "v1", "v2"),
			req: convertedWidget(), want: want{message: cannot, outcomes: outs(errored)}},
		{name: "a version the CRD lacks cannot convert",
			policies: pols(onV1), bindings: binds(binding("b", "p")), inv: withCRD("None", "v2"),
			req: convertedWidget(), want: want{message: cannot, outcomes: outs(errored)}},
		{name: "without the CRD the binding fails and the CRD is reported missing",
			policies: pols(onV1), bindings: binds(binding("b", "p")), inv: crdInventory{NamespaceMap: NamespaceMap{"default": namespaceObj("default", nil)}},
			req: convertedWidget(), want: want{message: cannot, outcomes: outs(errored)}, missingCRD: true},
		{name: "an inventory without CRDs: the CRD is missing",
			policies: pols(onV1), bindings: binds(binding("b", "p")), inv: NamespaceMap{"default": namespaceObj("default", nil)},
			req: convertedWidget(), want: want{message: cannot, outcomes: outs(errored)}, missingCRD: true},
		{name: "failurePolicy Ignore lets it through, the CRD still missing",
			policies: pols(policy("p", widgetRule("v1"), validation(sees), failurePolicy(admissionregistrationv1.Ignore))),
			bindings: binds(binding("b", "p")), inv: NamespaceMap{"default": namespaceObj("default", nil)},
			req: convertedWidget(), want: want{allowed: true, outcomes: outs(errored)}, missingCRD: true},
		{name: "a built-in kind has no CRD to miss",
			policies: pols(policy("p", validation("true"), rules(rule([]string{"*"}, []string{"apps"}, []string{"v1"}, []string{"deployments"})))),
			bindings: binds(binding("b", "p")), inv: withCRD("None", "v1", "v2"), req: convertedDeployment(),
			want: want{message: "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: failed to convert object version: the webhook received the object as apps/v1beta1, Kind=Deployment, not as apps/v1, Kind=Deployment",
				outcomes: outs(errored)}},
		{name: "a request not converted needs no CRD",
			policies: pols(policy("p", widgetRule("v2"), validation("object.apiVersion == 'example.com/v2'"))),
			bindings: binds(binding("b", "p")), inv: NamespaceMap{"default": namespaceObj("default", nil)},
			req: func() *Request {
				r := convertedWidget()
				r.RequestKind, r.RequestResource = r.Kind, r.Resource
				return r
			}(), want: want{allowed: true, outcomes: outs(pass)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Compile(Objects{Policies: tc.policies, Bindings: tc.bindings}, CompileOptions{})
			req := tc.req
			before := req.Object["apiVersion"]
			got := s.Evaluate(context.Background(), Validating, req, WithNamespaces(tc.inv))
			checkResult(t, got, tc.want)
			if got.MissingCRD != tc.missingCRD {
				t.Errorf("MissingCRD = %v, want %v", got.MissingCRD, tc.missingCRD)
			}
			if req.Object != nil && req.Object["apiVersion"] != before {
				t.Errorf("the request's object was changed: apiVersion %v", req.Object["apiVersion"])
			}
			// cel-go alone (tracing turns the fast interpreter off) must
			// give the same answer.
			traced := s.Evaluate(context.Background(), Validating, req, WithNamespaces(tc.inv), WithTrace())
			traced.Trace = nil
			if !reflect.DeepEqual(stripTrace(got), traced) {
				t.Errorf("traced result differs:\n got %+v\nwant %+v", traced, got)
			}
		})
	}
}
