package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// storedObject is what the tables show of a stored object.
type storedObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		ResourceVersion   string            `json:"resourceVersion"`
		CreationTimestamp time.Time         `json:"creationTimestamp"`
		Labels            map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		FailurePolicy *string                `json:"failurePolicy"`
		ParamKind     *struct{ Kind string } `json:"paramKind"`
		Validations   []json.RawMessage      `json:"validations"`
		Mutations     []json.RawMessage      `json:"mutations"`
		PolicyName    string                 `json:"policyName"`
		ParamRef      *struct {
			Name      string          `json:"name"`
			Namespace string          `json:"namespace"`
			Selector  json.RawMessage `json:"selector"`
		} `json:"paramRef"`
		ValidationActions  []string `json:"validationActions"`
		ReinvocationPolicy string   `json:"reinvocationPolicy"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// category is what get lists: policies, bindings, params, namespaces or
// crds.
func category(arg string) string {
	switch strings.ToLower(arg) {
	case "policies", "policy":
		return apiv1.TypePolicies
	case "bindings", "binding":
		return apiv1.TypeBindings
	case "params", "param":
		return apiv1.TypeParams
	case "namespaces", "namespace", "ns":
		return "namespaces"
	case "crds", "crd", "customresourcedefinitions", "customresourcedefinition":
		return "crds"
	}
	return ""
}

// categoryOf says which table an object belongs in.
func categoryOf(o storedObject) string {
	if strings.HasPrefix(o.APIVersion, "admissionregistration.k8s.io/") {
		switch o.Kind {
		case "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy":
			return apiv1.TypePolicies
		case "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicyBinding":
			return apiv1.TypeBindings
		}
	}
	return apiv1.TypeParams
}

func cmdGet(e *env, args []string) error {
	f := e.newFlags("get")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), f.String("cluster", "", "the cluster, for namespaces and crds (default: the tenant's only cluster)")
	obj := f.object()
	selector := f.String("selector", "", "label selector, as kubectl's -l")
	f.StringVar(selector, "l", "", "short for --selector")
	pos, err := f.parse(args, 1, 2, "what to get: policies, bindings, params, namespaces, crds or a KIND")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	name := ""
	if len(pos) == 2 {
		name = pos[1]
	}
	cat := category(pos[0])
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	switch {
	case cat == "namespaces" || cat == "crds":
		if *cluster == "" {
			if *cluster, err = e.onlyCluster(cl, *tenant); err != nil {
				return err
			}
		}
		if cat == "crds" {
			return getInventory(e, cl, c, crdInventory, *tenant, *cluster, name)
		}
		return getInventory(e, cl, c, namespaceInventory, *tenant, *cluster, name)
	case name != "" && cat == "":
		return e.getOne(cl, c, *tenant, pos[0], name, obj.query())
	}
	q := obj.query()
	if cat != "" {
		q.Set("type", cat)
	} else {
		q.Set("kind", pos[0])
	}
	if *selector != "" {
		q.Set("labelSelector", *selector)
	}
	objs, raw, err := listAll[storedObject](e, cl, apiPath("tenants", *tenant, "objects"), q)
	if err != nil {
		return namingFlags(err, map[string]string{"labelSelector": "--selector"})
	}
	if name == "" {
		return e.emit(c, raw, func(w io.Writer) error { return printObjects(w, e.now(), cat, objs) })
	}
	// policies NAME: find the kind, then GET the object itself, so that -o
	// json prints the server's answer for it.
	var found []storedObject
	for _, o := range objs {
		if o.Metadata.Name == name {
			found = append(found, o)
		}
	}
	switch len(found) {
	case 0:
		return fmt.Errorf("no %s named %q in tenant %q", map[string]string{apiv1.TypePolicies: "policy",
			apiv1.TypeBindings: "binding", apiv1.TypeParams: "param"}[cat], name, *tenant)
	case 1:
	default:
		var kinds []string
		for _, o := range found {
			kinds = append(kinds, o.Kind)
		}
		return usageErr("several %s are named %q (%s): give the KIND instead of %s", cat, name, strings.Join(kinds, ", "), pos[0])
	}
	// The group always, even the core group's "": the same kind may be
	// stored in another group too.
	q = url.Values{"group": {(objectMeta{APIVersion: found[0].APIVersion}).group()}}
	if found[0].Metadata.Namespace != "" {
		q.Set("namespace", found[0].Metadata.Namespace)
	}
	return e.getOne(cl, c, *tenant, found[0].Kind, name, q)
}

func (e *env) getOne(cl *client, c *connFlags, tenant, kind, name string, q url.Values) error {
	var o storedObject
	raw, err := cl.getJSON(e, apiPath("tenants", tenant, "objects", kind, name), q, &o)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printObjects(w, e.now(), categoryOf(o), []storedObject{o}) })
}

// printObjects prints objects of one category (or, for "", each in the
// table of its own category).
func printObjects(w io.Writer, now time.Time, cat string, objs []storedObject) error {
	if cat == "" {
		by := map[string][]storedObject{}
		for _, o := range objs {
			by[categoryOf(o)] = append(by[categoryOf(o)], o)
		}
		n := 0
		for _, c := range []string{apiv1.TypePolicies, apiv1.TypeBindings, apiv1.TypeParams} {
			if len(by[c]) == 0 {
				continue
			}
			if n > 0 {
				fmt.Fprintln(w)
			}
			n++
			if err := printObjects(w, now, c, by[c]); err != nil {
				return err
			}
		}
		if n == 0 {
			_, err := fmt.Fprintln(w, "No objects found.")
			return err
		}
		return nil
	}
	if len(objs) == 0 {
		_, err := fmt.Fprintf(w, "No %s found.\n", cat)
		return err
	}
	switch cat {
	case apiv1.TypePolicies, apiv1.TypeBindings:
		// Validating and mutating kinds have different columns: each gets
		// its own table, validating first.
		var validating, mutating []storedObject
		for _, o := range objs {
			if strings.HasPrefix(o.Kind, "Mutating") {
				mutating = append(mutating, o)
			} else {
				validating = append(validating, o)
			}
		}
		printValidating := printValidatingPolicies
		if cat == apiv1.TypeBindings {
			printValidating = printValidatingBindings
		}
		if len(validating) > 0 {
			if err := printValidating(w, now, validating); err != nil {
				return err
			}
		}
		if len(mutating) == 0 {
			return nil
		}
		if len(validating) > 0 {
			fmt.Fprintln(w)
		}
		if cat == apiv1.TypeBindings {
			return printMutatingBindings(w, now, mutating)
		}
		return printMutatingPolicies(w, now, mutating)
	}
	t := newTable(w, "NAMESPACE", "NAME", "KIND", "API VERSION", "VERSION", "AGE")
	for _, o := range objs {
		t.row(o.Metadata.Namespace, o.Metadata.Name, o.Kind, o.APIVersion, o.Metadata.ResourceVersion, age(now, o.Metadata.CreationTimestamp))
	}
	return t.flush()
}

func (o storedObject) failurePolicy() string {
	if o.Spec.FailurePolicy != nil {
		return *o.Spec.FailurePolicy
	}
	return "Fail"
}

func (o storedObject) paramKind() string {
	if o.Spec.ParamKind != nil {
		return o.Spec.ParamKind.Kind
	}
	return ""
}

func (o storedObject) param() string {
	p := o.Spec.ParamRef
	switch {
	case p == nil:
		return ""
	case p.Name != "" && p.Namespace != "":
		return p.Namespace + "/" + p.Name
	case p.Name != "":
		return p.Name
	case len(p.Selector) > 0:
		return "selector " + string(p.Selector)
	}
	return ""
}

func printValidatingPolicies(w io.Writer, now time.Time, objs []storedObject) error {
	t := newTable(w, "NAME", "KIND", "VALIDATIONS", "FAILURE POLICY", "PARAM KIND", "VERSION", "AGE")
	for _, o := range objs {
		t.row(o.Metadata.Name, o.Kind, strconv.Itoa(len(o.Spec.Validations)), o.failurePolicy(), o.paramKind(),
			o.Metadata.ResourceVersion, age(now, o.Metadata.CreationTimestamp))
	}
	return t.flush()
}

func printMutatingPolicies(w io.Writer, now time.Time, objs []storedObject) error {
	t := newTable(w, "NAME", "KIND", "MUTATIONS", "FAILURE POLICY", "REINVOCATION", "PARAM KIND", "VERSION", "AGE")
	for _, o := range objs {
		t.row(o.Metadata.Name, o.Kind, strconv.Itoa(len(o.Spec.Mutations)), o.failurePolicy(), o.Spec.ReinvocationPolicy,
			o.paramKind(), o.Metadata.ResourceVersion, age(now, o.Metadata.CreationTimestamp))
	}
	return t.flush()
}

func printValidatingBindings(w io.Writer, now time.Time, objs []storedObject) error {
	t := newTable(w, "NAME", "KIND", "POLICY", "PARAM", "ACTIONS", "VERSION", "AGE")
	for _, o := range objs {
		t.row(o.Metadata.Name, o.Kind, o.Spec.PolicyName, o.param(), strings.Join(o.Spec.ValidationActions, ","),
			o.Metadata.ResourceVersion, age(now, o.Metadata.CreationTimestamp))
	}
	return t.flush()
}

func printMutatingBindings(w io.Writer, now time.Time, objs []storedObject) error {
	t := newTable(w, "NAME", "KIND", "POLICY", "PARAM", "VERSION", "AGE")
	for _, o := range objs {
		t.row(o.Metadata.Name, o.Kind, o.Spec.PolicyName, o.param(), o.Metadata.ResourceVersion, age(now, o.Metadata.CreationTimestamp))
	}
	return t.flush()
}
