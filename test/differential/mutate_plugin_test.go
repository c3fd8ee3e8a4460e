package differential

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/tools/cache"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// mutatingPlugin is the real MutatingAdmissionPolicy plugin wired to fake
// clients and informers.
//
// mutating.NewPlugin asks the clientset's discovery for the OpenAPI v3
// documents its type converters are built from, which the fake clientset
// cannot serve (FakeDiscovery.OpenAPIV3 panics). So its dispatcher
// factory is swapped, before the plugin is initialised, for one that
// builds the same dispatcher (mutating.NewDispatcher) with a
// TypeConverterManager made as the plugin makes it (no static converter)
// over an OpenAPI client that serves the documents a kube-apiserver
// publishes for its built-in group-versions (builtinOpenAPI), and those
// of the CRDs a test gives: a kind of another group-version has no
// converter, as in a cluster that lacks its CRD. The factory is an
// unexported field of generic.Plugin, hence the reflection.
type mutatingPlugin struct {
	plugin *mutating.Plugin
	stop   chan struct{}
	// types is the dispatcher's TypeConverterManager.
	types patch.TypeConverterManager
}

// orderedDispatcher hands the plugin's dispatcher its policies in the
// evaluator's order: by policy name, then binding name, then param
// namespace and name. The plugin itself takes them in the order of its
// informers' maps, which is not defined, and with several policies the
// order decides the final object.
type orderedDispatcher struct {
	generic.Dispatcher[mutating.PolicyHook]
}

func (d orderedDispatcher) Dispatch(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, hooks []mutating.PolicyHook) error {
	hooks = slices.Clone(hooks)
	slices.SortFunc(hooks, func(x, y mutating.PolicyHook) int { return strings.Compare(x.Policy.Name, y.Policy.Name) })
	for i := range hooks {
		h := &hooks[i]
		h.Bindings = slices.Clone(h.Bindings)
		slices.SortFunc(h.Bindings, func(x, y *mutating.PolicyBinding) int { return strings.Compare(x.Name, y.Name) })
		if h.ParamInformer != nil {
			h.ParamInformer = sortedInformer{h.ParamInformer}
		}
	}
	return d.Dispatcher.Dispatch(ctx, a, o, hooks)
}

type sortedInformer struct{ informers.GenericInformer }

func (i sortedInformer) Lister() cache.GenericLister { return sortedLister{i.GenericInformer.Lister()} }

type sortedLister struct{ cache.GenericLister }

func (l sortedLister) List(selector labels.Selector) ([]runtime.Object, error) {
	return sortObjects(l.GenericLister.List(selector))
}

func (l sortedLister) ByNamespace(namespace string) cache.GenericNamespaceLister {
	return sortedNamespaceLister{l.GenericLister.ByNamespace(namespace)}
}

type sortedNamespaceLister struct{ cache.GenericNamespaceLister }

func (l sortedNamespaceLister) List(selector labels.Selector) ([]runtime.Object, error) {
	return sortObjects(l.GenericNamespaceLister.List(selector))
}

func sortObjects(objs []runtime.Object, err error) ([]runtime.Object, error) {
	key := func(o runtime.Object) string {
		m, _ := meta.Accessor(o)
		return m.GetNamespace() + "/" + m.GetName()
	}
	slices.SortFunc(objs, func(x, y runtime.Object) int { return strings.Compare(key(x), key(y)) })
	return objs, err
}

// staticTypeConverter is client-go's, with which the gateway types the
// built-in kinds it knows (generateBuiltinOpenAPI asks it which).
var staticTypeConverter = applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)

func newMutatingPlugin(tb testing.TB, w *world) *mutatingPlugin {
	tb.Helper()
	return newMutatingPluginWith(tb, w, nil)
}

// newMutatingPluginWith is newMutatingPlugin whose type converter manager
// also reads the OpenAPI v3 documents of oapi (CRDs'), as the plugin reads
// them from its apiserver.
func newMutatingPluginWith(tb testing.TB, w *world, oapi openapi.Client) *mutatingPlugin {
	tb.Helper()
	c := newFakeCluster(tb, w)
	p, err := mutating.NewPlugin(nil)
	if err != nil {
		tb.Fatal(err)
	}
	types := builtinTypeConverters()
	if oapi != nil {
		types = patch.NewTypeConverterManager(nil, builtinOpenAPI{extra: oapi})
	}
	factory := func(a authorizer.UnconditionalAuthorizer, m *matching.Matcher, _ kubernetes.Interface) generic.Dispatcher[mutating.PolicyHook] {
		return orderedDispatcher{mutating.NewDispatcher(a, m, types)}
	}
	field := reflect.ValueOf(p.Plugin).Elem().FieldByName("dispatcherFactory")
	reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Set(reflect.ValueOf(factory))
	// The MutatingAdmissionPolicy feature gate, as InspectFeatureGates
	// would set it.
	p.SetEnabled(true)
	stop := make(chan struct{})
	p.SetExternalKubeInformerFactory(c.factory)
	p.SetExternalKubeClientSet(c.client)
	p.SetDynamicClient(c.dynClient)
	p.SetRESTMapper(c.mapper)
	p.SetDrainedNotification(stop)
	p.SetUnconditionalAuthorizer(denyAllAuthorizer{})
	if err := p.ValidateInitialization(); err != nil {
		tb.Fatal(err)
	}
	c.factory.Start(stop)
	c.factory.WaitForCacheSync(stop)
	if !p.WaitForReady() {
		tb.Fatal("plugin not ready")
	}
	// The dispatcher's manager lists the documents in the background.
	testutil.Eventually(tb, 0, "the plugin to list the OpenAPI documents", func() bool {
		return types.GetTypeConverter(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) != nil
	})
	return &mutatingPlugin{plugin: p, stop: stop, types: types}
}

// builtinTypeConverters is one type converter manager over the built-in
// documents for all plugins without CRDs, so that each document is
// parsed once (api/v1's takes about a second).
var builtinTypeConverters = sync.OnceValue(func() patch.TypeConverterManager {
	m := patch.NewTypeConverterManager(nil, builtinOpenAPI{})
	go m.Run(context.Background())
	return m
})

func (a *mutatingPlugin) close() { close(a.stop) }

// sameTypeConvertor is the scheme's convertor, which also converts an
// object to its own type (a copy). The plugin converts its versioned
// object back into the attributes' object at the end of a pass; in the
// apiserver that is the internal version, which client-go's scheme lacks,
// so the attributes hold the versioned object itself.
type sameTypeConvertor struct{ runtime.ObjectConvertor }

func (c sameTypeConvertor) Convert(in, out, context any) error {
	if reflect.TypeOf(in) == reflect.TypeOf(out) {
		reflect.ValueOf(out).Elem().Set(reflect.ValueOf(in).Elem())
		return nil
	}
	return c.ObjectConvertor.Convert(in, out, context)
}

type mutatingObjectInterfaces struct{ admission.ObjectInterfaces }

func (o mutatingObjectInterfaces) GetObjectConvertor() runtime.ObjectConvertor {
	return sameTypeConvertor{o.ObjectInterfaces.GetObjectConvertor()}
}

var mutateInterfaces = mutatingObjectInterfaces{objectInterfaces}

// mutateOutcome is what either engine answered.
type mutateOutcome struct {
	outcome
	// final is the object after the mutations in its JSON form, with the
	// evaluator's patch applied to the request's object and read back as
	// the apiserver reads a webhook's patch (into the typed object for a
	// built-in kind).
	final   map[string]any
	changed bool
	// encoded is the final object as the apiserver serializes it (its
	// JSON encoding of the typed object for a built-in kind), to compare
	// byte for byte.
	encoded []byte
}

// heldObject is a request's object as the apiserver holds it: typed for
// a built-in kind.
func heldObject(tb testing.TB, m map[string]any, gvk schema.GroupVersionKind) runtime.Object {
	if m == nil {
		return nil
	}
	if !clientgoscheme.Scheme.Recognizes(gvk) {
		return &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}
	}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		tb.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err != nil {
		tb.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj
}

func jsonForm(tb testing.TB, obj runtime.Object) map[string]any {
	var m map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m = u.Object
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			tb.Fatal(err)
		}
	}
	// Numbers as JSON has them, for comparison: an unstructured object
	// the plugin merged holds int64s, one decoded from the patched JSON
	// float64s, and the JSON of both is the same.
	var out map[string]any
	if err := json.Unmarshal(mustJSON(m), &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

// mutate runs the request through the plugin as the admission chain does:
// when it handles the operation, once, and once more when the plugin asks
// for reinvocation.
func (a *mutatingPlugin) mutate(tb testing.TB, r *request) mutateOutcome {
	er := r.evalReq
	obj := heldObject(tb, er.Object, er.RequestKind)
	old := heldObject(tb, er.OldObject, er.RequestKind)
	attrs := admission.NewAttributesRecord(obj, old, er.RequestKind, er.Namespace, er.Name, er.RequestResource,
		er.RequestSubResource, admission.Operation(er.Operation), r.options, er.DryRun, r.userInfo)
	var initial runtime.Object
	if obj != nil {
		initial = obj.DeepCopyObject()
	}
	ctx := context.Background()
	var err error
	// The admission chain calls a plugin only for the operations it
	// handles: CREATE, UPDATE and CONNECT.
	if a.plugin.Handles(attrs.GetOperation()) {
		err = a.plugin.Admit(ctx, attrs, mutateInterfaces)
	}
	if rc := attrs.GetReinvocationContext(); err == nil && rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		err = a.plugin.Admit(ctx, attrs, mutateInterfaces)
	}
	out := mutateOutcome{outcome: outcome{allowed: err == nil}}
	if err != nil {
		if out.status = statusOf(err); out.status == nil {
			out.otherErr = err.Error()
		}
		return out
	}
	if obj != nil {
		out.final = jsonForm(tb, attrs.GetObject())
		out.encoded = encodeHeld(tb, attrs.GetObject())
		out.changed = !apiequality.Semantic.DeepEqual(initial, attrs.GetObject())
	}
	return out
}

// evaluatorMutation is the evaluator's answer in the same form: its patch
// applied to the request's object with the JSON patch library the
// apiserver applies webhook patches with.
func evaluatorMutation(tb testing.TB, r *request, res *evaluator.Result) mutateOutcome {
	out := mutateOutcome{outcome: outcome{allowed: res.Allowed, status: res.Status}, changed: res.Patch != nil}
	if !res.Allowed || r.evalReq.Object == nil {
		return out
	}
	doc := mustJSON(r.evalReq.Object)
	if res.Patch != nil {
		p, err := jsonpatch.DecodePatch(res.Patch)
		if err != nil {
			tb.Fatalf("patch %s: %v", res.Patch, err)
		}
		if doc, err = p.Apply(doc); err != nil {
			tb.Fatalf("patch %s: %v", res.Patch, err)
		}
		var obj map[string]any
		if err := json.Unmarshal(doc, &obj); err != nil {
			tb.Fatal(err)
		}
		if !reflect.DeepEqual(obj, jsonRoundTrip(tb, res.Object)) {
			tb.Errorf("the patch gives %s, Result.Object is %s", doc, mustJSON(res.Object))
		}
	}
	var patched map[string]any
	if err := json.Unmarshal(doc, &patched); err != nil {
		tb.Fatal(err)
	}
	held := heldObject(tb, patched, r.evalReq.RequestKind)
	out.final = jsonForm(tb, held)
	out.encoded = encodeHeld(tb, held)
	return out
}

// encodeHeld is the apiserver's JSON serialization of the object it holds.
func encodeHeld(tb testing.TB, obj runtime.Object) []byte {
	var b []byte
	var err error
	if _, ok := obj.(*unstructured.Unstructured); ok {
		b, err = runtime.Encode(unstructured.UnstructuredJSONScheme, obj)
	} else {
		b, err = json.Marshal(obj)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func jsonRoundTrip(tb testing.TB, v any) map[string]any {
	var out map[string]any
	if err := json.Unmarshal(mustJSON(v), &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

var _ = admissionregistrationv1.Fail
