package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdAudit(e *env, args []string) error {
	f := e.newFlags("audit")
	c := f.conn(true)
	tenant := f.String("tenant", "", "only this tenant (the only choice for a tenant's token)")
	since := f.String("since", "", "only entries after this: a duration (24h ago) or an RFC3339 time")
	until := f.String("until", "", "only entries before this: a duration (ago) or an RFC3339 time")
	actor := f.String("actor", "", "only calls by this token: token:ID (or token:ID/ROLE), as the ACTOR column shows it")
	actorName := f.String("actor-name", "", "only calls by tokens of this name (names are labels, not unique)")
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
	q := listQuery(*limit, map[string]string{"since": *since, "until": *until, "actor": *actor, "actorName": *actorName, "kind": *kind, "name": *name})
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
	var list apiv1.List[apiv1.AuditEntry]
	raw, err := cl.getJSON(e, path, q, &list)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printAudit(w, e.now(), list.Items) })
}

func printAudit(w io.Writer, now time.Time, entries []apiv1.AuditEntry) error {
	if len(entries) == 0 {
		_, err := fmt.Fprintln(w, "No audit entries found.")
		return err
	}
	t := newTable(w, "ACTOR", "ACTOR NAME", "TENANT", "ACTION", "KIND", "NAMESPACE", "NAME", "VERSION", "AGE")
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
		t.row(x.Actor, x.ActorName, x.Tenant, action, x.Kind, x.Namespace, x.Name, v, age(now, x.Time))
	}
	return t.flush()
}
