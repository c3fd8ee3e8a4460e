package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdApply(e *env, args []string) error {
	f := e.newFlags("apply")
	c := f.conn(true)
	tenant := tenantFlag(f)
	var files stringList
	f.Var(&files, "f", "a `FILE`, a directory (its *.yaml, *.yml and *.json files) or - for stdin; may be repeated")
	dryRun := f.Bool("dry-run", false, "check and report, write nothing")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	if len(files) == 0 {
		return usageErr("-f is required")
	}
	docs, err := e.readDocuments(files)
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no objects in %s", strings.Join(files, ", "))
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	q := url.Values{}
	if *dryRun {
		q.Set("dryRun", "true")
	}
	// One request for every file: an apply is all or nothing.
	raw, err := cl.do(e, request{method: http.MethodPost, path: apiPath("tenants", *tenant, "apply"), query: q,
		body: applyBody(docs), contentType: "application/json"})
	if err != nil {
		return nameDocuments(err, docs, "documents")
	}
	var res apiv1.ApplyResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("the server's answer: %w", err)
	}
	name := documentNamer(docs, "documents")
	for _, it := range res.Results {
		for _, w := range it.Warnings {
			fmt.Fprintf(e.stderr, "Warning: %s: %s\n", ref(it.APIVersion, it.Kind, it.Name), name(w))
		}
	}
	return e.emit(c, raw, func(w io.Writer) error { return printApply(w, res) })
}

func printApply(w io.Writer, res apiv1.ApplyResult) error {
	suffix := ""
	if res.DryRun {
		suffix = " (dry run)"
	}
	for _, it := range res.Results {
		if _, err := fmt.Fprintf(w, "%s %s%s\n", ref(it.APIVersion, it.Kind, it.Name), it.Action, suffix); err != nil {
			return err
		}
	}
	return nil
}

// objectFlags are the flags that pick one stored object.
type objectFlags struct {
	group     *optionalString
	namespace *string
}

// optionalString is a string flag that tells whether it was given, so
// that --group "" (the core group) differs from no --group.
type optionalString struct {
	value string
	set   bool
}

func (o *optionalString) String() string { return o.value }
func (o *optionalString) Set(v string) error {
	o.value, o.set = v, true
	return nil
}

func (f *flags) object() objectFlags {
	o := objectFlags{group: &optionalString{}, namespace: new(string)}
	f.Var(o.group, "group", "API `group` of KIND, when the tenant stores that kind in several groups (\"\" for the core group, as of v1 ConfigMaps)")
	f.StringVar(o.namespace, "namespace", "", "namespace of a namespaced param")
	f.StringVar(o.namespace, "n", "", "short for --namespace")
	return o
}

func (o objectFlags) query() url.Values {
	q := url.Values{}
	// group= (empty) is the core group; without group the server finds
	// the group of KIND.
	if o.group.set {
		q.Set("group", o.group.value)
	}
	if *o.namespace != "" {
		q.Set("namespace", *o.namespace)
	}
	return q
}

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
		ValidationActions []string `json:"validationActions"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// category is what get lists: policies, bindings, params or namespaces.
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
	tenant, cluster := tenantFlag(f), f.String("cluster", "", "the cluster, for namespaces (default: the tenant's only cluster)")
	obj := f.object()
	selector := f.String("selector", "", "label selector, as kubectl's -l")
	f.StringVar(selector, "l", "", "short for --selector")
	pos, err := f.parse(args, 1, 2, "what to get: policies, bindings, params, namespaces or a KIND")
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
	case cat == "namespaces":
		if *cluster == "" {
			if *cluster, err = e.onlyCluster(cl, *tenant); err != nil {
				return err
			}
		}
		return e.getNamespaces(cl, c, *tenant, *cluster, name)
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
		return err
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

// onlyCluster is the tenant's cluster when it has exactly one; otherwise
// the user must say which with --cluster.
func (e *env) onlyCluster(cl *client, tenant string) (string, error) {
	clusters, _, err := listAll[apiv1.Cluster](e, cl, apiPath("tenants", tenant, "clusters"), nil)
	if err != nil {
		return "", err
	}
	names := make([]string, len(clusters))
	for i, x := range clusters {
		names[i] = x.Name
	}
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", usageErr("tenant %q has no cluster: create one with `admin cluster create`", tenant)
	}
	return "", usageErr("tenant %q has %d clusters (%s): say which with --cluster", tenant, len(names), strings.Join(names, ", "))
}

func (e *env) getNamespaces(cl *client, c *connFlags, tenant, cluster, name string) error {
	// The raw items too: NAME prints its own object for -o json.
	items, raw, err := listAll[json.RawMessage](e, cl, apiPath("tenants", tenant, "clusters", cluster, "namespaces"), nil)
	if err != nil {
		return err
	}
	nss, err := decodeItems[storedObject](items)
	if err != nil {
		return err
	}
	if name != "" {
		i := -1
		for j, ns := range nss {
			if ns.Metadata.Name == name {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("namespace %q is not in the inventory of cluster %q (upload it with `admin namespaces import`)", name, cluster)
		}
		nss, raw = nss[i:i+1], indentJSON(items[i])
	}
	return e.emit(c, raw, func(w io.Writer) error { return printNamespaces(w, e.now(), nss) })
}

func indentJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return b
	}
	return out.Bytes()
}

func printNamespaces(w io.Writer, now time.Time, nss []storedObject) error {
	t := newTable(w, "NAME", "STATUS", "LABELS", "AGE")
	for _, ns := range nss {
		t.row(ns.Metadata.Name, ns.Status.Phase, labels(ns.Metadata.Labels), age(now, ns.Metadata.CreationTimestamp))
	}
	return t.flush()
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
	case apiv1.TypePolicies:
		t := newTable(w, "NAME", "KIND", "VALIDATIONS", "FAILURE POLICY", "PARAM KIND", "VERSION", "AGE")
		for _, o := range objs {
			n := len(o.Spec.Validations) + len(o.Spec.Mutations)
			fp := "Fail"
			if o.Spec.FailurePolicy != nil {
				fp = *o.Spec.FailurePolicy
			}
			pk := ""
			if o.Spec.ParamKind != nil {
				pk = o.Spec.ParamKind.Kind
			}
			t.row(o.Metadata.Name, o.Kind, strconv.Itoa(n), fp, pk, o.Metadata.ResourceVersion, age(now, o.Metadata.CreationTimestamp))
		}
		return t.flush()
	case apiv1.TypeBindings:
		t := newTable(w, "NAME", "KIND", "POLICY", "PARAM", "ACTIONS", "VERSION", "AGE")
		for _, o := range objs {
			param := ""
			if p := o.Spec.ParamRef; p != nil {
				switch {
				case p.Name != "" && p.Namespace != "":
					param = p.Namespace + "/" + p.Name
				case p.Name != "":
					param = p.Name
				case len(p.Selector) > 0:
					param = "selector " + string(p.Selector)
				}
			}
			t.row(o.Metadata.Name, o.Kind, o.Spec.PolicyName, param, strings.Join(o.Spec.ValidationActions, ","),
				o.Metadata.ResourceVersion, age(now, o.Metadata.CreationTimestamp))
		}
		return t.flush()
	}
	t := newTable(w, "NAMESPACE", "NAME", "KIND", "API VERSION", "VERSION", "AGE")
	for _, o := range objs {
		t.row(o.Metadata.Namespace, o.Metadata.Name, o.Kind, o.APIVersion, o.Metadata.ResourceVersion, age(now, o.Metadata.CreationTimestamp))
	}
	return t.flush()
}

func cmdDelete(e *env, args []string) error {
	f := e.newFlags("delete")
	c := f.conn(true)
	tenant := tenantFlag(f)
	obj := f.object()
	var files stringList
	f.Var(&files, "f", "delete the objects of a `FILE`, a directory or - (stdin); may be repeated")
	dryRun := f.Bool("dry-run", false, "check and report, delete nothing")
	pos, err := f.parse(args, 0, 2, "KIND NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	switch {
	case len(files) > 0 && len(pos) > 0:
		return usageErr("give either -f FILE or KIND NAME, not both")
	case len(files) == 0 && len(pos) != 2:
		return usageErr("give -f FILE or KIND NAME")
	}
	var targets []document
	if len(files) > 0 {
		if targets, err = e.readDocuments(files); err != nil {
			return err
		}
		if len(targets) == 0 {
			return fmt.Errorf("no objects in %s", strings.Join(files, ", "))
		}
		for _, d := range targets {
			if d.meta.Metadata.Name == "" {
				return usageErr("%s, field metadata.name: required to delete the object", d.where())
			}
		}
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	del := func(kind, name string, q url.Values) ([]byte, apiv1.ApplyItem, error) {
		if *dryRun {
			q.Set("dryRun", "true")
		}
		var it apiv1.ApplyItem
		raw, err := cl.sendJSON(e, http.MethodDelete, apiPath("tenants", *tenant, "objects", kind, name), q, nil, &it)
		return raw, it, err
	}
	deleted := func(w io.Writer, it apiv1.ApplyItem) error {
		return printApply(w, apiv1.ApplyResult{DryRun: *dryRun, Results: []apiv1.ApplyItem{it}})
	}
	if len(pos) == 2 {
		raw, it, err := del(pos[0], pos[1], obj.query())
		if err != nil {
			return err
		}
		return e.emit(c, raw, func(w io.Writer) error { return deleted(w, it) })
	}
	// Like kubectl delete -f: each object on its own, reporting every
	// failure.
	var failed []string
	var answers []json.RawMessage
	for _, d := range targets {
		// The group always, even the core group's "" (apiVersion: v1):
		// the same kind may be stored in another group too.
		q := url.Values{"group": {d.meta.group()}}
		if d.meta.Metadata.Namespace != "" {
			q.Set("namespace", d.meta.Metadata.Namespace)
		}
		raw, it, err := del(d.meta.Kind, d.meta.Metadata.Name, q)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%s): %v", d.where(), ref(d.meta.APIVersion, d.meta.Kind, d.meta.Metadata.Name), err))
			continue
		}
		answers = append(answers, raw)
		if c.output == "" {
			if err := deleted(e.stdout, it); err != nil {
				return err
			}
		}
	}
	if c.output != "" && len(answers) > 0 {
		all, err := json.MarshalIndent(apiv1.List[json.RawMessage]{Items: answers}, "", "  ")
		if err != nil {
			return err
		}
		if err := e.emit(c, all, nil); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "\n"))
	}
	return nil
}

func cmdHistory(e *env, args []string) error {
	f := e.newFlags("history")
	c := f.conn(true)
	tenant := tenantFlag(f)
	obj := f.object()
	pos, err := f.parse(args, 2, 2, "KIND NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	versions, raw, err := listAll[apiv1.Version](e, cl, apiPath("tenants", *tenant, "objects", pos[0], pos[1], "history"), obj.query())
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printHistory(w, e.now(), versions) })
}

func printHistory(w io.Writer, now time.Time, versions []apiv1.Version) error {
	t := newTable(w, "VERSION", "OPERATION", "AUTHOR", "API VERSION", "NOTE", "AGE")
	for _, v := range versions {
		note := ""
		if v.RollbackOf != 0 {
			note = "rollback to version " + strconv.FormatInt(v.RollbackOf, 10)
		}
		t.row(strconv.FormatInt(v.Version, 10), v.Operation, v.Author, v.APIVersion, note, age(now, v.Time))
	}
	return t.flush()
}

func parseVersion(flagName, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, usageErr("--%s %q: want a version number as `admin history` shows it", flagName, s)
	}
	return n, nil
}

func cmdDiff(e *env, args []string) error {
	f := e.newFlags("diff")
	c := f.conn(true)
	tenant := tenantFlag(f)
	obj := f.object()
	from := f.String("from", "", "the older version")
	to := f.String("to", "", "the newer version (default: the current one)")
	pos, err := f.parse(args, 2, 2, "KIND NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant, "from", *from); err != nil {
		return err
	}
	q := obj.query()
	// In a fixed order, so that with both wrong the first is reported.
	for _, fv := range [][2]string{{"from", *from}, {"to", *to}} {
		if fv[1] == "" {
			continue
		}
		if _, err := parseVersion(fv[0], fv[1]); err != nil {
			return err
		}
		q.Set(fv[0], fv[1])
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var d apiv1.Diff
	raw, err := cl.getJSON(e, apiPath("tenants", *tenant, "objects", pos[0], pos[1], "diff"), q, &d)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		if d.Diff == "" {
			_, err := fmt.Fprintf(w, "versions %d and %d are the same\n", d.From, d.To)
			return err
		}
		_, err := io.WriteString(w, d.Diff)
		return err
	})
}

func cmdRollback(e *env, args []string) error {
	f := e.newFlags("rollback")
	c := f.conn(true)
	tenant := tenantFlag(f)
	obj := f.object()
	to := f.String("to", "", "the `VERSION` to restore, as admin history shows it")
	pos, err := f.parse(args, 2, 2, "KIND NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant, "to", *to); err != nil {
		return err
	}
	v, err := parseVersion("to", *to)
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var it apiv1.ApplyItem
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants", *tenant, "objects", pos[0], pos[1], "rollback"), obj.query(),
		apiv1.Rollback{ToVersion: v}, &it)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s %s to version %d (now version %d)\n", ref(it.APIVersion, it.Kind, it.Name), it.Action, v, it.ResourceVersion)
		return err
	})
}
