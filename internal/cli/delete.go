package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

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
