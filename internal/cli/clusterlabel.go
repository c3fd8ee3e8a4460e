package cli

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// cmdClusterLabel changes some of a cluster's labels, as kubectl label
// does: k=v sets, k- removes. The API replaces a cluster's labels whole
// (PATCH), so this reads them, applies the changes and writes them back;
// --overwrite guards a value that would change silently.
func cmdClusterLabel(e *env, args []string) error {
	f := e.newFlags("cluster label")
	c := f.conn(true)
	tenant := tenantFlag(f)
	overwrite := f.Bool("overwrite", false, "allow changing the value of a label the cluster already has")
	pos, err := f.parse(args, 2, -1, "NAME and k=v or k- changes")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	set, remove, err := parseLabelChanges(pos[1:])
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	path := apiPath("tenants", *tenant, "clusters", pos[0])
	var cur apiv1.Cluster
	if _, err := cl.getJSON(e, path, nil, &cur); err != nil {
		return err
	}
	next := maps.Clone(cur.Labels)
	if next == nil {
		next = map[string]string{}
	}
	for k, v := range set {
		if old, ok := next[k]; ok && old != v && !*overwrite {
			return usageErr("cluster %q already has label %s=%s; pass --overwrite to change it to %q", pos[0], k, old, v)
		}
		next[k] = v
	}
	for _, k := range remove {
		delete(next, k)
	}
	var updated apiv1.Cluster
	raw, err := cl.sendJSON(e, http.MethodPatch, path, nil, apiv1.ClusterUpdate{Labels: next}, &updated)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "cluster %q labelled: %s\n", updated.Name, labels(updated.Labels))
		return err
	})
}

// parseLabelChanges reads kubectl label's arguments: k=v and k-.
func parseLabelChanges(args []string) (set map[string]string, remove []string, err error) {
	set = map[string]string{}
	for _, a := range args {
		if k, ok := strings.CutSuffix(a, "-"); ok && !strings.Contains(a, "=") {
			if k == "" {
				return nil, nil, usageErr("%q: a label to remove is written KEY-", a)
			}
			remove = append(remove, k)
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, nil, usageErr("%q: want KEY=VALUE to set a label or KEY- to remove it", a)
		}
		if _, dup := set[k]; dup {
			return nil, nil, usageErr("label %q is given twice", k)
		}
		set[k] = v
	}
	for _, k := range remove {
		if _, both := set[k]; both {
			return nil, nil, usageErr("label %q is both set and removed", k)
		}
	}
	return set, remove, nil
}
