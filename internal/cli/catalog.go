package cli

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdCatalogList(e *env, args []string) error {
	f := e.newFlags("catalog list")
	c := f.conn(true)
	tenant := f.String("tenant", "", "also show the version each entry is installed at in `TENANT`")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	path := apiPath("catalog")
	if *tenant != "" {
		path = apiPath("tenants", *tenant, "catalog")
	}
	var list apiv1.List[apiv1.CatalogEntry]
	raw, err := cl.getJSON(e, path, nil, &list)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printCatalog(w, list.Items, *tenant != "") })
}

func printCatalog(w io.Writer, entries []apiv1.CatalogEntry, installed bool) error {
	headers := []string{"NAME", "VERSION", "CATEGORY", "PARAMS"}
	if installed {
		headers = append(headers, "INSTALLED")
	}
	t := newTable(w, append(headers, "DESCRIPTION")...)
	for _, it := range entries {
		var params []string
		for _, p := range it.Params {
			params = append(params, p.Key)
		}
		row := []string{it.Name, it.Version, it.Category, orNone(strings.Join(params, ","))}
		if installed {
			row = append(row, orNone(it.Installed))
		}
		t.row(append(row, it.Description)...)
	}
	return t.flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func cmdCatalogShow(e *env, args []string) error {
	f := e.newFlags("catalog show")
	c := f.conn(true)
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var it apiv1.CatalogEntry
	raw, err := cl.getJSON(e, apiPath("catalog", pos[0]), nil, &it)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := io.WriteString(w, it.YAML)
		return err
	})
}

func cmdCatalogInstall(e *env, args []string) error {
	f := e.newFlags("catalog install")
	c := f.conn(true)
	tenant := tenantFlag(f)
	action := f.String("action", "Deny", "the bindings' validation `ACTION`: Deny, Warn or Audit")
	selector := f.String("cluster-selector", "", "apply the bindings only on the tenant's clusters whose labels match `SELECTOR` (e.g. env=prod)")
	dryRun := f.Bool("dry-run", false, "check and report, write nothing")
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	switch strings.ToLower(*action) {
	case "deny", "warn", "audit":
	default:
		return usageErr("--action %q: use Deny, Warn or Audit", *action)
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var res apiv1.CatalogResult
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants", *tenant, "catalog", pos[0], "install"), dryRunQuery(*dryRun),
		apiv1.CatalogInstall{Action: *action, ClusterSelector: *selector}, &res)
	if err != nil {
		return namingFlags(err, map[string]string{"action": "--action", "clusterSelector": "--cluster-selector"})
	}
	return e.emit(c, raw, func(w io.Writer) error {
		if err := printApply(w, res.ApplyResult); err != nil {
			return err
		}
		verb := "installed"
		if res.DryRun {
			verb = "would be installed (dry run)"
		}
		_, err := fmt.Fprintf(w, "catalog entry %s %s %s in tenant %s\n", res.Entry, res.ToVersion, verb, *tenant)
		return err
	})
}

func dryRunQuery(dryRun bool) url.Values {
	q := url.Values{}
	if dryRun {
		q.Set("dryRun", "true")
	}
	return q
}

// cmdCatalogUpgrade shows what an upgrade changes (a dry run on the
// server) and replaces the installed objects only once that is confirmed.
func cmdCatalogUpgrade(e *env, args []string) error {
	f := e.newFlags("catalog upgrade")
	c := f.conn(true)
	tenant := tenantFlag(f)
	dryRun := f.Bool("dry-run", false, "show the diff, change nothing")
	yes := f.Bool("yes", false, "replace without asking")
	pos, err := f.parse(args, 1, 1, "NAME")
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
	path := apiPath("tenants", *tenant, "catalog", pos[0], "upgrade")
	var preview apiv1.CatalogResult
	raw, err := cl.sendJSON(e, http.MethodPost, path, dryRunQuery(true), nil, &preview)
	if err != nil {
		return err
	}
	if *dryRun || preview.Diff == "" {
		return e.emit(c, raw, func(w io.Writer) error { return printUpgrade(w, preview) })
	}
	if c.output == "" {
		if err := printUpgrade(e.stdout, preview); err != nil {
			return err
		}
	}
	if !*yes {
		fmt.Fprintf(e.stderr, "Replace the installed objects of %s in tenant %s? [y/N] ", preview.Entry, *tenant)
		answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return fmt.Errorf("upgrade cancelled; nothing changed")
		}
	}
	var res apiv1.CatalogResult
	if raw, err = cl.sendJSON(e, http.MethodPost, path, nil, nil, &res); err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		if err := printApply(w, res.ApplyResult); err != nil {
			return err
		}
		for _, it := range res.Removed {
			if _, err := fmt.Fprintf(w, "%s %s\n", ref(it.APIVersion, it.Kind, it.Name), it.Action); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(w, "catalog entry %s upgraded from %s to %s in tenant %s\n", res.Entry, res.FromVersion, res.ToVersion, *tenant)
		return err
	})
}

// printUpgrade prints an upgrade's diff, or that there is none.
func printUpgrade(w io.Writer, res apiv1.CatalogResult) error {
	if res.Diff == "" {
		_, err := fmt.Fprintf(w, "catalog entry %s is up to date (version %s): nothing to change\n", res.Entry, res.ToVersion)
		return err
	}
	_, err := fmt.Fprintf(w, "%sUpgrading %s from version %s to %s.\n", res.Diff, res.Entry, res.FromVersion, res.ToVersion)
	return err
}
