package evaluator

import (
	"context"
	"errors"
	"fmt"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/common"

	"github.com/portcullis-dev/portcullis/internal/evaluator/fastcel"
)

// reqCtx is the per-request context: what one evaluation of a request
// computes at most once, whichever policies read it.
type reqCtx struct {
	ctx      context.Context
	s        *Snapshot
	req      *Request
	nsLookup NamespaceLookup

	objLabels map[string]string
	oldLabels map[string]string

	ns *corev1.Namespace
	// provLabels are the provisional labels of the request's namespace,
	// when the inventory has any (ProvisionalNamespaces).
	provLabels labels.Set
	// provNS is the provisional object of the request's namespace.
	provNS *corev1.Namespace
	// pending memoises pendingChange for the request: every binding that
	// reads namespaceObject asks, and the comparison copies both objects.
	pending, pendingLoaded bool

	objVal any
	oldVal any
	// crds are the objects in other versions of their CRD (crds.go).
	crds *crdViews
	// typed is the typed view of a built-in kind's objects, once decoded.
	typed *typedObjects

	nsTrimmedVal ref.Val
	nsFullVal    ref.Val

	requestVals []requestVal

	varCache map[varKey]varResult
	fastVars map[varKey]fastVarResult
	fxs      fastcel.Stack

	// The flags are together, where they take one word. A request
	// allocates this once, within its validator, and the size shows in the
	// GC's work: 320 more bytes made BenchmarkValidateBaseline 3% slower.
	labelsLoaded, nsLoaded, nsKnown, objLoaded, nsValsLoaded, provLoaded bool
	// kindLoaded is set once kind holds what the scheme says of the
	// request's kind.
	kindLoaded bool
	kind       kindInfo
	// fast is set when the fast interpreter may answer: not when tracing
	// (traces show cel-go's exact costs) nor when evaluating exactly. redo
	// asks for the request to be evaluated again exactly (fastenv.go).
	fast, redo bool
	// tracing is set when Result.Trace is to be filled.
	tracing bool
	// heldObjects is set when the policy kind holds the objects CEL sees
	// (mutation: the object as mutated so far, in the view the plugin's
	// LazyObject gives): frames then read objVal and oldVal, never the
	// typed view of the request as received.
	heldObjects bool
	// cost is the request's cost limit; nil without one (costlimit.go).
	cost *costLimit
}

type requestVal struct {
	gvr schema.GroupVersionResource
	gvk schema.GroupVersionKind
	val ref.Val
}

func (rc *reqCtx) loadObjectLabels() {
	if rc.labelsLoaded {
		return
	}
	rc.labelsLoaded = true
	if rc.req.Object != nil {
		rc.objLabels = (&unstructured.Unstructured{Object: rc.req.Object}).GetLabels()
	}
	if rc.req.OldObject != nil {
		rc.oldLabels = (&unstructured.Unstructured{Object: rc.req.OldObject}).GetLabels()
	}
}

// namespace returns the request namespace's object from the inventory; when
// the inventory lacks it, a stand-in that knows only the name.
func (rc *reqCtx) namespace() (*corev1.Namespace, bool) {
	if rc.nsLoaded {
		return rc.ns, rc.nsKnown
	}
	rc.nsLoaded = true
	name := rc.req.Namespace
	var ns *corev1.Namespace
	if rc.nsLookup != nil {
		ns, rc.nsKnown = rc.nsLookup.Namespace(name)
		rc.nsKnown = rc.nsKnown && ns != nil
	}
	if !rc.nsKnown {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	// kubernetes.io/metadata.name is always set on a namespace.
	if ns.Labels[metadataNameLabel] != name {
		ns = ns.DeepCopy()
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[metadataNameLabel] = name
	}
	rc.ns = ns
	return rc.ns, rc.nsKnown
}

// unknownNamespaceError is the error of a binding that needs more than the
// name of a namespace the inventory lacks, or whose stored object a change
// the gateway allowed and nothing has confirmed yet supersedes (pending).
type unknownNamespaceError struct {
	name    string
	pending bool
}

func (e *unknownNamespaceError) Error() string {
	if e.pending {
		return fmt.Sprintf("namespace %q has a change the gateway allowed and nothing has confirmed yet: its stored object is older than that change, so its object cannot be evaluated", e.name)
	}
	return fmt.Sprintf("namespace %q is unknown: the namespace inventory lacks it, so its labels and object cannot be evaluated", e.name)
}

// matchesOwnLabels is set for a Namespace CREATE or UPDATE, which the
// namespaceSelector matches by the request's own object.
func (rc *reqCtx) matchesOwnLabels() bool {
	req := rc.req
	return req.RequestResource.Resource == "namespaces" && req.RequestSubResource == "" &&
		(req.Operation == admissionregistrationv1.Create || req.Operation == admissionregistrationv1.Update)
}

// namespaceLabels mirrors namespace.Matcher.GetNamespaceLabels.
func (rc *reqCtx) namespaceLabels(nameOnly bool) (labels.Set, error) {
	req := rc.req
	if rc.matchesOwnLabels() {
		if req.Object == nil {
			return nil, apierrors.NewInternalError(errors.New("object does not implement the Object interfaces"))
		}
		rc.loadObjectLabels()
		return labels.Set(rc.objLabels), nil
	}
	if _, known := rc.namespace(); known || nameOnly {
		if !known {
			return labels.Set{metadataNameLabel: req.Namespace}, nil
		}
		return labels.Set(rc.ns.Labels), nil
	}
	return nil, &unknownNamespaceError{name: req.Namespace}
}

// provisionalLabels returns the provisional labels of the request's
// namespace, if the inventory has any. A Namespace request itself is matched
// by its own object's labels (namespaceLabels), never by these.
func (rc *reqCtx) provisionalLabels() (labels.Set, bool) {
	rc.loadProvisional()
	return rc.provLabels, rc.provLabels != nil
}

func (rc *reqCtx) loadProvisional() {
	if rc.provLoaded {
		return
	}
	rc.provLoaded = true
	if p, ok := rc.nsLookup.(ProvisionalNamespaces); ok && rc.req.Namespace != "" {
		if ns, ok := p.ProvisionalNamespace(rc.req.Namespace); ok && ns != nil {
			set := labels.Set{}
			for k, v := range ns.Labels {
				set[k] = v
			}
			set[metadataNameLabel] = rc.req.Namespace
			rc.provLabels, rc.provNS = set, ns
		}
	}
}

// pendingChange reports whether an allowed change of the request's
// namespace that nothing has confirmed yet differs from its committed
// object: the committed object is then older than one the gateway knows
// was meant to replace it, and is not shown as namespaceObject.
func (rc *reqCtx) pendingChange() bool {
	if rc.pendingLoaded {
		return rc.pending
	}
	rc.pendingLoaded = true
	rc.loadProvisional()
	committed, known := rc.namespace()
	rc.pending = known && rc.provNS != nil && !sameNamespace(committed, rc.provNS)
	return rc.pending
}

// sameNamespace compares two namespace objects on what CEL may read of
// them, bar the resourceVersion (a proposal carries its base's) and the
// label kubernetes.io/metadata.name (always set to the name).
func sameNamespace(a, b *corev1.Namespace) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	for _, ns := range []*corev1.Namespace{a, b} {
		ns.ResourceVersion, ns.ManagedFields, ns.TypeMeta = "", nil, metav1.TypeMeta{}
		delete(ns.Labels, metadataNameLabel)
		if len(ns.Labels) == 0 {
			ns.Labels = nil
		}
	}
	return equality.Semantic.DeepEqual(a, b)
}

// namespaceObject is the namespace handed to CEL as namespaceObject: none
// for cluster-scoped requests and for a Namespace itself. unknown is set
// when a policy needs more than its name and the inventory lacks it, or
// holds only an object an allowed change supersedes (the policy then
// follows its failurePolicy rather than read labels known to be older).
func (rc *reqCtx) namespaceObject(needsNamespace bool) (ns *corev1.Namespace, name string, unknown *unknownNamespaceError) {
	name = rc.req.Namespace
	if k := rc.req.RequestKind; k.Kind == "Namespace" && k.Version == "v1" && k.Group == "" {
		name = ""
	}
	if name == "" {
		return nil, "", nil
	}
	ns, known := rc.namespace()
	switch {
	case !needsNamespace:
	case !known:
		unknown = &unknownNamespaceError{name: name}
	case rc.pendingChange():
		unknown = &unknownNamespaceError{name: name, pending: true}
	}
	return ns, name, unknown
}

// kindInfo is what the apiserver's scheme says of the request's kind.
func (rc *reqCtx) kindInfo() kindInfo {
	if !rc.kindLoaded {
		rc.kindLoaded = true
		rc.kind = kindInfoOf(rc.req.Kind)
	}
	return rc.kind
}

func (rc *reqCtx) objects() (any, any) {
	if v := rc.crdView(); v != nil {
		return v.values()
	}
	if !rc.objLoaded {
		rc.objLoaded = true
		a := newCachingAdapter()
		if rc.req.Object != nil {
			rc.objVal = a.NativeToValue(rc.req.Object)
		}
		if rc.req.OldObject != nil {
			rc.oldVal = a.NativeToValue(rc.req.OldObject)
		}
	}
	return rc.objVal, rc.oldVal
}

// requestValue is cel.CreateAdmissionRequest for the matched resource and
// kind, converted as the plugin converts it.
func (rc *reqCtx) requestValue(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) ref.Val {
	for _, rv := range rc.requestVals {
		if rv.gvr == gvr && rv.gvk == gvk {
			return rv.val
		}
	}
	req := rc.req
	userInfo := authenticationv1.UserInfo{
		Extra:    make(map[string]authenticationv1.ExtraValue, len(req.UserInfo.Extra)),
		Groups:   req.UserInfo.Groups,
		UID:      req.UserInfo.UID,
		Username: req.UserInfo.Username,
	}
	for k, v := range req.UserInfo.Extra {
		userInfo.Extra[k] = v
	}
	dryRun := req.DryRun
	ar := &admissionv1.AdmissionRequest{
		Kind:               metav1.GroupVersionKind{Group: gvk.Group, Kind: gvk.Kind, Version: gvk.Version},
		Resource:           metav1.GroupVersionResource{Group: gvr.Group, Resource: gvr.Resource, Version: gvr.Version},
		SubResource:        req.RequestSubResource,
		RequestKind:        &metav1.GroupVersionKind{Group: req.RequestKind.Group, Kind: req.RequestKind.Kind, Version: req.RequestKind.Version},
		RequestResource:    &metav1.GroupVersionResource{Group: req.RequestResource.Group, Resource: req.RequestResource.Resource, Version: req.RequestResource.Version},
		RequestSubResource: req.RequestSubResource,
		Name:               req.Name,
		Namespace:          req.Namespace,
		Operation:          admissionv1.Operation(req.Operation),
		UserInfo:           userInfo,
		DryRun:             &dryRun,
		Options:            req.Options,
	}
	val := common.SchemalessTypedToVal(ar)
	rc.requestVals = append(rc.requestVals, requestVal{gvr: gvr, gvk: gvk, val: val})
	return val
}

func (rc *reqCtx) namespaceValues(ns *corev1.Namespace) (trimmed, full ref.Val) {
	if ns == nil {
		return celtypes.NullValue, celtypes.NullValue
	}
	if !rc.nsValsLoaded {
		rc.nsValsLoaded = true
		rc.nsTrimmedVal = common.SchemalessTypedToVal(plugincel.CreateNamespaceObject(ns))
		rc.nsFullVal = common.SchemalessTypedToVal(ns)
	}
	return rc.nsTrimmedVal, rc.nsFullVal
}

// newFrame starts one evaluation of a list of expressions (the plugin's
// ForInput) for a policy and param.
func (rc *reqCtx) newFrame(cp *compiledPolicy, p *param, request ref.Val, namespace ref.Val, trace *exprTracer) *frame {
	if rc.varCache == nil {
		rc.varCache = make(map[varKey]varResult, 8)
	}
	f := &frame{ctx: rc.ctx, trace: trace, cache: rc.varCache, policy: cp.index, param: p,
		rc: rc, cp: cp, fast: rc.fast}
	if rc.kindInfo().typed && !rc.heldObjects {
		f.act.typed = rc
	} else {
		f.act.object, f.act.oldObject = rc.objects()
	}
	if p != nil {
		f.act.params = p.val
	}
	if cp.mutating != nil {
		f.act.paths = cp.mutating.paths
	}
	f.act.request = request
	f.act.namespace = namespace
	if !f.fast {
		f.bindVariables(cp)
	} // else bound on the first cel-go evaluation (celActivation)
	return f
}
