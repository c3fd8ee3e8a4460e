package differential

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// Param kinds known to the fake cluster.
var (
	limitsGVK        = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Limits"}
	limitsGVR        = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "limits"}
	clusterLimitsGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "ClusterLimits"}
	clusterLimitsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "clusterlimits"}
	configMapGVK     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// world is one cluster: policies, bindings, params and namespaces.
type world struct {
	policies   []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings   []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	params     []*unstructured.Unstructured
	namespaces []*corev1.Namespace // all in the cluster
	inventory  evaluator.NamespaceMap

	mutatingPolicies []*admissionregistrationv1.MutatingAdmissionPolicy
	mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// apiserverPlugin is the real ValidatingAdmissionPolicy plugin wired to
// fake clients and informers.
type apiserverPlugin struct {
	plugin *validating.Plugin
	stop   chan struct{}
}

type denyAllAuthorizer struct{}

func (denyAllAuthorizer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", nil
}

func TestMain(m *testing.M) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// fakeCluster is what the plugins are wired to: a fake clientset with the
// world's namespaces, policies, bindings and ConfigMap params, a fake
// dynamic client with its other params, and a RESTMapper that knows the
// param kinds.
type fakeCluster struct {
	client    *fake.Clientset
	factory   informers.SharedInformerFactory
	dynClient *dynamicfake.FakeDynamicClient
	mapper    meta.RESTMapper
}

func newFakeCluster(tb testing.TB, w *world) *fakeCluster {
	tb.Helper()
	var objs []runtime.Object
	for _, p := range w.mutatingPolicies {
		objs = append(objs, p.DeepCopy())
	}
	for _, b := range w.mutatingBindings {
		objs = append(objs, b.DeepCopy())
	}
	for _, ns := range w.namespaces {
		objs = append(objs, ns.DeepCopy())
	}
	for _, p := range w.policies {
		objs = append(objs, p.DeepCopy())
	}
	for _, b := range w.bindings {
		objs = append(objs, b.DeepCopy())
	}
	var dynObjs []runtime.Object
	for _, u := range w.params {
		if u.GroupVersionKind() == configMapGVK {
			cm := &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm); err != nil {
				tb.Fatal(err)
			}
			// Typed informers hand out objects without TypeMeta, which is
			// why the plugin wraps such a param (wrappedParam) and CEL sees
			// it as its JSON; the fake clientset would keep it.
			cm.TypeMeta = metav1.TypeMeta{}
			objs = append(objs, cm)
			continue
		}
		dynObjs = append(dynObjs, u.DeepCopy())
	}
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	dynClient := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		limitsGVR:                               "LimitsList",
		clusterLimitsGVR:                        "ClusterLimitsList",
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
	})
	for _, o := range dynObjs {
		u := o.(*unstructured.Unstructured)
		gvr := limitsGVR
		if u.GroupVersionKind() == clusterLimitsGVK {
			gvr = clusterLimitsGVR
		}
		if err := dynClient.Tracker().Create(gvr, u, u.GetNamespace()); err != nil {
			tb.Fatal(err)
		}
	}

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	mapper.AddSpecific(limitsGVK, limitsGVR, limitsGVR.GroupVersion().WithResource("limit"), meta.RESTScopeNamespace)
	mapper.AddSpecific(clusterLimitsGVK, clusterLimitsGVR, clusterLimitsGVR.GroupVersion().WithResource("clusterlimit"), meta.RESTScopeRoot)
	return &fakeCluster{client: client, factory: factory, dynClient: dynClient, mapper: mapper}
}

func newAPIServerPlugin(tb testing.TB, w *world) *apiserverPlugin {
	tb.Helper()
	c := newFakeCluster(tb, w)
	factory := c.factory
	p, err := validating.NewPlugin(nil)
	if err != nil {
		tb.Fatal(err)
	}
	stop := make(chan struct{})
	p.SetExternalKubeInformerFactory(factory)
	p.SetExternalKubeClientSet(c.client)
	p.SetDynamicClient(c.dynClient)
	p.SetRESTMapper(c.mapper)
	p.SetDrainedNotification(stop)
	p.SetUnconditionalAuthorizer(denyAllAuthorizer{})
	if err := p.ValidateInitialization(); err != nil {
		tb.Fatal(err)
	}
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	if !p.WaitForReady() {
		tb.Fatal("plugin not ready")
	}
	return &apiserverPlugin{plugin: p, stop: stop}
}

func (a *apiserverPlugin) close() { close(a.stop) }

type recordingAttributes struct {
	admission.Attributes
	annotations map[string]string
}

func (r *recordingAttributes) AddAnnotation(key, value string) error {
	r.annotations[key] = value
	return nil
}

type warningRecorder struct{ warnings []string }

func (w *warningRecorder) AddWarning(_, text string) { w.warnings = append(w.warnings, text) }

// outcome is what either engine answered, in comparable form.
type outcome struct {
	allowed     bool
	status      *metav1.Status
	warnings    []string
	annotations map[string]string
	otherErr    string
}

// request is one generated request, in both engines' forms.
type request struct {
	evalReq   *evaluator.Request
	options   runtime.Object
	userInfo  *user.DefaultInfo
	namespace string
}

func (a *apiserverPlugin) validate(r *request) outcome {
	er := r.evalReq
	obj, err := apiserverObject(er.Kind, er.Object)
	if err != nil {
		return outcome{otherErr: err.Error()}
	}
	old, err := apiserverObject(er.Kind, er.OldObject)
	if err != nil {
		return outcome{otherErr: err.Error()}
	}
	attrs := &recordingAttributes{
		Attributes: admission.NewAttributesRecord(obj, old, er.RequestKind, er.Namespace, er.Name, er.RequestResource,
			er.RequestSubResource, admission.Operation(er.Operation), r.options, er.DryRun, r.userInfo),
		annotations: map[string]string{},
	}
	rec := &warningRecorder{}
	err = a.plugin.Validate(contextWithWarnings(rec), attrs, objectInterfaces)
	out := outcome{allowed: err == nil, warnings: rec.warnings, annotations: attrs.annotations}
	if err != nil {
		if out.status = statusOf(err); out.status == nil {
			out.otherErr = err.Error()
		}
	}
	return out
}

// apiserverObject is the object as kube-apiserver hands it to its plugin:
// the typed struct of a kind its scheme knows, an unstructured object for
// a custom resource.
func apiserverObject(gvk schema.GroupVersionKind, m map[string]any) (runtime.Object, error) {
	if m == nil {
		return nil, nil
	}
	m = runtime.DeepCopyJSON(m)
	typed, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return &unstructured.Unstructured{Object: m}, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed); err != nil {
		return nil, fmt.Errorf("a %v the apiserver could not hold: %w", gvk, err)
	}
	return typed, nil
}

// sentObject is the object as kube-apiserver sends it to a webhook: the
// encoding of what it holds, so a built-in kind's object comes in its
// canonical form (known fields only, quantities normalised, empty
// optional fields left out).
func sentObject(gvk schema.GroupVersionKind, m map[string]any) map[string]any {
	obj, err := apiserverObject(gvk, m)
	if err != nil || obj == nil {
		panic(fmt.Sprintf("test object %v: %v", m, err))
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return out
}

func contextWithWarnings(rec *warningRecorder) context.Context {
	return warning.WithWarningRecorder(context.Background(), rec)
}

func statusOf(err error) *metav1.Status {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		st := se.ErrStatus
		return &st
	}
	return nil
}

func evaluatorOutcome(res *evaluator.Result) outcome {
	out := outcome{allowed: res.Allowed, status: res.Status, warnings: res.Warnings, annotations: map[string]string{}}
	for _, a := range res.AuditAnnotations {
		out.annotations[a.Key] = a.Value
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}
