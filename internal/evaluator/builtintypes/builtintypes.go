// Package builtintypes gives the type converters the kube-apiserver's
// MutatingAdmissionPolicy plugin uses for built-in kinds, so that an apply
// configuration merges, or fails, exactly as it does there.
package builtintypes

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// The kube-apiserver's plugin has no static type converter: for a kind of
// group-version gv its type converter manager builds one from the OpenAPI
// v3 document the apiserver publishes for gv (/openapi/v3/apis/<gv>). So
// every published group-version has a converter, and the request is
// mutated; but the converter types only the kinds of gv that document
// holds, and an apply configuration on another kind fails ("no
// corresponding type for autoscaling/v1, Kind=Scale": the Scale of
// deployments/scale is in the apps/v1 and v1 documents, not in
// autoscaling/v1's; the *Options kinds of pods/exec and the proxies are in
// none), while a JSON patch, which needs no type, applies.
//
// builtinKinds (openapi_gen.go, generated from the documents
// checked in to k8s.io/kubernetes for the release of the apiserver
// library linked here) says which group-versions are published and which
// kinds their documents hold. A kind's type is client-go's (the models
// client-go embeds for its apply configurations, the same models) when
// client-go has it, else built from builtinExtraModels (Binding, the
// review kinds). Lists and the apiserver's envelope kinds, which no
// request sends to admission, are left out.
//
// Building the converters parses models, so it is done on first use, as
// before: client-go's are most of it; the extra models (30, 12 KB of
// JSON in the binary) take under 2 ms, and finding each kind's converter
// tens of ms (measured on a loaded 2-core machine, 80 ms in all after
// client-go's parse).

var (
	builtinOnce      sync.Once
	staticConverter  managedfields.TypeConverter
	extraConverter   managedfields.TypeConverter
	builtinConverter managedfields.TypeConverter
	// builtinTypes is, per kind of builtinKinds, the converter that
	// types it.
	builtinTypes map[schema.GroupVersionKind]managedfields.TypeConverter
)

func initBuiltinTypes() {
	staticConverter = applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	var models map[string]*spec.Schema
	if err := json.Unmarshal([]byte(builtinExtraModels), &models); err != nil {
		panic(fmt.Sprintf("builtinExtraModels: %v", err))
	}
	var err error
	if extraConverter, err = managedfields.NewTypeConverter(models, false); err != nil {
		panic(fmt.Sprintf("builtinExtraModels: %v", err))
	}
	builtinTypes = map[schema.GroupVersionKind]managedfields.TypeConverter{}
	for gv, kinds := range builtinKinds {
		for _, k := range kinds {
			gvk := gv.WithKind(k)
			switch {
			case converts(staticConverter, gvk):
				builtinTypes[gvk] = staticConverter
			case converts(extraConverter, gvk):
				builtinTypes[gvk] = extraConverter
			default:
				// The generator puts every kind client-go lacks in
				// builtinExtraModels.
				panic(fmt.Sprintf("no type for the built-in kind %v", gvk))
			}
		}
	}
	builtinConverter = publishedConverter{}
}

func converts(tc managedfields.TypeConverter, gvk schema.GroupVersionKind) bool {
	stub := &unstructured.Unstructured{}
	stub.SetGroupVersionKind(gvk)
	_, err := tc.ObjectToTyped(stub)
	return err == nil
}

// For mirrors the plugin's type converter manager for a built-in
// group-version: a converter when the apiserver publishes gvk's
// group-version, else nil (a custom resource's, typed from its CRD).
func For(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	builtinOnce.Do(initBuiltinTypes)
	if _, ok := builtinKinds[gvk.GroupVersion()]; !ok {
		return nil
	}
	return builtinConverter
}

// publishedConverter is the plugin's converter of a published
// group-version's document, for all of them at once: a kind is typed by
// the converter of its group-version, and that is the group-version of
// the object it is asked to type.
type publishedConverter struct{}

func (publishedConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	tc, ok := builtinTypes[gvk]
	if !ok {
		return nil, noCorrespondingTypeError{gvk}
	}
	return tc.ObjectToTyped(obj, opts...)
}

// TypedToObject is the same for every converter: the value, unstructured.
func (publishedConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	return staticConverter.TypedToObject(v)
}

// noCorrespondingTypeError is managedfields' error for a kind its
// converter has no model of (its type is not exported).
type noCorrespondingTypeError struct{ gvk schema.GroupVersionKind }

func (e noCorrespondingTypeError) Error() string {
	return fmt.Sprintf("no corresponding type for %v", e.gvk)
}
