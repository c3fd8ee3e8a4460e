package cli

import (
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
	mutate := f.Bool("mutate", false, "answer as the mutating webhook (/mutate) only: the MutatingAdmissionPolicies; prints the patch and the final object")
	validate := f.Bool("validate", false, "answer as the validating webhook (/validate) only")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if *mutate && *validate {
		return usageErr("--mutate and --validate cannot be combined; without either, admin test evaluates as the apiserver's admission chain")
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
	// Without a flag, the server decides from the policies, as the
	// apiserver runs mutating admission, then validating admission.
	chain := !*mutate && !*validate
	req := apiv1.EvaluateRequest{Review: review, Replace: *replace, Mutate: *mutate, Chain: chain}
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
		// webhook would answer; both, when the chain called two.
		if raw, err = reviewsJSON(res); err != nil {
			return err
		}
	}
	if chain {
		return e.emit(c, raw, func(w io.Writer) error { return printChain(w, res, *explain) })
	}
	return e.emit(c, raw, func(w io.Writer) error { return printEvaluation(w, res, *explain) })
}

// reviewsJSON is the AdmissionReview of the answer, or, when the mutating
// and the validating webhook were both called, {"mutating": review,
// "validating": review} (without validating when the mutation denied).
func reviewsJSON(res apiv1.EvaluateResponse) ([]byte, error) {
	if res.Mutation == nil {
		return indentJSON(res.Review), nil
	}
	both := map[string]json.RawMessage{"mutating": res.Mutation.Review}
	if slices.Contains(res.Evaluated, "validate") {
		both["validating"] = res.Review
	}
	return json.MarshalIndent(both, "", "  ")
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
