package evaluator

import (
	"fmt"
	"sync"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/common"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The apiserver holds a built-in object (a Pod, a ConfigMap, a
// PodExecOptions) as its typed Go struct, and the plugin hands that struct
// to CEL through common.SchemalessTypedToVal (plugin/cel/condition.go); only
// a custom resource is handed over as its unstructured JSON. Both views
// hold the same values, but not the same errors: a typed map compared with
// a string is a "no such overload" error where a JSON map is simply not
// equal, a typed map refuses a non-string key, a typed list a uint index.
// So cel-go gets the typed view of a built-in kind's object and oldObject,
// decoded from the JSON when cel-go first reads them: decoding a Pod costs
// several times a whole evaluation, and the fast interpreter, which reads
// the JSON, declines every expression whose answer depends on the view.

// kindInfo is what the apiserver's scheme says of a kind.
type kindInfo struct {
	typed  bool // the scheme knows the kind: the plugin sees it typed
	noMeta bool // typed, without ObjectMeta (PodExecOptions, ...)
}

var (
	kindInfosOnce sync.Once
	kindInfos     map[schema.GroupVersionKind]kindInfo
)

// kindInfoOf looks the kind up in client-go's scheme, which holds the
// apiserver's built-in kinds. A plain map read: a lookup allocates nothing.
func kindInfoOf(gvk schema.GroupVersionKind) kindInfo {
	kindInfosOnce.Do(func() {
		all := clientgoscheme.Scheme.AllKnownTypes()
		kindInfos = make(map[schema.GroupVersionKind]kindInfo, len(all))
		for k := range all {
			obj, err := clientgoscheme.Scheme.New(k)
			if err != nil {
				continue
			}
			_, err = meta.Accessor(obj)
			kindInfos[k] = kindInfo{typed: true, noMeta: err != nil}
		}
	})
	return kindInfos[gvk]
}

// typedObjects is the typed view of a request's object and oldObject.
type typedObjects struct {
	object, oldObject ref.Val
	// err is set when an object does not decode into its typed struct; it
	// is the plugin's error for an object it cannot prepare.
	err error
}

// typedView returns the typed view of the request's objects, decoding them
// on first use; nil when the kind is not built in.
func (rc *reqCtx) typedView() *typedObjects {
	if rc.typed != nil {
		return rc.typed
	}
	if !rc.kindInfo().typed {
		return nil
	}
	t := &typedObjects{object: celtypes.NullValue, oldObject: celtypes.NullValue}
	// The plugin prepares oldObject first (newActivation).
	if rc.req.OldObject != nil {
		v, err := decodeTyped(rc.req.Kind, rc.req.OldObject)
		if err != nil {
			t.err = fmt.Errorf("failed to prepare oldObject variable for evaluation: %w", err)
		}
		t.oldObject = v
	}
	if rc.req.Object != nil && t.err == nil {
		v, err := decodeTyped(rc.req.Kind, rc.req.Object)
		if err != nil {
			t.err = fmt.Errorf("failed to prepare object variable for evaluation: %w", err)
		}
		t.object = v
	}
	rc.typed = t
	return t
}

// decodeTyped decodes a JSON object into the typed struct of its kind, as
// SchemalessTypedToVal wraps it. An apiserver sends the encoding of its
// typed object, which always decodes; anything else is refused with an
// error that says so, and the failurePolicy decides.
func decodeTyped(gvk schema.GroupVersionKind, m map[string]any) (v ref.Val, err error) {
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("the object does not decode as %s %s: %v", gvk.GroupVersion(), gvk.Kind, p)
		}
	}()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err != nil {
		return nil, fmt.Errorf("the object does not decode as %s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
	}
	return common.SchemalessTypedToVal(obj), nil
}

// typedValue is the value of object (old false) or oldObject (old true) in
// cel-go's activation for a built-in kind. An object that does not decode
// makes it an error; on the fast interpreter the request is then evaluated
// again without it, so that every evaluation fails alike (forInput).
func (rc *reqCtx) typedValue(old bool) ref.Val {
	t := rc.typedView()
	if t.err != nil {
		if rc.fast {
			rc.redo = true
		}
		return celtypes.WrapErr(t.err)
	}
	if old {
		return t.oldObject
	}
	return t.object
}

// prepareObjects mirrors the plugin's preparation of object and oldObject
// for a list of expressions (newActivation): an object that does not decode
// fails the whole list. The fast interpreter leaves that to the first
// cel-go read, so that the JSON is decoded only when cel-go needs it.
func (f *frame) prepareObjects() error {
	if f.fast || f.act.typed == nil {
		return nil
	}
	return f.rc.typedView().err
}
