package cli

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdTenantLimits(e *env, args []string) error {
	f := e.newFlags("tenant limits")
	c := f.conn(true)
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var l apiv1.TenantLimits
	raw, err := cl.getJSON(e, apiPath("tenants", pos[0], "limits"), nil, &l)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printLimits(w, l) })
}

// cmdTenantSetLimits changes the overrides named by flags and keeps the
// others: the API replaces all of them, so the current ones are read first.
func cmdTenantSetLimits(e *env, args []string) error {
	f := e.newFlags("tenant set-limits")
	c := f.conn(true)
	conc := f.Int("concurrent-evaluations", 0, "evaluations of the tenant at once on each replica (0: the default)")
	cost := f.Int64("cel-cost-per-request", 0, "CEL cost of one request, summed over its bindings (0: the default)")
	rate := f.Float64("requests-per-second", 0, "requests per second on each replica (0: the default)")
	nss := f.Int("max-namespaces-per-cluster", 0, "namespaces one cluster's inventory holds, committed and provisional together (0: the default)")
	crds := f.Int("max-crds-per-cluster", 0, "CRDs one cluster's inventory holds (0: the default)")
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if !set["concurrent-evaluations"] && !set["cel-cost-per-request"] && !set["requests-per-second"] &&
		!set["max-namespaces-per-cluster"] && !set["max-crds-per-cluster"] {
		return usageErr("give at least one of --concurrent-evaluations, --cel-cost-per-request, --requests-per-second, " +
			"--max-namespaces-per-cluster, --max-crds-per-cluster (0 restores the default)")
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	path := apiPath("tenants", pos[0], "limits")
	var cur apiv1.TenantLimits
	if _, err := cl.getJSON(e, path, nil, &cur); err != nil {
		return err
	}
	o := cur.Overrides
	if set["concurrent-evaluations"] {
		o.ConcurrentEvaluations = *conc
	}
	if set["cel-cost-per-request"] {
		o.CELCostPerRequest = *cost
	}
	if set["requests-per-second"] {
		o.RequestsPerSecond = *rate
	}
	if set["max-namespaces-per-cluster"] {
		o.MaxNamespacesPerCluster = *nss
	}
	if set["max-crds-per-cluster"] {
		o.MaxCRDsPerCluster = *crds
	}
	var l apiv1.TenantLimits
	raw, err := cl.sendJSON(e, http.MethodPut, path, nil, o, &l)
	if err != nil {
		return namingFlags(err, map[string]string{"concurrentEvaluations": "--concurrent-evaluations",
			"celCostPerRequest": "--cel-cost-per-request", "requestsPerSecond": "--requests-per-second",
			"maxNamespacesPerCluster": "--max-namespaces-per-cluster", "maxCRDsPerCluster": "--max-crds-per-cluster"})
	}
	return e.emit(c, raw, func(w io.Writer) error { return printLimits(w, l) })
}

func printLimits(w io.Writer, l apiv1.TenantLimits) error {
	t := newTable(w, "LIMIT", "EFFECTIVE", "OVERRIDE", "DEFAULT")
	show := func(v string, zero bool, none string) string {
		if zero {
			return none
		}
		return v
	}
	i := func(v int64, none string) string { return show(strconv.FormatInt(v, 10), v == 0, none) }
	r := func(v float64, none string) string { return show(strconv.FormatFloat(v, 'g', -1, 64), v == 0, none) }
	t.row("concurrent-evaluations", i(int64(l.Effective.ConcurrentEvaluations), "none"),
		i(int64(l.Overrides.ConcurrentEvaluations), "-"), i(int64(l.Defaults.ConcurrentEvaluations), "none"))
	t.row("cel-cost-per-request", i(l.Effective.CELCostPerRequest, "none"),
		i(l.Overrides.CELCostPerRequest, "-"), i(l.Defaults.CELCostPerRequest, "none"))
	t.row("requests-per-second", r(l.Effective.RequestsPerSecond, "none"),
		r(l.Overrides.RequestsPerSecond, "-"), r(l.Defaults.RequestsPerSecond, "none"))
	t.row("max-namespaces-per-cluster", i(int64(l.Effective.MaxNamespacesPerCluster), "none"),
		i(int64(l.Overrides.MaxNamespacesPerCluster), "-"), i(int64(l.Defaults.MaxNamespacesPerCluster), "none"))
	t.row("max-crds-per-cluster", i(int64(l.Effective.MaxCRDsPerCluster), "none"),
		i(int64(l.Overrides.MaxCRDsPerCluster), "-"), i(int64(l.Defaults.MaxCRDsPerCluster), "none"))
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Evaluation limits apply on each replica, inventory bounds to each cluster, of tenant %q.\n", l.Tenant)
	return err
}
