package policystore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Apply actions, as kubectl prints them.
const (
	ActionCreated    = "created"
	ActionConfigured = "configured"
	ActionUnchanged  = "unchanged"
)

// ApplyOutcome is what ApplyAll did (or, for a dry run, would do) with one
// document.
type ApplyOutcome struct {
	// Object is the object as stored after the apply.
	Object *Object
	Action string
	// VersionBefore is the object's resourceVersion before the apply; 0
	// when it did not exist or was deleted.
	VersionBefore int64
	Warnings      []string
}

// ApplyAll creates or updates every document (one YAML or JSON object each)
// in one transaction: if any is refused, nothing is written. The changed
// documents take consecutive versions in document order and the tenant's
// version moves once, with one notification (see writeAll). Each document
// is validated as Apply validates it; a refusal is one fault.Invalid error
// whose causes name every bad field as documents[i].<field>, with the
// object's kind and name in the message. A document that repeats an object of an
// earlier one is refused too: its result would depend on the order.
//
// With dryRun the same transaction runs and is rolled back, so the
// outcomes and versions are exactly those a real apply would give at that
// moment. version is the tenant's policy version after the apply.
//
// A param whose kind is the paramKind of no policy (the stored ones and
// those of this apply) is stored with a warning: it is most likely a typo.
func (s *Store) ApplyAll(ctx context.Context, tenantID int64, author string, docs [][]byte, dryRun bool) ([]ApplyOutcome, int64, error) {
	out, _, version, err := s.ApplyAndDelete(ctx, tenantID, author, docs, nil, dryRun)
	return out, version, err
}

// Deletion is an object for ApplyAndDelete to delete, with its
// resourceVersion precondition ("" for none).
type Deletion struct {
	Ref             Ref
	ResourceVersion string
}

// ApplyAndDelete is ApplyAll followed by the deletion of dels, all in one
// transaction: if the apply or any deletion fails, nothing is written. It
// replaces a set of objects with another (a catalog upgrade), so that the
// tenant never runs a mix of the old and the new set. The deletions take
// the versions after the apply's, in order. An object both applied and
// deleted is refused: the result would depend on the order.
func (s *Store) ApplyAndDelete(ctx context.Context, tenantID int64, author string, docs [][]byte, dels []Deletion, dryRun bool) ([]ApplyOutcome, []DeleteResult, int64, error) {
	ds, rvs, err := decodeAll("documents", docs)
	if err != nil {
		return nil, nil, 0, err
	}
	applied := make(map[Ref]bool, len(ds))
	for _, d := range ds {
		applied[d.ref] = true
	}
	for i, del := range dels {
		if applied[del.Ref] {
			return nil, nil, 0, fault.Errorf(fault.BadRequest, "deletions[%d]: %s is applied by the same request",
				i, objectLabel(del.Ref.GroupKind(), del.Ref.Name))
		}
	}
	var (
		out     []ApplyOutcome
		deleted []DeleteResult
		version int64
	)
	err = s.inTxDry(ctx, dryRun, func(tx pgx.Tx) error {
		// The head lock first, as in writeAll: the whole apply serialises
		// with the tenant's other writers, so each VersionBefore is the
		// version this apply replaces.
		head, err := lockHead(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		items := make([]writeItem, len(ds))
		for i, d := range ds {
			items[i] = writeItem{d: d, rv: rvs[i], op: OpCreate}
		}
		ws, v, err := s.writeAll(ctx, tx, tenantID, head, author, items, "documents")
		if err != nil {
			return err
		}
		version = v
		out = make([]ApplyOutcome, len(ws))
		for i, w := range ws {
			action := ActionUnchanged
			switch {
			case w.changed && w.before == 0:
				action = ActionCreated
			case w.changed:
				action = ActionConfigured
			}
			out[i] = ApplyOutcome{Object: w.obj, Action: action, VersionBefore: w.before}
		}
		if err := paramWarnings(ctx, tx, tenantID, ds, out); err != nil {
			return err
		}
		deleted = make([]DeleteResult, len(dels))
		for i, del := range dels {
			d, err := s.deleteObject(ctx, tx, tenantID, author, del.Ref, del.ResourceVersion)
			if err != nil {
				return err
			}
			deleted[i], version = d, d.Tombstone.Version
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, err
	}
	return out, deleted, version, nil
}

// inDocument says which document a write error is about.
func inDocument(err error, list string, i int) error {
	var e *fault.Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Message = fmt.Sprintf("%s[%d]: %s", list, i, e.Message)
	return &c
}

// paramWarnings warns about each param of ds whose group and kind no live
// policy (after the writes of this transaction) names as its paramKind.
func paramWarnings(ctx context.Context, tx pgx.Tx, tenantID int64, ds []*decoded, out []ApplyOutcome) error {
	hasParam := false
	for _, d := range ds {
		hasParam = hasParam || d.typed == nil
	}
	if !hasParam {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT object->'spec'->'paramKind'->>'apiVersion', object->'spec'->'paramKind'->>'kind'
		FROM policy_objects
		WHERE tenant_id = $1 AND NOT deleted AND api_group = $2 AND kind = ANY($3)
		  AND object->'spec'->'paramKind'->>'kind' IS NOT NULL`,
		tenantID, GroupAdmission, []string{KindValidatingPolicy.Kind, KindMutatingPolicy.Kind})
	if err != nil {
		return err
	}
	used := map[schema.GroupKind]bool{}
	var apiVersion, kind string
	if _, err := pgx.ForEachRow(rows, []any{&apiVersion, &kind}, func() error {
		if gv, err := schema.ParseGroupVersion(apiVersion); err == nil {
			used[schema.GroupKind{Group: gv.Group, Kind: kind}] = true
		}
		return nil
	}); err != nil {
		return err
	}
	for i, d := range ds {
		if gk := d.gvk.GroupKind(); d.typed == nil && !used[gk] {
			out[i].Warnings = append(out[i].Warnings, fmt.Sprintf(
				"no policy has paramKind %s (apiVersion %s, kind %s): the object is stored as a param, but no binding can use it; check the kind and apiVersion for a typo",
				kindLabel(gk), d.gvk.GroupVersion(), gk.Kind))
		}
	}
	return nil
}

// decodeAll decodes and checks every document, as Apply does one. The
// errors of all documents come back together, each cause on
// "<list>[i].<field>" with the object's kind and name in its message.
func decodeAll(list string, docs [][]byte) ([]*decoded, []string, error) {
	var (
		ds      = make([]*decoded, len(docs))
		rvs     = make([]string, len(docs))
		causes  []metav1.StatusCause
		objects []string
		seen    = map[Ref]int{}
	)
	add := func(i int, label string, cs []metav1.StatusCause) {
		for _, c := range cs {
			at := fmt.Sprintf("%s[%d]", list, i)
			if c.Field != "" {
				at += "." + c.Field
			}
			c.Field = at
			causes = append(causes, c)
			objects = append(objects, label)
		}
	}
	for i, doc := range docs {
		d, rv, err := decode(doc)
		if err != nil {
			var e *fault.Error
			if !errors.As(err, &e) || e.Code != fault.Invalid {
				return nil, nil, err
			}
			add(i, objectLabel(schema.GroupKind{Group: e.Group, Kind: e.Kind}, e.Name), e.Causes)
			continue
		}
		label := objectLabel(d.gvk.GroupKind(), d.ref.Name)
		if errs := checkExpressions(d); len(errs) > 0 {
			add(i, label, fieldCauses(errs))
			continue
		}
		if j, dup := seen[d.ref]; dup {
			add(i, label, fieldCauses(field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), d.ref.Name,
				fmt.Sprintf("the same object as %s[%d]; give each object once", list, j))}))
			continue
		}
		seen[d.ref] = i
		ds[i], rvs[i] = d, rv
	}
	if len(causes) == 0 {
		return ds, rvs, nil
	}
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = c.Field + ": " + c.Message
		if objects[i] != "" {
			parts[i] = objects[i] + " " + parts[i]
			// The cause's field only gives the object's index: its
			// message names the object too.
			causes[i].Message = objects[i] + ": " + c.Message
		}
	}
	verb, n := "are", countObjects(causes)
	if n == 1 {
		verb = "is"
	}
	return nil, nil, &fault.Error{Code: fault.Invalid, Causes: causes,
		Message: fmt.Sprintf("%d of the %d %s %s invalid; nothing was written: %s", n, len(docs), list, verb, strings.Join(parts, "; "))}
}

func countObjects(causes []metav1.StatusCause) int {
	n := map[string]bool{}
	for _, c := range causes {
		idx, _, _ := strings.Cut(c.Field, "]")
		n[idx] = true
	}
	return len(n)
}

// objectLabel is how an error names an object: Kind.group "name".
func objectLabel(gk schema.GroupKind, name string) string {
	switch {
	case gk.Kind == "":
		return ""
	case name == "":
		return kindLabel(gk)
	}
	return fmt.Sprintf("%s %q", kindLabel(gk), name)
}

// CandidateSnapshot compiles a snapshot of the tenant's live objects with
// the candidate objects (one YAML or JSON object each) laid over them, as
// if they had been applied; with replace, of the candidates alone. Nothing
// is stored. Candidates are checked as ApplyAll checks documents, and the
// errors name objects[i]. The snapshot's Version is the tenant's live
// version, which the candidates are relative to.
func (s *Store) CandidateSnapshot(ctx context.Context, tenantID int64, candidates [][]byte, replace bool) (*Snapshot, error) {
	ds, _, err := decodeAll("objects", candidates)
	if err != nil {
		return nil, err
	}
	version, live, _, err := s.liveObjects(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	byRef := map[Ref]*unstructured.Unstructured{}
	if !replace {
		for _, u := range live {
			gvk := u.GroupVersionKind()
			byRef[Ref{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}] = u
		}
	}
	for _, d := range ds {
		byRef[d.ref] = d.obj
	}
	refs := make([]Ref, 0, len(byRef))
	for r := range byRef {
		refs = append(refs, r)
	}
	// The order in which the store loads objects, so that a candidate set
	// equal to the live one compiles to the same snapshot.
	sort.Slice(refs, func(i, j int) bool {
		a, b := refs[i], refs[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	objs := make([]*unstructured.Unstructured, len(refs))
	for i, r := range refs {
		objs[i] = byRef[r]
	}
	compiled, err := compileObjects(ctx, objs)
	if err != nil && ctx.Err() != nil {
		// The caller's budget (the evaluation's deadline) ran out, or it
		// went away: the compilation stopped there.
		return nil, fault.Errorf(fault.Timeout, "compiling the candidate objects did not finish within the evaluation's budget: send fewer objects")
	}
	if err != nil {
		return nil, err
	}
	return &Snapshot{TenantID: tenantID, Version: version, Compiled: compiled, LoadedAt: time.Now()}, nil
}
