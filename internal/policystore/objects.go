package policystore

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/pgtext"
)

// GroupAdmission is the API group of the policy kinds.
const GroupAdmission = "admissionregistration.k8s.io"

// The policy kinds. Every other kind is stored as a param.
var (
	KindValidatingPolicy  = schema.GroupKind{Group: GroupAdmission, Kind: "ValidatingAdmissionPolicy"}
	KindValidatingBinding = schema.GroupKind{Group: GroupAdmission, Kind: "ValidatingAdmissionPolicyBinding"}
	KindMutatingPolicy    = schema.GroupKind{Group: GroupAdmission, Kind: "MutatingAdmissionPolicy"}
	KindMutatingBinding   = schema.GroupKind{Group: GroupAdmission, Kind: "MutatingAdmissionPolicyBinding"}
)

// PolicyKind is one of the policy kinds, with the names kubectl knows it by.
type PolicyKind struct {
	schema.GroupKind
	// Resource is the plural resource name and ShortName kubectl's short
	// name; both name the kind in the admin API and the CLI.
	Resource, ShortName string
	// Versions are the versions the store accepts, stored as sent and
	// converted to v1 when read (convert.go).
	Versions []string
	// Binding is set for the binding kinds.
	Binding bool
}

// PolicyKinds is the table of the policy kinds.
var PolicyKinds = []PolicyKind{
	{GroupKind: KindValidatingPolicy, Resource: "validatingadmissionpolicies", ShortName: "vap",
		Versions: []string{"v1"}},
	{GroupKind: KindValidatingBinding, Resource: "validatingadmissionpolicybindings", ShortName: "vapb",
		Versions: []string{"v1"}, Binding: true},
	{GroupKind: KindMutatingPolicy, Resource: "mutatingadmissionpolicies", ShortName: "map",
		Versions: []string{"v1", "v1beta1", "v1alpha1"}},
	{GroupKind: KindMutatingBinding, Resource: "mutatingadmissionpolicybindings", ShortName: "mapb",
		Versions: []string{"v1", "v1beta1", "v1alpha1"}, Binding: true},
}

// LookupPolicyKind returns the table entry of gk.
func LookupPolicyKind(gk schema.GroupKind) (PolicyKind, bool) {
	for _, k := range PolicyKinds {
		if k.GroupKind == gk {
			return k, true
		}
	}
	return PolicyKind{}, false
}

// IsPolicyKind reports whether gk is one of the policy kinds (as opposed
// to a param).
func IsPolicyKind(gk schema.GroupKind) bool {
	_, ok := LookupPolicyKind(gk)
	return ok
}

// Ref names one stored object of a tenant. Version is not part of an
// object's identity: a param stored as example.com/v1 Foo and written again
// as example.com/v2 Foo is the same object.
type Ref struct {
	Group     string
	Kind      string
	Namespace string // empty for the cluster-scoped policy kinds
	Name      string
}

// GroupKind returns the ref's group and kind.
func (r Ref) GroupKind() schema.GroupKind { return schema.GroupKind{Group: r.Group, Kind: r.Kind} }

func (r Ref) String() string {
	s := kindLabel(r.GroupKind()) + " "
	if r.Namespace != "" {
		s += r.Namespace + "/"
	}
	return s + r.Name
}

// decoded is an object accepted by decode: strictly decoded, structurally
// valid, not yet compiled.
type decoded struct {
	gvk schema.GroupVersionKind
	ref Ref
	obj *unstructured.Unstructured // the object as written, minus server fields
	// typed is the v1 typed form for the policy kinds, nil for params.
	typed any
}

// serverMetadata lists the metadata fields the store owns; values sent by a
// client are replaced (resourceVersion is read first, as a precondition).
var serverMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp",
	"managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// decode parses one YAML or JSON object and validates it without CEL. It
// returns the object and the resourceVersion the writer sent ("" if none).
func decode(data []byte) (*decoded, string, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, "", invalidInput("invalid object: "+err.Error(),
			field.ErrorList{field.Invalid(field.NewPath(""), nil, err.Error())})
	}
	var raw map[string]any
	if err := json.Unmarshal(js, &raw); err != nil || raw == nil {
		msg := "the object must be a single YAML or JSON mapping"
		if err != nil {
			msg += ": " + err.Error()
		}
		return nil, "", invalidInput("invalid object: "+msg, field.ErrorList{field.Invalid(field.NewPath(""), nil, msg)})
	}
	u := &unstructured.Unstructured{Object: raw}
	if errs := pgtext.Errors(nil, raw); len(errs) > 0 {
		return nil, "", invalid(u.GroupVersionKind().GroupKind(), u.GetName(), errs)
	}
	gvk := u.GroupVersionKind()
	gk := gvk.GroupKind()
	d := &decoded{gvk: gvk, obj: u,
		ref: Ref{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}}

	var errs field.ErrorList
	apiVersion, _ := raw["apiVersion"].(string)
	if apiVersion == "" {
		errs = append(errs, field.Required(field.NewPath("apiVersion"), ""))
	} else if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), apiVersion, err.Error()))
	}
	if gvk.Kind == "" {
		errs = append(errs, field.Required(field.NewPath("kind"), ""))
	}
	if len(errs) > 0 {
		return nil, "", invalid(gk, u.GetName(), errs)
	}
	rv := u.GetResourceVersion()

	// A misspelt policy kind must not end up stored as a param that nothing
	// ever reads: in the policy group, only the policy kinds are accepted.
	pk, isPolicy := LookupPolicyKind(gk)
	if gk.Group == GroupAdmission && !isPolicy {
		names := make([]string, len(PolicyKinds))
		for i, k := range PolicyKinds {
			names[i] = k.Kind
		}
		return nil, "", invalid(gk, u.GetName(), field.ErrorList{
			field.NotSupported(field.NewPath("kind"), gvk.Kind, names)})
	}
	if isPolicy {
		if !slices.Contains(pk.Versions, gvk.Version) {
			return nil, "", invalid(gk, u.GetName(), field.ErrorList{
				field.NotSupported(field.NewPath("apiVersion"), apiVersion, prefixAll(gk.Group+"/", pk.Versions))})
		}
		typed, errs := decodePolicy(gvk, js)
		if len(errs) == 0 {
			errs = validatePolicy(typed)
		}
		if len(errs) > 0 {
			return nil, "", invalid(gk, u.GetName(), errs)
		}
		d.typed = typed
	} else {
		errs = validateParamMeta(u)
		if len(errs) > 0 {
			return nil, "", invalid(gk, u.GetName(), errs)
		}
	}
	for _, f := range serverMetadata {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	// Status is owned by the server for the policy kinds, as in the apiserver.
	if d.typed != nil {
		delete(u.Object, "status")
	}
	return d, rv, nil
}

// decodePolicy decodes js strictly into the typed form of gvk and returns it
// converted to v1, or the strict decoding errors as field errors.
func decodePolicy(gvk schema.GroupVersionKind, js []byte) (any, field.ErrorList) {
	target := newTyped(gvk)
	strict, err := sigsjson.UnmarshalStrict(js, target, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	var errs field.ErrorList
	if err != nil {
		errs = append(errs, decodeError(err))
	}
	for _, se := range strict {
		var fe sigsjson.FieldError
		if errors.As(se, &fe) {
			kind, _, _ := strings.Cut(se.Error(), " \"")
			if kind == "unknown field" {
				errs = append(errs, field.Forbidden(fieldPath(fe.FieldPath()), "unknown field"))
			} else {
				errs = append(errs, field.Duplicate(fieldPath(fe.FieldPath()), field.OmitValueType{}))
			}
			continue
		}
		errs = append(errs, field.Invalid(field.NewPath(""), nil, se.Error()))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	v1, err := toV1(target)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath(""), err)}
	}
	return v1, nil
}

func decodeError(err error) *field.Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return field.Invalid(fieldPath(te.Field), field.OmitValueType{},
			fmt.Sprintf("cannot decode %s as %s", te.Value, te.Type))
	}
	msg := err.Error()
	// sigs.k8s.io/json reports type errors with its own copy of the type.
	if i := strings.Index(msg, "into Go struct field "); i >= 0 {
		rest := msg[i+len("into Go struct field "):]
		path, typ, _ := strings.Cut(rest, " of type ")
		// path is Struct.field.path; drop the struct name.
		if _, p, ok := strings.Cut(path, "."); ok {
			val := strings.TrimPrefix(msg[:i], "json: cannot unmarshal ")
			return field.Invalid(fieldPath(p), field.OmitValueType{},
				fmt.Sprintf("cannot decode %s as %s", strings.TrimSpace(val), typ))
		}
	}
	return field.Invalid(field.NewPath(""), field.OmitValueType{}, msg)
}

// fieldPath turns "spec.validations[0].expression" into a field.Path whose
// String() is the same text.
func fieldPath(p string) *field.Path {
	var path *field.Path
	for p != "" {
		var seg string
		if strings.HasPrefix(p, "[") {
			end := strings.IndexByte(p, ']')
			if end < 0 {
				break
			}
			var i int
			if _, err := fmt.Sscanf(p[1:end], "%d", &i); err == nil && path != nil {
				path = path.Index(i)
			} else if path != nil {
				path = path.Key(p[1:end])
			}
			p = strings.TrimPrefix(p[end+1:], ".")
			continue
		}
		end := strings.IndexAny(p, ".[")
		if end < 0 {
			seg, p = p, ""
		} else {
			seg, p = p[:end], strings.TrimPrefix(p[end:], ".")
		}
		if path == nil {
			path = field.NewPath(seg)
		} else {
			path = path.Child(seg)
		}
	}
	if path == nil {
		return field.NewPath("")
	}
	return path
}

func prefixAll(prefix string, list []string) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = prefix + v
	}
	return out
}
