package differential

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// A custom resource with two versions whose CRD converts with strategy
// None, as the apiserver serves it to the plugin: every version is an
// equivalent resource, and converting changes apiVersion only (the
// apiextensions nopConverter, behind ConvertToGVK).
var (
	widgetsV1 = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetsV2 = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
	widgetV1  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetV2  = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
)

// crdObjectInterfaces are the scheme's, plus the Widget CRD.
type crdObjectInterfaces struct {
	admission.ObjectInterfaces
	equivalents runtime.EquivalentResourceRegistry
}

func newCRDObjectInterfaces() *crdObjectInterfaces {
	reg := runtime.NewEquivalentResourceRegistry()
	reg.RegisterKindFor(widgetsV1, "", widgetV1)
	reg.RegisterKindFor(widgetsV2, "", widgetV2)
	return &crdObjectInterfaces{ObjectInterfaces: objectInterfaces, equivalents: reg}
}

func (o *crdObjectInterfaces) GetObjectCreater() runtime.ObjectCreater { return o }
func (o *crdObjectInterfaces) GetObjectConvertor() runtime.ObjectConvertor {
	return noneConverter{o.ObjectInterfaces.GetObjectConvertor()}
}
func (o *crdObjectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o.equivalents
}

func (o *crdObjectInterfaces) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if gvk.Group == "example.com" {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	return o.ObjectInterfaces.GetObjectCreater().New(gvk)
}

// noneConverter converts custom resources as the apiextensions-apiserver
// does for strategy None: the object as it is, with the target apiVersion.
type noneConverter struct{ runtime.ObjectConvertor }

func (c noneConverter) Convert(in, out, context any) error {
	uin, ok1 := in.(*unstructured.Unstructured)
	uout, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return c.ObjectConvertor.Convert(in, out, context)
	}
	gv := uout.GroupVersionKind().GroupVersion()
	uout.Object = runtime.DeepCopyJSON(uin.Object)
	uout.SetAPIVersion(gv.String())
	return nil
}

// crdInventory is the cluster's inventory with the Widget CRD.
type crdInventory struct{ evaluator.NamespaceMap }

func (crdInventory) CRDConversion(gr schema.GroupResource) (string, []string, bool) {
	if gr == widgetsV1.GroupResource() {
		return "None", []string{"v1", "v2"}, true
	}
	return "", nil, false
}

func widgetWorld() *world {
	rules := func(versions ...string) *admissionregistrationv1.MatchResources {
		return &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{"*"},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: versions, Resources: []string{"widgets"}},
			}}}}
	}
	vap := func(name string, versions []string, spec admissionregistrationv1.ValidatingAdmissionPolicySpec) *admissionregistrationv1.ValidatingAdmissionPolicy {
		spec.MatchConstraints = rules(versions...)
		fail := admissionregistrationv1.Fail
		spec.FailurePolicy = &fail
		return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	}
	av := []admissionregistrationv1.Variable{{Name: "av", Expression: "object != null ? object.apiVersion : oldObject.apiVersion"}}
	w := &world{
		policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{
			// Matches the version the requests are made in: the plugin
			// needs no conversion, the gateway undoes the webhook's.
			vap("on-v1", []string{"v1"}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
				Variables: av,
				Validations: []admissionregistrationv1.Validation{{
					Expression:        "object == null || object.spec.size < 10",
					MessageExpression: "'too big as ' + variables.av + ', request.kind ' + request.kind.version",
				}},
				AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "seen", ValueExpression: "variables.av + '/' + request.resource.version"}},
			}),
			// Matches only the version the webhook received: the plugin
			// converts, the gateway does not.
			vap("on-v2", []string{"v2"}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
				Variables: av,
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "labelled",
					Expression: "(object != null ? object : oldObject).metadata.?labels.app.orValue('') != 'skip'"}},
				Validations: []admissionregistrationv1.Validation{{
					Expression:        "variables.av == 'example.com/v2' && (oldObject == null || oldObject.apiVersion == 'example.com/v2')",
					MessageExpression: "'seen as ' + variables.av",
				}},
				AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "seen", ValueExpression: "variables.av + '/' + request.kind.version"}},
			}),
			// Both versions: the plugin takes the request's own first.
			vap("on-both", []string{"v2", "v1"}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
				Validations: []admissionregistrationv1.Validation{{
					Expression: "oldObject == null || oldObject.apiVersion == 'example.com/' + request.kind.version",
					Message:    "oldObject in another version",
				}, {
					Expression:        "object == null || object.spec.size != 7",
					MessageExpression: "'seven as ' + object.apiVersion",
				}},
			}),
		},
		namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}}}},
	}
	w.inventory = evaluator.NamespaceMap{"default": w.namespaces[0]}
	for _, p := range w.policies {
		actions := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
		if p.Name == "on-both" {
			actions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
		}
		w.bindings = append(w.bindings, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: p.Name, ValidationActions: actions},
		})
	}
	return w
}

func widget(apiVersion string, size int64, app string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "default", "labels": map[string]any{"app": app}},
		"spec":     map[string]any{"size": size}}
}

// TestConvertedCustomResource holds the gateway's view of a Widget the
// apiserver converted from v1 (the request) to v2 (what the webhook
// received) to the plugin's view of the v1 request, for policies on
// either version or both, when the cluster's inventory has the CRD.
func TestConvertedCustomResource(t *testing.T) {
	w := widgetWorld()
	for _, p := range w.policies {
		evaluator.SetPolicyDefaults(p)
	}
	for _, b := range w.bindings {
		evaluator.SetBindingDefaults(b)
	}
	p := newAPIServerPlugin(t, w)
	defer p.close()
	snap := compile(w)
	oi := newCRDObjectInterfaces()
	inv := crdInventory{w.inventory}
	cases := []struct {
		op       admissionregistrationv1.OperationType
		obj, old func(apiVersion string) map[string]any
	}{
		{"CREATE", func(v string) map[string]any { return widget(v, 3, "a") }, nil},
		{"CREATE", func(v string) map[string]any { return widget(v, 12, "a") }, nil},
		{"CREATE", func(v string) map[string]any { return widget(v, 7, "a") }, nil},
		{"CREATE", func(v string) map[string]any { return widget(v, 12, "skip") }, nil},
		{"UPDATE", func(v string) map[string]any { return widget(v, 4, "a") }, func(v string) map[string]any { return widget(v, 3, "a") }},
		{"UPDATE", func(v string) map[string]any { return widget(v, 7, "a") }, func(v string) map[string]any { return widget(v, 30, "skip") }},
		{"DELETE", nil, func(v string) map[string]any { return widget(v, 3, "a") }},
	}
	ui := &user.DefaultInfo{Name: "alice", UID: "uid-alice"}
	var denied, warned, converted int
	for i, c := range cases {
		caseName := fmt.Sprintf("widget%d/%s", i, c.op)
		at := func(v string) (obj, old map[string]any) {
			if c.obj != nil {
				obj = c.obj("example.com/" + v)
			}
			if c.old != nil {
				old = c.old("example.com/" + v)
			}
			return obj, old
		}
		// The plugin sees the request as made, in v1.
		obj1, old1 := at("v1")
		var obj, old runtime.Object
		if obj1 != nil {
			obj = &unstructured.Unstructured{Object: obj1}
		}
		if old1 != nil {
			old = &unstructured.Unstructured{Object: old1}
		}
		attrs := &recordingAttributes{
			Attributes: admission.NewAttributesRecord(obj, old, widgetV1, "default", "w", widgetsV1, "",
				admission.Operation(c.op), nil, false, ui),
			annotations: map[string]string{},
		}
		rec := &warningRecorder{}
		err := p.plugin.Validate(contextWithWarnings(rec), attrs, oi)
		want := outcome{allowed: err == nil, warnings: rec.warnings, annotations: attrs.annotations}
		if err != nil {
			if want.status = statusOf(err); want.status == nil {
				t.Fatalf("%s: plugin returned a non-status error: %v", caseName, err)
			}
		}
		// The gateway gets it as the webhook received it, in v2.
		obj2, old2 := at("v2")
		r := &request{evalReq: &evaluator.Request{
			UID: "u", Kind: widgetV2, Resource: widgetsV2, RequestKind: widgetV1, RequestResource: widgetsV1,
			Name: "w", Namespace: "default", Operation: c.op, Object: obj2, OldObject: old2,
			UserInfo: authenticationv1.UserInfo{Username: ui.Name, UID: ui.UID},
		}, userInfo: ui, namespace: "default"}
		res := snap.Evaluate(context.Background(), evaluator.Validating, r.evalReq, evaluator.WithNamespaces(inv))
		got := evaluatorOutcome(res)
		for _, b := range res.Bindings {
			if b.FailurePolicyApplied {
				t.Errorf("%s: binding %s failed: %s", caseName, b.Binding, b.Error)
			}
		}
		compareOutcome(t, caseName, r, w, res, want, got)
		if !want.allowed {
			denied++
		}
		if len(want.warnings) > 0 {
			warned++
		}
		// The plugin converted for on-v2 (what the gateway received).
		if want.annotations["on-v2/seen"] == "example.com/v2/v2" {
			converted++
		}
	}
	// The cases must keep exercising what they are for.
	if denied < 2 || warned < 1 || converted < 3 {
		t.Errorf("denied %d, warned %d, converted by the plugin %d: the cases no longer cover what they are for", denied, warned, converted)
	}
}
