package policystore

import (
	"regexp"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// The structural checks below follow the apiserver's admissionregistration
// validation (field paths and error types), without CEL: expressions are
// checked by the evaluator at compile time.

const maxMatchConditions = 64

var celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

func validatePolicy(obj any) field.ErrorList {
	switch o := obj.(type) {
	case *admissionv1.ValidatingAdmissionPolicy:
		errs := validateClusterMeta(&o.ObjectMeta)
		return append(errs, validateVAPSpec(&o.Spec, field.NewPath("spec"))...)
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		errs := append(validateClusterMeta(&o.ObjectMeta), validateClusterSelector(&o.ObjectMeta)...)
		return append(errs, validateVAPBindingSpec(&o.Spec, field.NewPath("spec"))...)
	case *admissionv1.MutatingAdmissionPolicy:
		errs := validateClusterMeta(&o.ObjectMeta)
		return append(errs, validateMAPSpec(&o.Spec, field.NewPath("spec"))...)
	case *admissionv1.MutatingAdmissionPolicyBinding:
		errs := append(validateClusterMeta(&o.ObjectMeta), validateClusterSelector(&o.ObjectMeta)...)
		return append(errs, validateBindingSpec(o.Spec.PolicyName, o.Spec.ParamRef, o.Spec.MatchResources, field.NewPath("spec"), true)...)
	}
	return nil
}

// validateClusterSelector refuses a binding whose cluster selector would
// not parse: stored, it would apply to no cluster at all.
func validateClusterSelector(m *metav1.ObjectMeta) field.ErrorList {
	s, ok := m.Annotations[evaluator.ClusterSelectorAnnotation]
	if !ok {
		return nil
	}
	if _, err := evaluator.ParseClusterSelector(s); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations").Key(evaluator.ClusterSelectorAnnotation), s, err.Error())}
	}
	return nil
}

func validateClusterMeta(m *metav1.ObjectMeta) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("metadata")
	if m.Name == "" && m.GenerateName == "" {
		errs = append(errs, field.Required(p.Child("name"), "name or generateName is required"))
	} else if m.Name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, msg))
		}
	}
	if m.GenerateName != "" {
		errs = append(errs, field.Forbidden(p.Child("generateName"), "not supported by the policy store; set metadata.name"))
	}
	if m.Namespace != "" {
		errs = append(errs, field.Forbidden(p.Child("namespace"), "not allowed on this type"))
	}
	errs = append(errs, validateLabelsAnnotations(m.Labels, m.Annotations, p)...)
	return errs
}

func validateLabelsAnnotations(labels, annotations map[string]string, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(labels, p.Child("labels"))
	for k := range annotations {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(p.Child("annotations"), k, msg))
		}
	}
	return errs
}

// validateParamMeta checks what the store needs of a param of any kind: a
// name usable as a path segment and, if set, a valid namespace.
func validateParamMeta(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("metadata")
	name := u.GetName()
	switch {
	case name == "":
		errs = append(errs, field.Required(p.Child("name"), "name is required"))
	case name == "." || name == "..":
		errs = append(errs, field.Invalid(p.Child("name"), name, `may not be '.' or '..'`))
	case strings.ContainsAny(name, "/%"):
		errs = append(errs, field.Invalid(p.Child("name"), name, `may not contain '/' or '%'`))
	case len(name) > validation.DNS1123SubdomainMaxLength:
		errs = append(errs, field.TooLong(p.Child("name"), "", validation.DNS1123SubdomainMaxLength))
	}
	if ns := u.GetNamespace(); ns != "" {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(p.Child("namespace"), ns, msg))
		}
	}
	errs = append(errs, validateLabelsAnnotations(u.GetLabels(), u.GetAnnotations(), p)...)
	return errs
}

func validateVAPSpec(s *admissionv1.ValidatingAdmissionPolicySpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateParamKind(s.ParamKind, p.Child("paramKind"))...)
	if s.MatchConstraints == nil {
		errs = append(errs, field.Required(p.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(s.MatchConstraints, p.Child("matchConstraints"), true, false)...)
	}
	if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(p.Child("validations"), "validations or auditAnnotations must contain at least one item"))
	}
	for i, v := range s.Validations {
		vp := p.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
		}
		if strings.Contains(v.Message, "\n") {
			errs = append(errs, field.Invalid(vp.Child("message"), v.Message, "message must not contain line breaks"))
		}
		if v.Reason != nil {
			allowed := []metav1.StatusReason{metav1.StatusReasonUnauthorized, metav1.StatusReasonForbidden,
				metav1.StatusReasonInvalid, metav1.StatusReasonRequestEntityTooLarge}
			if !slices.Contains(allowed, *v.Reason) {
				errs = append(errs, field.NotSupported(vp.Child("reason"), *v.Reason, allowed))
			}
		}
	}
	errs = append(errs, validateFailurePolicy(s.FailurePolicy, p.Child("failurePolicy"))...)
	keys := sets.New[string]()
	for i, a := range s.AuditAnnotations {
		ap := p.Child("auditAnnotations").Index(i)
		switch {
		case a.Key == "":
			errs = append(errs, field.Required(ap.Child("key"), ""))
		case keys.Has(a.Key):
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		default:
			for _, msg := range validation.IsQualifiedName(a.Key) {
				errs = append(errs, field.Invalid(ap.Child("key"), a.Key, msg))
			}
			if len(a.Key) > validation.LabelValueMaxLength {
				errs = append(errs, field.TooLong(ap.Child("key"), "", validation.LabelValueMaxLength))
			}
		}
		keys.Insert(a.Key)
		if strings.TrimSpace(a.ValueExpression) == "" {
			errs = append(errs, field.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
		}
	}
	errs = append(errs, validateMatchConditions(s.MatchConditions, p.Child("matchConditions"))...)
	errs = append(errs, validateVariables(s.Variables, p.Child("variables"))...)
	return errs
}

func validateMAPSpec(s *admissionv1.MutatingAdmissionPolicySpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateParamKind(s.ParamKind, p.Child("paramKind"))...)
	if s.MatchConstraints == nil {
		errs = append(errs, field.Required(p.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(s.MatchConstraints, p.Child("matchConstraints"), true, true)...)
	}
	if len(s.Mutations) == 0 {
		errs = append(errs, field.Required(p.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, m := range s.Mutations {
		mp := p.Child("mutations").Index(i)
		switch m.PatchType {
		case "":
			errs = append(errs, field.Required(mp.Child("patchType"), ""))
		case admissionv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration == nil {
				errs = append(errs, field.Required(mp.Child("applyConfiguration"), "applyConfiguration.expression is required when patchType is ApplyConfiguration"))
			} else if strings.TrimSpace(m.ApplyConfiguration.Expression) == "" {
				errs = append(errs, field.Required(mp.Child("applyConfiguration", "expression"), ""))
			}
			if m.JSONPatch != nil {
				errs = append(errs, field.Forbidden(mp.Child("jsonPatch"), "must not be set when patchType is ApplyConfiguration"))
			}
		case admissionv1.PatchTypeJSONPatch:
			if m.JSONPatch == nil {
				errs = append(errs, field.Required(mp.Child("jsonPatch"), "jsonPatch.expression is required when patchType is JSONPatch"))
			} else if strings.TrimSpace(m.JSONPatch.Expression) == "" {
				errs = append(errs, field.Required(mp.Child("jsonPatch", "expression"), ""))
			}
			if m.ApplyConfiguration != nil {
				errs = append(errs, field.Forbidden(mp.Child("applyConfiguration"), "must not be set when patchType is JSONPatch"))
			}
		default:
			errs = append(errs, field.NotSupported(mp.Child("patchType"), m.PatchType,
				[]admissionv1.PatchType{admissionv1.PatchTypeApplyConfiguration, admissionv1.PatchTypeJSONPatch}))
		}
	}
	errs = append(errs, validateFailurePolicy(s.FailurePolicy, p.Child("failurePolicy"))...)
	// The API has no default for reinvocationPolicy: the apiserver requires it.
	switch s.ReinvocationPolicy {
	case admissionv1.NeverReinvocationPolicy, admissionv1.IfNeededReinvocationPolicy:
	case "":
		errs = append(errs, field.Required(p.Child("reinvocationPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), s.ReinvocationPolicy,
			[]admissionv1.ReinvocationPolicyType{admissionv1.IfNeededReinvocationPolicy, admissionv1.NeverReinvocationPolicy}))
	}
	errs = append(errs, validateMatchConditions(s.MatchConditions, p.Child("matchConditions"))...)
	errs = append(errs, validateVariables(s.Variables, p.Child("variables"))...)
	return errs
}

func validateVAPBindingSpec(s *admissionv1.ValidatingAdmissionPolicyBindingSpec, p *field.Path) field.ErrorList {
	errs := validateBindingSpec(s.PolicyName, s.ParamRef, s.MatchResources, p, false)
	ap := p.Child("validationActions")
	if len(s.ValidationActions) == 0 {
		errs = append(errs, field.Required(ap, "at least one validation action is required"))
	}
	seen := sets.New[admissionv1.ValidationAction]()
	for i, a := range s.ValidationActions {
		switch {
		case seen.Has(a):
			errs = append(errs, field.Duplicate(ap.Index(i), a))
		case a != admissionv1.Deny && a != admissionv1.Warn && a != admissionv1.Audit:
			errs = append(errs, field.NotSupported(ap.Index(i), a,
				[]admissionv1.ValidationAction{admissionv1.Audit, admissionv1.Deny, admissionv1.Warn}))
		}
		seen.Insert(a)
	}
	if seen.Has(admissionv1.Deny) && seen.Has(admissionv1.Warn) {
		errs = append(errs, field.Invalid(ap, s.ValidationActions,
			"must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

// validateBindingSpec checks what a validating and a mutating binding
// share: the policy it names, its param reference and its match resources.
func validateBindingSpec(policyName string, ref *admissionv1.ParamRef, match *admissionv1.MatchResources, p *field.Path, mutating bool) field.ErrorList {
	var errs field.ErrorList
	if policyName == "" {
		errs = append(errs, field.Required(p.Child("policyName"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(policyName) {
			errs = append(errs, field.Invalid(p.Child("policyName"), policyName, msg))
		}
	}
	errs = append(errs, validateParamRef(ref, p.Child("paramRef"))...)
	if match != nil {
		errs = append(errs, validateMatchResources(match, p.Child("matchResources"), false, mutating)...)
	}
	return errs
}

func validateParamKind(k *admissionv1.ParamKind, p *field.Path) field.ErrorList {
	if k == nil {
		return nil
	}
	var errs field.ErrorList
	if k.APIVersion == "" {
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	} else if gv, err := schema.ParseGroupVersion(k.APIVersion); err != nil {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), k.APIVersion, err.Error()))
	} else if gv.Version == "" {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), k.APIVersion, "version must be specified"))
	}
	if k.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	}
	return errs
}

func validateParamRef(r *admissionv1.ParamRef, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	switch {
	case r.Name != "" && r.Selector != nil:
		errs = append(errs, field.Forbidden(p.Child("name"), "name and selector are mutually exclusive"))
	case r.Name == "" && r.Selector == nil:
		errs = append(errs, field.Required(p, "one of name or selector must be specified"))
	}
	if r.Name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
	}
	if r.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(r.Namespace) {
			errs = append(errs, field.Invalid(p.Child("namespace"), r.Namespace, msg))
		}
	}
	if r.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(r.Selector,
			metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	}
	if r.ParameterNotFoundAction == nil {
		errs = append(errs, field.Required(p.Child("parameterNotFoundAction"), ""))
	} else if a := *r.ParameterNotFoundAction; a != admissionv1.AllowAction && a != admissionv1.DenyAction {
		errs = append(errs, field.NotSupported(p.Child("parameterNotFoundAction"), a,
			[]admissionv1.ParameterNotFoundActionType{admissionv1.AllowAction, admissionv1.DenyAction}))
	}
	return errs
}

func validateMatchResources(m *admissionv1.MatchResources, p *field.Path, requireRules, mutating bool) field.ErrorList {
	var errs field.ErrorList
	if m.MatchPolicy != nil && *m.MatchPolicy != admissionv1.Exact && *m.MatchPolicy != admissionv1.Equivalent {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy,
			[]admissionv1.MatchPolicyType{admissionv1.Equivalent, admissionv1.Exact}))
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if m.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, opts, p.Child("objectSelector"))...)
	}
	if requireRules && len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(p.Child("resourceRules"), ""))
	}
	for i := range m.ResourceRules {
		errs = append(errs, validateNamedRule(&m.ResourceRules[i], p.Child("resourceRules").Index(i), mutating)...)
	}
	for i := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&m.ExcludeResourceRules[i], p.Child("excludeResourceRules").Index(i), mutating)...)
	}
	return errs
}

func validateNamedRule(r *admissionv1.NamedRuleWithOperations, p *field.Path, mutating bool) field.ErrorList {
	var errs field.ErrorList
	allowed := []admissionv1.OperationType{admissionv1.OperationAll, admissionv1.Create, admissionv1.Update,
		admissionv1.Delete, admissionv1.Connect}
	if mutating {
		allowed = []admissionv1.OperationType{admissionv1.OperationAll, admissionv1.Create, admissionv1.Update, admissionv1.Connect}
	}
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionv1.OperationAll) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !slices.Contains(allowed, op) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, allowed))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), ""))
	}
	for i, res := range r.Resources {
		if res == "" {
			errs = append(errs, field.Required(p.Child("resources").Index(i), ""))
		}
		if parts := strings.SplitN(res, "/", 2); len(parts) == 2 && (parts[0] == "" || parts[1] == "") {
			errs = append(errs, field.Invalid(p.Child("resources").Index(i), res, "must not have an empty resource or subresource"))
		}
	}
	if r.Scope != nil && *r.Scope != admissionv1.ClusterScope && *r.Scope != admissionv1.NamespacedScope && *r.Scope != admissionv1.AllScopes {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope,
			[]admissionv1.ScopeType{admissionv1.AllScopes, admissionv1.ClusterScope, admissionv1.NamespacedScope}))
	}
	return errs
}

func validateFailurePolicy(fp *admissionv1.FailurePolicyType, p *field.Path) field.ErrorList {
	if fp == nil || *fp == admissionv1.Fail || *fp == admissionv1.Ignore {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, *fp, []admissionv1.FailurePolicyType{admissionv1.Fail, admissionv1.Ignore})}
}

func validateMatchConditions(mcs []admissionv1.MatchCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(mcs) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(mcs), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, mc := range mcs {
		mp := p.Index(i)
		switch {
		case mc.Name == "":
			errs = append(errs, field.Required(mp.Child("name"), ""))
		case names.Has(mc.Name):
			errs = append(errs, field.Duplicate(mp.Child("name"), mc.Name))
		default:
			for _, msg := range validation.IsQualifiedName(mc.Name) {
				errs = append(errs, field.Invalid(mp.Child("name"), mc.Name, msg))
			}
		}
		names.Insert(mc.Name)
		if strings.TrimSpace(mc.Expression) == "" {
			errs = append(errs, field.Required(mp.Child("expression"), ""))
		}
	}
	return errs
}

func validateVariables(vars []admissionv1.Variable, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, v := range vars {
		vp := p.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(vp.Child("name"), ""))
		case !celIdentifier.MatchString(v.Name):
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "name is not a valid CEL identifier"))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		names.Insert(v.Name)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), ""))
		}
	}
	return errs
}
