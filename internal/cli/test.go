package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdTest(e *env, args []string) error {
	f := e.newFlags("test")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	file := f.String("f", "", "an AdmissionReview (JSON or YAML), or a bare object to review as a CREATE; - reads stdin")
	explain := f.Bool("explain", false, "add the trace: for each binding, whether it matched and what each expression gave")
	var with stringList
	f.Var(&with, "with", "evaluate as if the objects of this `FILE` or directory were applied (may be repeated)")
	replace := f.Bool("replace", false, "with --with: evaluate the given objects alone, without the stored ones")
	mutate := f.Bool("mutate", false, "answer as the mutating webhook (/mutate): the MutatingAdmissionPolicies; prints the patch and the final object")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant, "cluster", *cluster, "f", *file); err != nil {
		return err
	}
	if *replace && len(with) == 0 {
		return usageErr("--replace needs --with")
	}
	if *file == "-" && slices.Contains(with, "-") {
		return usageErr("-f - and --with - cannot both read standard input")
	}
	b, err := e.readInput(*file)
	if err != nil {
		return err
	}
	docs, err := splitDocuments(*file, b)
	if err != nil {
		return err
	}
	if len(docs) != 1 {
		return usageErr("%s: want one AdmissionReview or one object, found %d", displayName(*file), len(docs))
	}
	review, err := asReview(docs[0])
	if err != nil {
		return err
	}
	req := apiv1.EvaluateRequest{Review: review, Replace: *replace, Mutate: *mutate}
	var candidates []document
	if len(with) > 0 {
		if candidates, err = e.readDocuments(with); err != nil {
			return err
		}
		if len(candidates) == 0 {
			return fmt.Errorf("--with %s: no objects found", strings.Join(with, ", "))
		}
		for _, d := range candidates {
			req.Objects = append(req.Objects, d.json)
		}
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var res apiv1.EvaluateResponse
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants", *tenant, "clusters", *cluster, "evaluate"), nil, req, &res)
	if err != nil {
		// The server names the candidate objects objects[i], in the
		// order of the request.
		return nameDocuments(err, candidates, "objects")
	}
	if !*explain {
		// -o json prints the AdmissionReview itself, exactly what the
		// webhook would answer.
		raw = indentJSON(res.Review)
	}
	return e.emit(c, raw, func(w io.Writer) error { return printEvaluation(w, res, *explain) })
}

// asReview returns the AdmissionReview of a -f document: the document
// itself, or a CREATE review of a bare object.
func asReview(d document) ([]byte, error) {
	if d.meta.Kind == "AdmissionReview" {
		return d.json, nil
	}
	gv, err := schema.ParseGroupVersion(d.meta.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("%s, field apiVersion: %w", d.where(), err)
	}
	gvk := map[string]string{"group": gv.Group, "version": gv.Version, "kind": d.meta.Kind}
	gvr := map[string]string{"group": gv.Group, "version": gv.Version, "resource": plural(d.meta.Kind)}
	return json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1",
		"kind":       "AdmissionReview",
		"request": map[string]any{
			"uid":             "admin-test",
			"kind":            gvk,
			"resource":        gvr,
			"requestKind":     gvk,
			"requestResource": gvr,
			"name":            d.meta.Metadata.Name,
			"namespace":       d.meta.Metadata.Namespace,
			"operation":       "CREATE",
			"userInfo":        map[string]any{"username": "admin-test"},
			"object":          json.RawMessage(d.json),
			"dryRun":          false,
			"options":         map[string]string{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
		},
	})
}

// plural is the resource of a kind by the English rules kubectl's
// RESTMapper falls back on; a resource that does not follow them needs a
// full AdmissionReview.
func plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "z"),
		strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}

// reviewResponse is what the human output shows of an AdmissionReview.
type reviewResponse struct {
	Response *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
		Result  *struct {
			Code    int    `json:"code"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"status"`
		Patch            []byte            `json:"patch"`
		Warnings         []string          `json:"warnings"`
		AuditAnnotations map[string]string `json:"auditAnnotations"`
	} `json:"response"`
}

func printEvaluation(w io.Writer, res apiv1.EvaluateResponse, explain bool) error {
	var rv reviewResponse
	if err := json.Unmarshal(res.Review, &rv); err != nil || rv.Response == nil {
		return fmt.Errorf("the server's answer holds no AdmissionReview response")
	}
	r := rv.Response
	if r.Allowed {
		fmt.Fprintln(w, "allowed")
	} else {
		line := "denied"
		if r.Result != nil {
			line = fmt.Sprintf("denied (%d %s): %s", r.Result.Code, r.Result.Reason, r.Result.Message)
		}
		fmt.Fprintln(w, line)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if len(r.Patch) > 0 {
		fmt.Fprintf(w, "patch: %s\n", r.Patch)
	}
	if len(res.Object) > 0 {
		var obj bytes.Buffer
		if err := json.Indent(&obj, res.Object, "", "  "); err != nil {
			return fmt.Errorf("the server's answer: object: %w", err)
		}
		fmt.Fprintf(w, "object after the mutations:\n%s\n", obj.Bytes())
	}
	if len(r.AuditAnnotations) > 0 {
		fmt.Fprintf(w, "audit annotations: %s\n", labels(r.AuditAnnotations))
	}
	if !explain {
		return nil
	}
	fmt.Fprintf(w, "\npolicy version %d", res.SnapshotVersion)
	if res.Candidate {
		fmt.Fprint(w, ", with the candidate objects")
	}
	fmt.Fprintln(w)
	t := newTable(w, "POLICY", "BINDING", "PARAM", "MATCHED", "OUTCOME", "COST", "REASON")
	for _, b := range res.Trace {
		outcome := b.Outcome
		if b.Reinvoked {
			outcome += ", reinvoked"
		}
		t.row(b.Policy, b.Binding, b.Param, fmt.Sprint(b.Matched), outcome, fmt.Sprint(b.Cost), b.Reason)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, b := range res.Trace {
		if len(b.MatchConditions)+len(b.Validations)+len(b.AuditAnnotations)+len(b.Mutations) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (binding %s", b.Policy, b.Binding)
		if b.Param != "" {
			fmt.Fprintf(w, ", param %s", b.Param)
		}
		if b.Reinvoked {
			fmt.Fprint(w, ", reinvoked")
		}
		fmt.Fprintln(w, "):")
		for _, g := range []struct {
			what  string
			exprs []apiv1.ExpressionTrace
		}{{"matchCondition", b.MatchConditions}, {"validation", b.Validations}, {"auditAnnotation", b.AuditAnnotations}} {
			for i, x := range g.exprs {
				name := x.Name
				if name == "" {
					name = fmt.Sprint(i)
				}
				fmt.Fprintf(w, "  %s %s: %s\n", g.what, name, x.Expression)
				result := x.Result
				if x.Error != "" {
					result = "error: " + x.Error
				}
				fmt.Fprintf(w, "    = %s (cost %d)", result, x.Cost)
				if x.Message != "" {
					fmt.Fprintf(w, ": %s", x.Message)
				}
				fmt.Fprintln(w)
			}
		}
		printMutations(w, b.Mutations)
	}
	return nil
}

// printMutations shows what each applied mutation did.
func printMutations(w io.Writer, ms []apiv1.MutationTrace) {
	for _, m := range ms {
		fmt.Fprintf(w, "  mutation %d (%s): %s\n", m.Index, m.PatchType, strings.TrimSpace(m.Expression))
		result := "unchanged"
		switch {
		case m.Error != "":
			result = "error: " + m.Error
		case m.Changed:
			result = "changed the object"
		}
		fmt.Fprintf(w, "    = %s (cost %d)\n", result, m.Cost)
	}
}
