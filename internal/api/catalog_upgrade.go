package api

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/catalog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
)

// upgradeCatalog replaces an installed entry with the catalog's version.
// The tenant's choices carry over: each binding keeps its validation
// actions and cluster selector, each param its values for the keys the new
// version still has. The answer's diff is computed from a dry run of the
// apply, so it compares the objects as stored on both sides.
func (s *Server) upgradeCatalog(c *call) error {
	e, dryRun, err := catalogTarget(c)
	if err != nil {
		return err
	}
	have, err := s.installed(c, e)
	if err != nil {
		return err
	}
	if len(have) == 0 {
		return fault.Errorf(fault.NotFound, "catalog entry %s is not installed in tenant %s: install it first", e.Name, c.tenant.Name)
	}
	objs, err := e.Objects(catalog.Options{})
	if err != nil {
		return err
	}
	keepChoices(objs, have)
	res := apiv1.CatalogResult{Entry: e.Name, FromVersion: have[0].Object.GetAnnotations()[catalog.AnnotationVersion], ToVersion: e.Version}
	docs, err := marshalAll(objs)
	if err != nil {
		return err
	}
	// The stored form of each new object, from a dry run.
	outcomes, _, err := s.Policies.ApplyAll(c.ctx(), c.tenant.ID, c.principal.Name, docs, true)
	if err != nil {
		return err
	}
	if res.Diff, err = upgradeDiff(have, outcomes, e); err != nil {
		return err
	}
	kept := map[policystore.Ref]bool{}
	for _, o := range outcomes {
		kept[o.Object.Ref] = true
	}
	var removed []*policystore.Object
	for _, h := range have {
		if !kept[h.Ref] {
			removed = append(removed, h)
		}
	}
	if res.ApplyResult, res.Removed, err = s.applyCatalog(c, e, docs, removed, dryRun); err != nil {
		return err
	}
	return c.json(res)
}

// keepChoices carries the tenant's choices from the installed objects to
// the new ones: a binding's validation actions and cluster selector (a new
// binding takes those of the installed ones), and a param's values.
func keepChoices(objs []map[string]any, have []*policystore.Object) {
	byRef := map[policystore.Ref]map[string]any{}
	var anyBinding map[string]any
	for _, h := range have {
		byRef[h.Ref] = h.Object.Object
		if h.Kind == "ValidatingAdmissionPolicyBinding" && anyBinding == nil {
			anyBinding = h.Object.Object
		}
	}
	for _, o := range objs {
		old := byRef[refOf(o)]
		switch o["kind"] {
		case "ValidatingAdmissionPolicyBinding":
			if old == nil {
				old = anyBinding
			}
			if old == nil {
				continue
			}
			if actions, ok := nested(old, "spec")["validationActions"]; ok {
				nested(o, "spec")["validationActions"] = actions
			}
			sel, _ := nested(nested(old, "metadata"), "annotations")[catalog.AnnotationClusterSelector].(string)
			ann := nested(nested(o, "metadata"), "annotations")
			if sel != "" {
				ann[catalog.AnnotationClusterSelector] = sel
			}
		case "ConfigMap":
			if old == nil {
				continue
			}
			data, oldData := nested(o, "data"), nested(old, "data")
			for k := range data {
				if v, ok := oldData[k]; ok {
					data[k] = v
				}
			}
		}
	}
}

// nested returns m[key] as a map, creating it when absent.
func nested(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	if v == nil {
		v = map[string]any{}
		m[key] = v
	}
	return v
}

// upgradeDiff is the unified diff, object by object, from the installed
// objects to the new ones as they would be stored, leaving out what the
// store sets on every write.
func upgradeDiff(have []*policystore.Object, outcomes []policystore.ApplyOutcome, e catalog.Entry) (string, error) {
	type pair struct{ a, b map[string]any }
	pairs := map[string]*pair{}
	key := func(r policystore.Ref) string { return r.Kind + " " + qualified(r) }
	for _, h := range have {
		pairs[key(h.Ref)] = &pair{a: h.Object.Object}
	}
	for _, o := range outcomes {
		k := key(o.Object.Ref)
		if pairs[k] == nil {
			pairs[k] = &pair{}
		}
		pairs[k].b = o.Object.Object.Object
	}
	keys := make([]string, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out bytes.Buffer
	for _, k := range keys {
		ya, err := diffYAML(pairs[k].a)
		if err != nil {
			return "", err
		}
		yb, err := diffYAML(pairs[k].b)
		if err != nil {
			return "", err
		}
		from, to := k+" (installed)", fmt.Sprintf("%s (catalog %s %s)", k, e.Name, e.Version)
		if ya == "" {
			from = k + " (not installed)"
		}
		if yb == "" {
			to = k + " (removed)"
		}
		d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(ya), B: lines(yb), FromFile: from, ToFile: to, Context: 3})
		if err != nil {
			return "", err
		}
		out.WriteString(d)
	}
	return out.String(), nil
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return difflib.SplitLines(s)
}

// diffYAML renders an object for the diff without the fields every write
// changes.
func diffYAML(o map[string]any) (string, error) {
	if o == nil {
		return "", nil
	}
	c := map[string]any{}
	for k, v := range o {
		c[k] = v
	}
	if meta, ok := o["metadata"].(map[string]any); ok {
		m := map[string]any{}
		for k, v := range meta {
			switch k {
			case "resourceVersion", "uid", "generation", "creationTimestamp", "managedFields":
			default:
				m[k] = v
			}
		}
		c["metadata"] = m
	}
	b, err := yaml.Marshal(c)
	return strings.TrimRight(string(b), "\n") + "\n", err
}
