package evaluator

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/common"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// param is one stored param with its CEL value prepared once.
type param struct {
	namespace string
	name      string
	labels    labels.Set
	val       ref.Val
	// native is the decoded map behind val when val is cel-go's own
	// wrapping of it (what the fast path may read directly); nil otherwise.
	native map[string]any
}

func (p *param) key() string {
	if p.namespace == "" {
		return p.name
	}
	return p.namespace + "/" + p.name
}

type paramSet struct {
	namespaced bool
	byKey      map[string]*param // namespace/name or name
	byNS       map[string][]*param
	all        []*param
}

type paramStore struct {
	sets  map[schema.GroupVersionKind]*paramSet
	scope func(gvk schema.GroupVersionKind) (namespaced, known bool)
	count int
}

// wellKnownClusterScoped lists built-in cluster-scoped kinds that could be
// used as params; every other built-in kind used as a param is namespaced.
var wellKnownClusterScoped = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:                                   true,
	{Group: "", Kind: "Node"}:                                        true,
	{Group: "", Kind: "PersistentVolume"}:                            true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                  true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              true,
}

func newParamStore(in []*unstructured.Unstructured, scope func(schema.GroupVersionKind) (bool, bool)) *paramStore {
	ps := &paramStore{sets: map[schema.GroupVersionKind]*paramSet{}, scope: scope}
	nsSeen := map[schema.GroupVersionKind]bool{}
	for _, u := range in {
		if u == nil {
			continue
		}
		gvk := u.GroupVersionKind()
		set := ps.sets[gvk]
		if set == nil {
			set = &paramSet{byKey: map[string]*param{}, byNS: map[string][]*param{}}
			ps.sets[gvk] = set
		}
		p := &param{namespace: u.GetNamespace(), name: u.GetName(), labels: labels.Set(u.GetLabels()), val: paramValue(u)}
		p.native = nativeMap(p.val)
		if p.namespace != "" {
			nsSeen[gvk] = true
		}
		if _, dup := set.byKey[p.key()]; dup {
			continue
		}
		set.byKey[p.key()] = p
		set.all = append(set.all, p)
		ps.count++
	}
	for gvk, set := range ps.sets {
		set.namespaced = ps.namespacedWith(gvk, nsSeen[gvk], true)
		slices.SortFunc(set.all, func(a, b *param) int {
			if c := strings.Compare(a.namespace, b.namespace); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		for _, p := range set.all {
			set.byNS[p.namespace] = append(set.byNS[p.namespace], p)
		}
	}
	return ps
}

func (ps *paramStore) namespacedWith(gvk schema.GroupVersionKind, anyNamespaced, haveParams bool) bool {
	if ps.scope != nil {
		if namespaced, known := ps.scope(gvk); known {
			return namespaced
		}
	}
	if wellKnownClusterScoped[gvk.GroupKind()] {
		return false
	}
	if clientgoscheme.Scheme.Recognizes(gvk) {
		return true
	}
	if haveParams {
		return anyNamespaced
	}
	return true
}

func (ps *paramStore) namespaced(gvk schema.GroupVersionKind) bool {
	if set := ps.sets[gvk]; set != nil {
		return set.namespaced
	}
	return ps.namespacedWith(gvk, false, false)
}

// paramValue prepares the CEL value of a param exactly as the plugin would
// see it: built-in kinds come from a typed informer (a typed object without
// TypeMeta, wrapped with the policy's paramKind), other kinds from a dynamic
// informer as unstructured objects.
func paramValue(u *unstructured.Unstructured) ref.Val {
	gvk := u.GroupVersionKind()
	if typed, err := clientgoscheme.Scheme.New(gvk); err == nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), typed); err == nil {
			typed.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			res, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err == nil {
				res["apiVersion"] = gvk.GroupVersion().String()
				res["kind"] = gvk.Kind
				// what SchemalessTypedToVal does with the plugin's wrappedParam
				return types.DefaultTypeAdapter.NativeToValue(res)
			}
		}
	}
	return common.SchemalessTypedToVal(u)
}

// stringInterfaceMap is the concrete type cel-go gives a map[string]any.
var stringInterfaceMap = reflect.TypeOf(types.DefaultTypeAdapter.NativeToValue(map[string]any{}))

// nativeMap returns the map[string]any a CEL value wraps, when the value
// is cel-go's map wrapping of it (so reading the map directly is reading
// the value); nil for anything else, such as the apiserver's reflective
// values of typed objects. Both callers of paramValue's wrapping use
// types.DefaultTypeAdapter, whose conversions the fast path mirrors.
func nativeMap(v ref.Val) map[string]any {
	if reflect.TypeOf(v) != stringInterfaceMap {
		return nil
	}
	m, _ := v.Value().(map[string]any)
	return m
}

type compiledParamRef struct {
	ref         *admissionregistrationv1.ParamRef
	selector    labels.Selector
	selectorErr error
}

func compileParamRef(pr *admissionregistrationv1.ParamRef) *compiledParamRef {
	c := &compiledParamRef{ref: pr}
	if pr.Selector != nil {
		c.selector, c.selectorErr = metav1.LabelSelectorAsSelector(pr.Selector)
	}
	return c
}

// collectParams mirrors generic.CollectParams. A nil entry means "no
// param" (the policy has no paramKind or the binding no paramRef).
func (s *Snapshot) collectParams(cp *compiledPolicy, cb *compiledBinding, namespace string) ([]*param, error) {
	paramKind := cp.paramKind
	var pr *admissionregistrationv1.ParamRef
	if cb.paramRef != nil {
		pr = cb.paramRef.ref
	}
	paramsNamespace := ""
	if paramKind != nil && pr != nil && cp.paramNamespaced {
		paramsNamespace = namespace
		if len(pr.Namespace) > 0 {
			paramsNamespace = pr.Namespace
		} else if len(paramsNamespace) == 0 {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	}
	var params []*param
	switch {
	case paramKind == nil, pr == nil:
		return []*param{nil}, nil
	case len(pr.Namespace) > 0 && !cp.paramNamespaced:
		return nil, fmt.Errorf("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	case len(pr.Name) > 0:
		if pr.Selector != nil {
			return nil, fmt.Errorf("paramRef.name and paramRef.selector are mutually exclusive")
		}
		if set := s.params.sets[*cp.paramGVK]; set != nil {
			key := pr.Name
			if cp.paramNamespaced {
				key = paramsNamespace + "/" + pr.Name
			}
			if p := set.byKey[key]; p != nil {
				params = []*param{p}
			}
		}
	case pr.Selector != nil:
		if cb.paramRef.selectorErr != nil {
			return nil, cb.paramRef.selectorErr
		}
		if set := s.params.sets[*cp.paramGVK]; set != nil {
			candidates := set.all
			if cp.paramNamespaced {
				candidates = set.byNS[paramsNamespace]
			}
			for _, p := range candidates {
				if cb.paramRef.selector.Matches(p.labels) {
					params = append(params, p)
				}
			}
		}
	default:
		return nil, fmt.Errorf("one of name or selector must be provided")
	}
	if len(params) == 0 && pr.ParameterNotFoundAction != nil && *pr.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
		return nil, errParamNotFound
	}
	return params, nil
}
