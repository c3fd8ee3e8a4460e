package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
)

const objectPath = "/api/v1/tenants/{tenant}/objects/{kind}/{name}"

var objectParams = []param{
	{"group", "the API group of a param kind, when the tenant stores that kind in several groups (empty for the core group)"},
	{"namespace", "the namespace of a namespaced param"},
}

func (s *Server) policyRoutes() []route {
	return []route{
		{method: "POST", path: "/api/v1/tenants/{tenant}/apply", access: tenantAdmin,
			summary:  "Create or update policies, bindings and params, all or nothing",
			query:    []param{{"dryRun", "true: check and report the results, write nothing"}},
			rawBody:  "Kubernetes objects: multi-document YAML, or JSON (one object, or a List or any *List kind with items)",
			response: apiv1.ApplyResult{}, handle: s.apply},
		{method: "GET", path: "/api/v1/tenants/{tenant}/objects", access: tenantViewer,
			summary: "List the tenant's stored objects",
			query: joinParams([]param{
				{"type", "policies (ValidatingAdmissionPolicy, MutatingAdmissionPolicy), bindings or params (every other kind)"},
				{"kind", "a kind, case-insensitive; a policy kind also by its resource name or short name (validatingadmissionpolicies or vap, vapb, mutatingadmissionpolicies or map, mapb)"},
				{"labelSelector", "a Kubernetes label selector"},
			}, objectParams, pagingParams),
			response: apiv1.List[json.RawMessage]{}, handle: s.listObjects},
		{method: "GET", path: objectPath, access: tenantViewer, summary: "One stored object",
			query: objectParams, response: json.RawMessage{}, handle: s.getObject},
		{method: "DELETE", path: objectPath, access: tenantAdmin, summary: "Delete an object (its history is kept)",
			query: joinParams(objectParams, []param{
				{"resourceVersion", "delete only if this is still the object's resourceVersion (else 409)"},
				{"dryRun", "true: check, write nothing"},
			}),
			response: apiv1.ApplyItem{}, handle: s.deleteObject},
	}
}

func (s *Server) apply(c *call) error {
	dryRun, err := c.queryBool("dryRun")
	if err != nil {
		return err
	}
	body, err := c.body()
	if err != nil {
		return err
	}
	docs, err := splitObjects(body, "documents")
	if err != nil {
		return err
	}
	if limit := s.maxApplyDocuments(); len(docs) > limit {
		return fault.Errorf(fault.TooLarge, "the apply holds %d objects, more than the %d one apply may hold: split it into several applies",
			len(docs), limit)
	}
	outcomes, version, err := s.Policies.ApplyAll(c.ctx(), c.tenant.ID, c.principal.Name, docs, dryRun)
	if err != nil {
		return err
	}
	res := applyResult(outcomes, version, dryRun)
	// Dry runs change nothing, so they are not audited.
	if !dryRun {
		c.auditApply(outcomes)
	}
	return c.json(res)
}

// auditApply records the objects an apply created or changed, in one
// write.
func (c *call) auditApply(outcomes []policystore.ApplyOutcome) {
	var es []auditlog.Entry
	for _, o := range outcomes {
		if o.Action == policystore.ActionUnchanged {
			continue
		}
		action := actionUpdate
		if o.Action == policystore.ActionCreated {
			action = actionCreate
		}
		es = append(es, auditlog.Entry{Action: action, Kind: o.Object.Kind, Namespace: o.Object.Namespace, Name: o.Object.Name,
			VersionBefore: versionPtr(o.VersionBefore), VersionAfter: versionPtr(o.Object.ResourceVersion),
			Detail: map[string]any{"group": o.Object.Group, "apiVersion": o.Object.APIVersion, "result": o.Action}})
	}
	c.auditAll(es)
}

func applyResult(outcomes []policystore.ApplyOutcome, version int64, dryRun bool) apiv1.ApplyResult {
	res := apiv1.ApplyResult{DryRun: dryRun, Version: version, Results: make([]apiv1.ApplyItem, len(outcomes))}
	for i, o := range outcomes {
		res.Results[i] = applyItem(i, o.Object, o.Action, o.Object.ResourceVersion)
		res.Results[i].Warnings = slices.Concat(o.Warnings, applyWarnings(o.Object))
	}
	return res
}

// DefaultMaxApplyDocuments is the most objects one apply may hold. An apply
// is one transaction that holds the tenant's write lock, at about 0.1 ms
// an object (10,000 new small objects in about 1 s, measured in November
// 2026); the cap keeps the largest one well inside the listeners' 50 s
// request deadline and the tenant's other writers from waiting long. The
// body limit alone would allow over 100,000 tiny objects.
const DefaultMaxApplyDocuments = 20_000

func (s *Server) maxApplyDocuments() int {
	if s.MaxApplyDocuments > 0 {
		return s.MaxApplyDocuments
	}
	return DefaultMaxApplyDocuments
}

func applyItem(doc int, o *policystore.Object, action string, rv int64) apiv1.ApplyItem {
	return apiv1.ApplyItem{Document: doc, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
		Action: action, ResourceVersion: rv}
}

// versionPtr is v for the audit log, nil for 0 (no version).
func versionPtr(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// resolveKind turns a kind as a user types it (any case, or a short name)
// and ?group= into the stored group and kind. A kind that is not a policy
// kind is a param kind, looked up among the kinds the tenant stores; one it
// does not store comes back as typed, so that lookups answer "not found".
func (s *Server) resolveKind(c *call, kind string) (schema.GroupKind, error) {
	q := c.r.URL.Query()
	group, groupSet := q.Get("group"), q.Has("group")
	if !groupSet || group == policystore.GroupAdmission {
		for _, k := range policystore.PolicyKinds {
			if strings.EqualFold(k.Kind, kind) || strings.EqualFold(k.Resource, kind) || strings.EqualFold(k.ShortName, kind) {
				return k.GroupKind, nil
			}
		}
	}
	kinds, err := s.Policies.Kinds(c.ctx(), c.tenant.ID)
	if err != nil {
		return schema.GroupKind{}, err
	}
	var exact, folded []policystore.StoredKind
	for _, k := range kinds {
		if policystore.IsPolicyKind(k.GroupKind) || (groupSet && k.Group != group) {
			continue
		}
		if k.Kind == kind {
			exact = append(exact, k)
		} else if strings.EqualFold(k.Kind, kind) {
			folded = append(folded, k)
		}
	}
	matches := exact
	if len(matches) == 0 {
		matches = folded
	}
	// A group whose objects of that kind are all deleted does not make a
	// live one ambiguous; its history is still reachable with ?group=.
	if live := slices.DeleteFunc(slices.Clone(matches), func(k policystore.StoredKind) bool { return !k.Live }); len(live) == 1 {
		matches = live
	}
	switch len(matches) {
	case 0:
		return schema.GroupKind{Group: group, Kind: kind}, nil
	case 1:
		return matches[0].GroupKind, nil
	}
	names := make([]string, len(matches))
	for i, gk := range matches {
		names[i] = fmt.Sprintf("%s in group %q", gk.Kind, gk.Group)
	}
	return schema.GroupKind{}, fault.InvalidField("group", "kind %q is stored as %s; say which with ?group=", kind, strings.Join(names, " and "))
}

// objectRef resolves the {kind}/{name} of the path.
func (s *Server) objectRef(c *call) (policystore.Ref, error) {
	gk, err := s.resolveKind(c, c.r.PathValue("kind"))
	if err != nil {
		return policystore.Ref{}, err
	}
	return policystore.Ref{Group: gk.Group, Kind: gk.Kind, Namespace: c.query("namespace"), Name: c.r.PathValue("name")}, nil
}

func (s *Server) listObjects(c *call) error {
	q := c.r.URL.Query()
	typ := q.Get("type")
	switch typ {
	case "", apiv1.TypePolicies, apiv1.TypeBindings, apiv1.TypeParams:
	default:
		return fault.InvalidField("type", "must be %s, %s or %s, not %q", apiv1.TypePolicies, apiv1.TypeBindings, apiv1.TypeParams, typ)
	}
	opts := policystore.ListOptions{Namespace: q.Get("namespace"), LabelSelector: q.Get("labelSelector")}
	// ListOptions cannot ask for the core group (""), so the group is
	// filtered here.
	group, groupSet := q.Get("group"), q.Has("group")
	if k := q.Get("kind"); k != "" {
		gk, err := s.resolveKind(c, k)
		if err != nil {
			return err
		}
		opts.Kind, group, groupSet = gk.Kind, gk.Group, true
	}
	objs, err := s.Policies.List(c.ctx(), c.tenant.ID, opts)
	if err != nil {
		return err
	}
	key := func(o *policystore.Object) string { return o.Group + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name }
	var items []*policystore.Object
	for _, o := range objs {
		if groupSet && o.Group != group {
			continue
		}
		if typ != "" && objectType(o.GroupKind()) != typ {
			continue
		}
		items = append(items, o)
	}
	sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	p, err := page(c, items, key)
	if err != nil {
		return err
	}
	// Only the page's objects are encoded.
	out := apiv1.List[json.RawMessage]{Items: make([]json.RawMessage, len(p.Items)), Continue: p.Continue}
	for i, o := range p.Items {
		if out.Items[i], err = o.Object.MarshalJSON(); err != nil {
			return err
		}
	}
	return c.json(out)
}

func objectType(gk schema.GroupKind) string {
	switch k, ok := policystore.LookupPolicyKind(gk); {
	case !ok:
		return apiv1.TypeParams
	case k.Binding:
		return apiv1.TypeBindings
	}
	return apiv1.TypePolicies
}

func (s *Server) getObject(c *call) error {
	ref, err := s.objectRef(c)
	if err != nil {
		return err
	}
	o, err := s.Policies.Get(c.ctx(), c.tenant.ID, ref)
	if err != nil {
		return err
	}
	return c.json(o.Object.Object)
}

func (s *Server) deleteObject(c *call) error {
	dryRun, err := c.queryBool("dryRun")
	if err != nil {
		return err
	}
	ref, err := s.objectRef(c)
	if err != nil {
		return err
	}
	res, err := s.Policies.Delete(c.ctx(), c.tenant.ID, c.principal.Name, ref,
		policystore.DeleteOptions{ResourceVersion: c.query("resourceVersion"), DryRun: dryRun})
	v, before := res.Tombstone, res.VersionBefore
	if err != nil {
		return err
	}
	if !dryRun {
		c.audit(auditlog.Entry{Action: actionDelete, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
			VersionBefore: versionPtr(before), VersionAfter: versionPtr(v.Version),
			Detail: map[string]any{"group": ref.Group}})
	}
	return c.json(apiv1.ApplyItem{APIVersion: v.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
		Action: apiv1.ActionDeleted, ResourceVersion: v.Version})
}
