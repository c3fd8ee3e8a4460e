package evaluator

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// CRDLookup is the part of a cluster's inventory that knows its
// CustomResourceDefinitions. Validating evaluation uses it when the
// NamespaceLookup it is given (WithNamespaces) implements it too, so that the one inventory value the webhook
// hands over serves both.
type CRDLookup interface {
	// CRDConversion returns the conversion strategy of the CRD that serves
	// gr ("None" or "Webhook"; "" counts as None, as the apiserver
	// defaults it) and the names of its versions; false when the
	// inventory lacks the CRD.
	CRDConversion(gr schema.GroupResource) (strategy string, versions []string, ok bool)
}

// A custom resource reaches the webhook converted when the webhook
// configuration's matchPolicy Equivalent made the apiserver convert it
// (request.kind ≠ request.requestKind), but a policy that matched the
// original version sees it, in the plugin, in that version. The gateway
// cannot convert in general; a CRD whose conversion strategy is None only
// ever changes apiVersion, though, so with the CRD in the inventory the
// object can be presented exactly as the plugin's converter would hand it
// over: apiVersion set to the matched version, every other field as sent.

// crdViews are the request's objects in other versions of their CRD, made
// at most once per version; current is the one the invocation being
// evaluated sees, nil for the objects as received.
type crdViews struct {
	current *crdView
	views   []*crdView
}

// crdView is the request's object and oldObject in one version.
type crdView struct {
	gv                schema.GroupVersion
	object, oldObject map[string]any
	loaded            bool
	objVal, oldVal    any
}

// viewAs makes the invocations dispatched next see the request's objects
// in gvk's version; gvk equal to the received kind restores them as
// received. It is false when the objects cannot be presented in gvk: the
// caller keeps the configuration error it always gave.
func (d *dispatcher) viewAs(gvk schema.GroupVersionKind) bool {
	if gvk == d.req.Kind {
		if d.crds != nil {
			d.crds.current = nil
		}
		return true
	}
	if !d.convertsByAPIVersion(gvk) {
		return false
	}
	if d.crds == nil {
		d.crds = &crdViews{}
	}
	gv := gvk.GroupVersion()
	for _, v := range d.crds.views {
		if v.gv == gv {
			d.crds.current = v
			return true
		}
	}
	v := &crdView{gv: gv, object: withAPIVersion(d.req.Object, gv), oldObject: withAPIVersion(d.req.OldObject, gv)}
	d.crds.views = append(d.crds.views, v)
	d.crds.current = v
	return true
}

// convertsByAPIVersion says whether the request's custom resource converts
// from the received version to gvk's by changing apiVersion alone: its CRD
// is in the inventory, converts with strategy None and has both versions
// (the apiserver's converter refuses any other). When the CRD is needed
// and unknown, the Result says so, for the admin to upload it.
func (d *dispatcher) convertsByAPIVersion(gvk schema.GroupVersionKind) bool {
	got := d.req.Kind
	gr := d.req.Resource.GroupResource()
	if gvk.GroupKind() != got.GroupKind() || d.req.RequestResource.GroupResource() != gr {
		return false
	}
	crds, ok := d.nsLookup.(CRDLookup)
	var strategy string
	var versions []string
	if ok {
		strategy, versions, ok = crds.CRDConversion(gr)
	}
	if !ok {
		// Built-in groups have no CRD to upload.
		if !clientgoscheme.Scheme.IsGroupRegistered(gr.Group) {
			d.res.MissingCRD = true
		}
		return false
	}
	return (strategy == "" || strategy == "None") &&
		slices.Contains(versions, got.Version) && slices.Contains(versions, gvk.Version)
}

func withAPIVersion(obj map[string]any, gv schema.GroupVersion) map[string]any {
	if obj == nil {
		return nil
	}
	c := maps.Clone(obj)
	c["apiVersion"] = gv.String()
	return c
}

// crdView is the view the current invocation sees, nil for the objects as
// received.
func (rc *reqCtx) crdView() *crdView {
	if rc.crds == nil {
		return nil
	}
	return rc.crds.current
}

// values are the view's objects as CEL values: custom resources are always
// the decoded JSON, as the plugin hands unstructured objects to CEL.
func (v *crdView) values() (any, any) {
	if !v.loaded {
		v.loaded = true
		a := newCachingAdapter()
		if v.object != nil {
			v.objVal = a.NativeToValue(v.object)
		}
		if v.oldObject != nil {
			v.oldVal = a.NativeToValue(v.oldObject)
		}
	}
	return v.objVal, v.oldVal
}

// fastObjects are the view's objects as the fast interpreter reads them.
func (v *crdView) fastObjects() (obj, old any) {
	if v.object != nil {
		obj = v.object
	}
	if v.oldObject != nil {
		old = v.oldObject
	}
	return obj, old
}
