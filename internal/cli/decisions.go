package cli

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// decision is what the table shows of a logged webhook decision.
type decision struct {
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Cluster   string    `json:"cluster"`
	Operation string    `json:"operation"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UserName  string    `json:"userName"`
	Verdict   string    `json:"verdict"`
	Message   string    `json:"message"`
	Bindings  []struct {
		Policy string `json:"policy"`
		Denied bool   `json:"denied"`
	} `json:"bindings"`
}

// timeFlag checks a --since/--until value: RFC3339, or a Go duration
// meaning that long ago.
func timeFlag(name, v string) error {
	if v == "" {
		return nil
	}
	if _, err := time.ParseDuration(v); err == nil {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, v); err == nil {
		return nil
	}
	return usageErr("--%s %q: want a duration (1h, meaning an hour ago) or an RFC3339 time", name, v)
}

func limitFlag(n, max int) error {
	if n < 1 || n > max {
		return usageErr("--limit %d: want 1 to %d", n, max)
	}
	return nil
}

// maxDecisions is the largest page of decisions the server gives.
const maxDecisions = 500

func cmdDecisions(e *env, args []string) error {
	f := e.newFlags("decisions")
	c := f.conn(true)
	tenant := tenantFlag(f)
	since := f.String("since", "", "only decisions after this: a duration (1h ago) or an RFC3339 time")
	until := f.String("until", "", "only decisions before this: a duration (ago) or an RFC3339 time")
	verdict := f.String("verdict", "", "allowed, denied, warned, error or rejected")
	cluster := f.String("cluster", "", "only this cluster")
	policy := f.String("policy", "", "only decisions this policy took part in")
	namespace := f.String("namespace", "", "only this namespace")
	kind := f.String("kind", "", "only this kind of object")
	user := f.String("user", "", "only this requesting user")
	limit := f.Int("limit", 50, "at most this many, newest first")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	if err := timeFlag("since", *since); err != nil {
		return err
	}
	if err := timeFlag("until", *until); err != nil {
		return err
	}
	switch *verdict {
	case "", "allowed", "denied", "warned", "error", "rejected":
	default:
		return usageErr("--verdict %q: use allowed, denied, warned, error or rejected", *verdict)
	}
	if err := limitFlag(*limit, maxDecisions); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"since": *since, "until": *until, "verdict": *verdict, "cluster": *cluster,
		"policy": *policy, "namespace": *namespace, "kind": *kind, "user": *user} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set(apiv1.QueryLimit, strconv.Itoa(*limit))
	var list apiv1.List[decision]
	raw, err := cl.getJSON(e, apiPath("tenants", *tenant, "decisions"), q, &list)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printDecisions(w, e.now(), list.Items) })
}

func printDecisions(w io.Writer, now time.Time, ds []decision) error {
	if len(ds) == 0 {
		_, err := fmt.Fprintln(w, "No decisions found.")
		return err
	}
	t := newTable(w, "VERDICT", "CLUSTER", "OPERATION", "KIND", "NAMESPACE", "NAME", "USER", "DENIED BY", "MESSAGE", "AGE")
	for _, d := range ds {
		var by []string
		for _, b := range d.Bindings {
			if b.Denied {
				by = append(by, b.Policy)
			}
		}
		if len(by) > 2 {
			by = append(by[:2], fmt.Sprintf("+%d more", len(by)-2))
		}
		t.row(d.Verdict, d.Cluster, d.Operation, d.Kind, d.Namespace, d.Name, d.UserName, strings.Join(by, ","),
			truncate(shortMessage(d.Message), 60), age(now, d.Time))
	}
	return t.flush()
}

// shortMessage drops the preamble the apiserver's message format puts
// before what a policy said: `pods "x" is forbidden: ValidatingAdmissionPolicy
// 'p' with binding 'b' denied request: `.
func shortMessage(m string) string {
	const marker = "denied request: "
	if i := strings.LastIndex(m, marker); i >= 0 {
		return m[i+len(marker):]
	}
	return m
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-3]) + "..."
}

// auditEntry is what the table shows of an audit log entry.
type auditEntry struct {
	Time          time.Time `json:"time"`
	Actor         string    `json:"actor"`
	Tenant        string    `json:"tenant"`
	Action        string    `json:"action"`
	Kind          string    `json:"kind"`
	Namespace     string    `json:"namespace"`
	Name          string    `json:"name"`
	VersionBefore *int64    `json:"versionBefore"`
	VersionAfter  *int64    `json:"versionAfter"`
	DryRun        bool      `json:"dryRun"`
}

func cmdAudit(e *env, args []string) error {
	f := e.newFlags("audit")
	c := f.conn(true)
	tenant := f.String("tenant", "", "only this tenant (the only choice for a tenant's token)")
	since := f.String("since", "", "only entries after this: a duration (24h ago) or an RFC3339 time")
	until := f.String("until", "", "only entries before this: a duration (ago) or an RFC3339 time")
	actor := f.String("actor", "", "only calls by this token name")
	kind := f.String("kind", "", "only this kind of object")
	name := f.String("name", "", "only objects of this name")
	limit := f.Int("limit", 100, "at most this many, newest first")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := timeFlag("since", *since); err != nil {
		return err
	}
	if err := timeFlag("until", *until); err != nil {
		return err
	}
	if err := limitFlag(*limit, apiv1.MaxLimit); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"since": *since, "until": *until, "actor": *actor, "kind": *kind, "name": *name} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set(apiv1.QueryLimit, strconv.Itoa(*limit))
	path := apiPath("audit")
	if *tenant != "" {
		// An operator asks the gateway-wide log, which keeps the entries
		// of a deleted tenant; a tenant's token may call only the
		// tenant's own route.
		var who apiv1.WhoAmI
		if _, err := cl.getJSON(e, apiPath("whoami"), nil, &who); err != nil {
			return err
		}
		if who.Role == apiv1.RoleOperator {
			q.Set("tenant", *tenant)
		} else {
			path = apiPath("tenants", *tenant, "audit")
		}
	}
	var list apiv1.List[auditEntry]
	raw, err := cl.getJSON(e, path, q, &list)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printAudit(w, e.now(), list.Items) })
}

func printAudit(w io.Writer, now time.Time, entries []auditEntry) error {
	if len(entries) == 0 {
		_, err := fmt.Fprintln(w, "No audit entries found.")
		return err
	}
	t := newTable(w, "ACTOR", "TENANT", "ACTION", "KIND", "NAMESPACE", "NAME", "VERSION", "AGE")
	for _, x := range entries {
		v := ""
		switch {
		case x.VersionBefore != nil && x.VersionAfter != nil:
			v = fmt.Sprintf("%d -> %d", *x.VersionBefore, *x.VersionAfter)
		case x.VersionAfter != nil:
			v = fmt.Sprintf("-> %d", *x.VersionAfter)
		case x.VersionBefore != nil:
			v = fmt.Sprintf("%d ->", *x.VersionBefore)
		}
		action := x.Action
		if x.DryRun {
			action += " (dry run)"
		}
		t.row(x.Actor, x.Tenant, action, x.Kind, x.Namespace, x.Name, v, age(now, x.Time))
	}
	return t.flush()
}
