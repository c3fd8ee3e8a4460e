package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
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
	raw, err := cl.do(e, apiclient.Request{Method: http.MethodPost, Path: apiPath("tenants", *tenant, "apply"), Query: q,
		Body: applyBody(docs), ContentType: "application/json"})
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
