package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

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
	q := listQuery(*limit, map[string]string{"since": *since, "until": *until, "verdict": *verdict, "cluster": *cluster,
		"policy": *policy, "namespace": *namespace, "kind": *kind, "user": *user})
	var list apiv1.DecisionList
	raw, err := cl.getJSON(e, apiPath("tenants", *tenant, "decisions"), q, &list)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printDecisions(w, e.now(), list.Items) })
}

func printDecisions(w io.Writer, now time.Time, ds []apiv1.Decision) error {
	if len(ds) == 0 {
		_, err := fmt.Fprintln(w, "No decisions found.")
		return err
	}
	t := newTable(w, "VERDICT", "CLUSTER", "OPERATION", "KIND", "NAMESPACE", "NAME", "USER", "DENIED BY", "MUTATED BY", "MESSAGE", "AGE")
	for _, d := range ds {
		var by []string
		for _, b := range d.Bindings {
			if b.Denied {
				by = append(by, b.Policy)
			}
		}
		t.row(d.Verdict, d.Cluster, d.Operation, d.Kind, d.Namespace, d.Name, d.UserName, firstTwo(by), firstTwo(d.MutatedBy),
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

// firstTwo lists at most two names and counts the rest.
func firstTwo(names []string) string {
	if len(names) > 2 {
		return strings.Join(names[:2], ",") + fmt.Sprintf(",+%d more", len(names)-2)
	}
	return strings.Join(names, ",")
}
