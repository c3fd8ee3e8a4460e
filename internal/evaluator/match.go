package evaluator

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const metadataNameLabel = "kubernetes.io/metadata.name"

// errNilSelector is the plugin's message (generic/policy_matcher.go).
const errNilSelector = "a nil %s selector was passed, please ensure selectors are initialized properly"

var namespaceResource = schema.GroupVersionResource{Group: "", Version: "v1", Resource: "namespaces"}

// compiledMatch is a MatchResources with its selectors parsed once.
type compiledMatch struct {
	nsSel      labels.Selector
	nsErr      error // parse error, as the plugin reports it (internal error)
	nsEmpty    bool
	nsNameOnly bool // every requirement is on kubernetes.io/metadata.name
	objSel     labels.Selector
	objErr     error
	objEmpty   bool
	rules      []compiledRule
	exclude    []compiledRule
	equivalent bool
	err        error // first parse error, for CompileErrors
}

type compiledRule struct {
	operations []admissionregistrationv1.OperationType
	groups     []string
	versions   []string
	resources  [][2]string // resource, subresource
	scope      *admissionregistrationv1.ScopeType
	names      []string
}

func compileConstraints(mc *admissionregistrationv1.MatchResources) (*compiledMatch, error) {
	if mc == nil {
		return nil, errors.New("policy contained no match constraints, a required field")
	}
	return compileMatchResources(mc)
}

func compileMatchResources(mr *admissionregistrationv1.MatchResources) (*compiledMatch, error) {
	if mr.NamespaceSelector == nil {
		return nil, fmt.Errorf(errNilSelector, "namespace")
	}
	if mr.ObjectSelector == nil {
		return nil, fmt.Errorf(errNilSelector, "object")
	}
	m := &compiledMatch{}
	if sel, err := metav1.LabelSelectorAsSelector(mr.NamespaceSelector); err != nil {
		m.nsErr = apierrors.NewInternalError(err)
		m.err = err
	} else {
		m.nsSel = sel
		m.nsEmpty = sel.Empty()
		reqs, _ := sel.Requirements()
		m.nsNameOnly = true
		for _, r := range reqs {
			if r.Key() != metadataNameLabel {
				m.nsNameOnly = false
			}
		}
	}
	if sel, err := metav1.LabelSelectorAsSelector(mr.ObjectSelector); err != nil {
		m.objErr = apierrors.NewInternalError(err)
		if m.err == nil {
			m.err = err
		}
	} else {
		m.objSel = sel
		m.objEmpty = sel.Empty()
	}
	m.rules = compileRules(mr.ResourceRules)
	m.exclude = compileRules(mr.ExcludeResourceRules)
	m.equivalent = mr.MatchPolicy != nil && *mr.MatchPolicy == admissionregistrationv1.Equivalent
	return m, nil
}

func compileRules(in []admissionregistrationv1.NamedRuleWithOperations) []compiledRule {
	out := make([]compiledRule, 0, len(in))
	for _, r := range in {
		cr := compiledRule{
			operations: r.Operations,
			groups:     r.APIGroups,
			versions:   r.APIVersions,
			scope:      r.Scope,
			names:      r.ResourceNames,
		}
		for _, res := range r.Resources {
			parts := strings.SplitN(res, "/", 2)
			if len(parts) == 2 {
				cr.resources = append(cr.resources, [2]string{parts[0], parts[1]})
			} else {
				cr.resources = append(cr.resources, [2]string{parts[0], ""})
			}
		}
		out = append(out, cr)
	}
	return out
}

func exactOrWildcard(items []string, requested string) bool {
	for _, item := range items {
		if item == "*" || item == requested {
			return true
		}
	}
	return false
}

// matches is the apiserver's rules.Matcher.Matches for a resource.
func (r *compiledRule) matches(rc *reqCtx, gvr schema.GroupVersionResource) bool {
	if r.scope != nil && *r.scope != admissionregistrationv1.AllScopes {
		switch *r.scope {
		case admissionregistrationv1.NamespacedScope:
			if gvr == namespaceResource || rc.req.Namespace == "" {
				return false
			}
		case admissionregistrationv1.ClusterScope:
			if !(gvr == namespaceResource || rc.req.Namespace == "") {
				return false
			}
		default:
			return false
		}
	}
	opOK := false
	for _, op := range r.operations {
		if op == admissionregistrationv1.OperationAll || op == rc.req.Operation {
			opOK = true
			break
		}
	}
	if !opOK || !exactOrWildcard(r.groups, gvr.Group) || !exactOrWildcard(r.versions, gvr.Version) {
		return false
	}
	sub := rc.req.RequestSubResource
	for _, rs := range r.resources {
		if (rs[0] == "*" || rs[0] == gvr.Resource) && (rs[1] == "*" || rs[1] == sub) {
			return true
		}
	}
	return false
}

func (r *compiledRule) nameMatches(name string) bool {
	if len(r.names) == 0 {
		return true
	}
	return slices.Contains(r.names, name)
}

// matchesResourceRules mirrors matching.matchesResourceRules. Equivalent
// resources are the ones this request carries: when the webhook received the
// object converted (Resource differs from RequestResource), that resource is
// equivalent to the request's.
func (rc *reqCtx) matchesResourceRules(rules []compiledRule, equivalent bool) (bool, schema.GroupVersionResource, schema.GroupVersionKind, error) {
	attrGVR := rc.req.RequestResource
	for i := range rules {
		if !rules[i].matches(rc, attrGVR) {
			continue
		}
		if rules[i].nameMatches(rc.req.Name) {
			return true, attrGVR, rc.req.RequestKind, nil
		}
	}
	if !equivalent || rc.req.Resource == attrGVR {
		return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, nil
	}
	eq := rc.req.Resource
	for i := range rules {
		if !rules[i].matches(rc, eq) {
			continue
		}
		if rc.req.Kind.Empty() {
			return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, fmt.Errorf("unable to convert to %v: unknown kind", eq)
		}
		if rules[i].nameMatches(rc.req.Name) {
			return true, eq, rc.req.Kind, nil
		}
	}
	return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, nil
}

// matches mirrors matching.Matcher.Matches, including the order in which
// selector errors surface.
func (m *compiledMatch) matches(rc *reqCtx) (bool, schema.GroupVersionResource, schema.GroupVersionKind, error) {
	nsMatches, nsErr := m.matchNamespace(rc)
	if !nsMatches && nsErr == nil {
		return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, nil
	}
	objMatches, objErr := m.matchObject(rc)
	if !objMatches && objErr == nil {
		return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, nil
	}
	if excluded, _, _, err := rc.matchesResourceRules(m.exclude, m.equivalent); excluded || err != nil {
		return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, err
	}
	var (
		isMatch bool
		gvr     schema.GroupVersionResource
		gvk     schema.GroupVersionKind
		err     error
	)
	if len(m.rules) == 0 {
		isMatch, gvr, gvk = true, rc.req.RequestResource, rc.req.RequestKind
	} else {
		isMatch, gvr, gvk, err = rc.matchesResourceRules(m.rules, m.equivalent)
	}
	if err != nil || !isMatch {
		return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, err
	}
	if nsErr != nil {
		return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, nsErr
	}
	if objErr != nil {
		return false, schema.GroupVersionResource{}, schema.GroupVersionKind{}, objErr
	}
	return true, gvr, gvk, nil
}

func (m *compiledMatch) matchNamespace(rc *reqCtx) (bool, error) {
	if rc.req.Namespace == "" && rc.req.RequestResource.Resource != "namespaces" {
		return true, nil
	}
	if m.nsErr != nil {
		return false, m.nsErr
	}
	if m.nsEmpty {
		return true, nil
	}
	set, err := rc.namespaceLabels(m.nsNameOnly)
	if !rc.matchesOwnLabels() {
		// Committed OR provisional: what an allowed request proposed may
		// make the binding apply, never stop it (nor settle an unknown
		// namespace to "does not apply").
		if prov, ok := rc.provisionalLabels(); ok && m.nsSel.Matches(prov) {
			return true, nil
		}
	}
	if err != nil {
		return false, err
	}
	return m.nsSel.Matches(set), nil
}

func (m *compiledMatch) matchObject(rc *reqCtx) (bool, error) {
	if m.objErr != nil {
		return false, m.objErr
	}
	if m.objEmpty {
		return true, nil
	}
	if rc.kindInfo().noMeta {
		// The plugin reads labels through meta.Accessor on the typed
		// object; a kind without ObjectMeta (PodExecOptions and the other
		// CONNECT options) has none to read, so only an empty selector
		// matches it, not even DoesNotExist.
		return false, nil
	}
	rc.loadObjectLabels()
	return (rc.req.Object != nil && m.objSel.Matches(labels.Set(rc.objLabels))) ||
		(rc.req.OldObject != nil && m.objSel.Matches(labels.Set(rc.oldLabels))), nil
}

// ruleIndex finds the policies whose matchConstraints can match an
// operation, group and resource.
type ruleIndex struct {
	byKey  map[indexKey][]int
	always []int // policies without resourceRules or with a constraints error
}

type indexKey struct {
	op       admissionregistrationv1.OperationType
	group    string
	resource string
}

func buildRuleIndex(hooks []*compiledPolicy) *ruleIndex {
	ix := &ruleIndex{byKey: map[indexKey][]int{}}
	for i, cp := range hooks {
		if cp.constraintsErr != nil || cp.match == nil || len(cp.match.rules) == 0 {
			ix.always = append(ix.always, i)
			continue
		}
		seen := map[indexKey]bool{}
		for _, r := range cp.match.rules {
			for _, op := range r.operations {
				for _, g := range r.groups {
					for _, res := range r.resources {
						k := indexKey{op: op, group: g, resource: res[0]}
						if !seen[k] {
							seen[k] = true
							ix.byKey[k] = append(ix.byKey[k], i)
						}
					}
				}
			}
		}
	}
	return ix
}

// lookup returns the candidate policy positions in ascending order.
func (ix *ruleIndex) lookup(op admissionregistrationv1.OperationType, gvrs ...schema.GroupVersionResource) []int {
	var lists [][]int
	if len(ix.always) > 0 {
		lists = append(lists, ix.always)
	}
	for _, gvr := range gvrs {
		for _, o := range [2]admissionregistrationv1.OperationType{op, admissionregistrationv1.OperationAll} {
			for _, g := range [2]string{gvr.Group, "*"} {
				for _, r := range [2]string{gvr.Resource, "*"} {
					if l := ix.byKey[indexKey{op: o, group: g, resource: r}]; len(l) > 0 {
						lists = append(lists, l)
					}
				}
			}
		}
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	var out []int
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
