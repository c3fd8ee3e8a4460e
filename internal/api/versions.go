package api

import (
	"fmt"
	"math"
	"strconv"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
)

func (s *Server) versionRoutes() []route {
	return []route{
		{method: "GET", path: objectPath + "/history", access: tenantViewer, summary: "An object's versions, newest first",
			query: joinParams(objectParams, pagingParams), response: apiv1.List[apiv1.Version]{}, handle: s.objectHistory},
		{method: "GET", path: objectPath + "/versions/{version}", access: tenantViewer, summary: "One version of an object, with its body",
			query: objectParams, response: apiv1.Version{}, handle: s.objectVersion},
		{method: "GET", path: objectPath + "/diff", access: tenantViewer, summary: "A unified diff of two versions' YAML",
			query: joinParams(objectParams, []param{
				{"from", "the older version (required)"},
				{"to", "the newer version; the current one when absent"},
			}),
			response: apiv1.Diff{}, handle: s.objectDiff},
		{method: "POST", path: objectPath + "/rollback", access: tenantAdmin,
			summary: "Write a new version equal to an earlier one",
			query:   objectParams, request: apiv1.Rollback{}, response: apiv1.ApplyItem{}, handle: s.rollback},
	}
}

func (s *Server) objectHistory(c *call) error {
	ref, err := s.objectRef(c)
	if err != nil {
		return err
	}
	vs, err := s.Policies.History(c.ctx(), c.tenant.ID, ref)
	if err != nil {
		return err
	}
	items := make([]apiv1.Version, len(vs))
	for i, v := range vs {
		items[i] = wireVersion(v, false) // the history lists versions, not their objects
	}
	// Newest first: the cursor key grows as the version shrinks.
	list, err := page(c, items, func(v apiv1.Version) string { return fmt.Sprintf("%020d", math.MaxInt64-v.Version) })
	if err != nil {
		return err
	}
	return c.json(list)
}

func wireVersion(v *policystore.Version, withObject bool) apiv1.Version {
	out := apiv1.Version{Version: v.Version, Operation: v.Operation, Author: v.Author, Time: v.CreatedAt,
		APIVersion: v.APIVersion, RollbackOf: v.RollbackOf}
	if withObject && v.Object != nil {
		out.Object, _ = v.Object.MarshalJSON()
	}
	return out
}

// pathVersion reads a version number from the path or the query.
func pathVersion(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fault.InvalidField(name, "must be a version number as the object's history shows it, not %q", v)
	}
	return n, nil
}

func (s *Server) objectVersion(c *call) error {
	ref, err := s.objectRef(c)
	if err != nil {
		return err
	}
	n, err := pathVersion("version", c.r.PathValue("version"))
	if err != nil {
		return err
	}
	v, err := s.Policies.GetVersion(c.ctx(), c.tenant.ID, ref, n)
	if err != nil {
		return err
	}
	return c.json(wireVersion(v, true))
}

func (s *Server) objectDiff(c *call) error {
	ref, err := s.objectRef(c)
	if err != nil {
		return err
	}
	if c.query("from") == "" {
		return fault.InvalidField("from", "is required: the version to compare from")
	}
	from, err := pathVersion("from", c.query("from"))
	if err != nil {
		return err
	}
	a, err := s.Policies.GetVersion(c.ctx(), c.tenant.ID, ref, from)
	if err != nil {
		return err
	}
	var b *policystore.Version
	if c.query("to") == "" {
		vs, err := s.Policies.History(c.ctx(), c.tenant.ID, ref)
		if err != nil {
			return err
		}
		b = vs[0]
	} else {
		to, err := pathVersion("to", c.query("to"))
		if err != nil {
			return err
		}
		if b, err = s.Policies.GetVersion(c.ctx(), c.tenant.ID, ref, to); err != nil {
			return err
		}
	}
	ya, err := versionYAML(a.Object)
	if err != nil {
		return err
	}
	yb, err := versionYAML(b.Object)
	if err != nil {
		return err
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(ya), B: difflib.SplitLines(yb),
		FromFile: fmt.Sprintf("%s (version %d)", ref, a.Version),
		ToFile:   fmt.Sprintf("%s (version %d)", ref, b.Version),
		Context:  3,
	})
	if err != nil {
		return err
	}
	return c.json(apiv1.Diff{From: a.Version, To: b.Version, Diff: diff})
}

// versionYAML renders a version for diffing; a deletion is empty.
func versionYAML(u *unstructured.Unstructured) (string, error) {
	if u == nil {
		return "", nil
	}
	b, err := yaml.Marshal(u.Object)
	return string(b), err
}

func (s *Server) rollback(c *call) error {
	ref, err := s.objectRef(c)
	if err != nil {
		return err
	}
	var req apiv1.Rollback
	if err := c.decode(&req); err != nil {
		return err
	}
	if req.ToVersion < 1 {
		return fault.InvalidField("toVersion", "is required: a version number as the object's history shows it")
	}
	res, err := s.Policies.Rollback(c.ctx(), c.tenant.ID, c.principal.Name, ref,
		policystore.RollbackOptions{ToVersion: req.ToVersion, ResourceVersion: req.ResourceVersion})
	o, before := res.Object, res.VersionBefore
	if err != nil {
		return err
	}
	c.audit(auditlog.Entry{Action: "rollback", Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
		VersionBefore: versionPtr(before), VersionAfter: versionPtr(o.ResourceVersion),
		Detail: map[string]any{"group": o.Group, "toVersion": req.ToVersion}})
	return c.json(applyItem(0, o, apiv1.ActionRolledBack, o.ResourceVersion))
}
