package evaluator

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apiextensionsfeatures "k8s.io/apiextensions-apiserver/pkg/features"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/portcullis-dev/portcullis/internal/evaluator/builtintypes"
)

// CRDSchemaLookup is the part of a cluster's inventory that holds its
// CustomResourceDefinitions whole. Mutating evaluation uses it, when the
// NamespaceLookup it is given (WithNamespaces) implements it too, for the server-side-apply
// merges of custom resources.
type CRDSchemaLookup interface {
	// CRDObject returns the CRD that serves gr as uploaded (its JSON, which
	// must not be modified) and a key under which what is built from its
	// spec is cached: one that changes whenever the spec does, and that
	// no other tenant's CRD has (a hash of the spec, prefixed by the
	// tenant); false when the inventory lacks the CRD.
	CRDObject(gr schema.GroupResource) (object []byte, key string, ok bool)
}

// In a cluster, the plugin's type converter manager finds no static type
// for a custom resource and reads the OpenAPI v3 document of its
// group-version from the apiserver (/openapi/v3/apis/<group>/<version>).
// The apiextensions-apiserver's openapiv3 controller builds that document
// from each served version of each established CRD with
// builder.BuildOpenAPIV3 (the structural schema, unfolded, with ObjectMeta,
// TypeMeta, embedded resources and the GVK extension added), merges the
// group-version's CRDs with builder.MergeSpecsV3 and serves it as JSON;
// the manager decodes it and calls managedfields.NewTypeConverter on its
// schemas, preserveUnknownFields false. crdTypeConverter does the same with
// the same code, from the CRD in the inventory, so that the merges see the
// type information the plugin sees.
//
// Only the request's own CRD is built: the plugin's document holds every
// CRD of the group-version, whose types are disjoint (one model per kind),
// so the kind's type is the same. When another CRD of the same
// group-version has a schema the converter refuses, the plugin has no
// converter for any kind of the group-version; here the request's kind
// still has one.
//
// Building one takes about 15 ms for a small CRD (50 ms for the first,
// which also builds the shared metadata definitions) and keeps about 25 KB
// (measured on one core for the Gadget CRD of the tests), so converters
// are cached under the lookup's key and the version: a request never
// builds one that an earlier request, for any cluster of the tenant
// holding the same CRD spec, built. A changed spec (a new upload) gets a
// new key; the old converter ages out of the cache.

// crdConverterCacheSize bounds the converters kept, all tenants together
// (tens of MB for small CRDs): a cluster holds tens to a few hundred CRD
// versions, most of them the same in all clusters of a tenant. Tenants
// using more between them evict each other's, which then cost a rebuild.
const crdConverterCacheSize = 1024

type crdConverterKey struct {
	key string
	gvk schema.GroupVersionKind
}

// crdConverter is built once, by the first request that needs it.
type crdConverter struct {
	once sync.Once
	// serves is false when the CRD does not serve the kind in its
	// version: the inventory's copy is stale.
	serves bool
	tc     managedfields.TypeConverter // nil when the CRD gives none
}

var crdConverters = func() *lru.Cache[crdConverterKey, *crdConverter] {
	c, err := lru.New[crdConverterKey, *crdConverter](crdConverterCacheSize)
	if err != nil {
		panic(err)
	}
	return c
}()

// typeConverter mirrors the plugin's GetTypeConverter for the request's
// kind: the converter of a built-in group-version the apiserver publishes
// (builtin_typeconverter.go), else the one of the custom resource's CRD in
// the cluster's inventory. Without that CRD there
// is none (the plugin's 503), and the Result says so, for the admin to
// import it.
func (m *mutator) typeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if tc := builtintypes.For(gvk); tc != nil {
		return tc
	}
	gr := m.req.Resource.GroupResource()
	var obj []byte
	var key string
	crds, ok := m.nsLookup.(CRDSchemaLookup)
	if ok {
		obj, key, ok = crds.CRDObject(gr)
	}
	if ok {
		if c := crdTypeConverter(obj, key, gvk); c.serves {
			return c.tc
		}
	}
	// Built-in groups have no CRD to import.
	if !clientgoscheme.Scheme.IsGroupRegistered(gr.Group) {
		m.res.MissingCRD = true
	}
	return nil
}

// crdTypeConverter is the cached converter of obj, the CRD of gvk's
// resource.
func crdTypeConverter(obj []byte, key string, gvk schema.GroupVersionKind) *crdConverter {
	k := crdConverterKey{key: key, gvk: gvk}
	c, ok := crdConverters.Get(k)
	if !ok {
		c = &crdConverter{}
		if prev, found, _ := crdConverters.PeekOrAdd(k, c); found {
			c = prev
		}
	}
	c.once.Do(func() {
		if c.serves = servesKind(obj, gvk); c.serves {
			// The plugin logs a converter it cannot build and has
			// none: the request gets its 503, which says what matters.
			c.tc, _ = buildCRDTypeConverter(obj, gvk)
		}
	})
	return c
}

// servesKind says whether the CRD obj serves gvk's kind in its version, as
// the cluster's would for the request to exist; a stale CRD in the
// inventory may not.
func servesKind(obj []byte, gvk schema.GroupVersionKind) bool {
	var head struct {
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Served bool   `json:"served"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if json.Unmarshal(obj, &head) != nil || head.Spec.Group != gvk.Group || head.Spec.Names.Kind != gvk.Kind {
		return false
	}
	return slices.ContainsFunc(head.Spec.Versions, func(v struct {
		Name   string `json:"name"`
		Served bool   `json:"served"`
	}) bool {
		return v.Name == gvk.Version && v.Served
	})
}

// buildCRDTypeConverter builds the converter the plugin would get for gvk
// from the apiserver's OpenAPI v3 document of a group-version served by
// the CRD obj alone.
func buildCRDTypeConverter(obj []byte, gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(obj, &crd); err != nil {
		return nil, fmt.Errorf("decoding the CRD: %w", err)
	}
	// The apiserver stores CRDs defaulted (listKind, conversion strategy,
	// ...); an uploaded file may not be.
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&crd)
	doc, err := builder.BuildOpenAPIV3(&crd, gvk.Version, builder.Options{
		V2:                      false,
		IncludeSelectableFields: utilfeature.DefaultFeatureGate.Enabled(apiextensionsfeatures.CustomResourceFieldSelectors),
	})
	if err != nil {
		return nil, err
	}
	if doc, err = builder.MergeSpecsV3(doc); err != nil {
		return nil, err
	}
	// The document as the apiserver serves it and the plugin reads it.
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var served spec3.OpenAPI
	if err := json.Unmarshal(js, &served); err != nil {
		return nil, err
	}
	if served.Components == nil {
		return nil, fmt.Errorf("the OpenAPI document of %v has no schemas", gvk.GroupVersion())
	}
	return managedfields.NewTypeConverter(served.Components.Schemas, false)
}
