package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdTokenCreate(e *env, args []string) error {
	f := e.newFlags("token create")
	c := f.conn(true)
	name := f.String("name", "", "what the token is for")
	role := f.String("role", "", "operator, admin, viewer, or sync (may only push one cluster's inventory: admin namespaces sync)")
	tenant := f.String("tenant", "", "the tenant of an admin, viewer or sync token")
	cluster := f.String("cluster", "", "the cluster of a sync token")
	expires := f.String("expires", "", "lifetime, a Go duration such as 720h (default: no expiry)")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("name", *name, "role", *role); err != nil {
		return err
	}
	switch *role {
	case apiv1.RoleOperator, apiv1.RoleAdmin, apiv1.RoleViewer:
		if *cluster != "" {
			return usageErr("--cluster is only for a sync token")
		}
	case apiv1.RoleSync:
		if err := required("tenant", *tenant, "cluster", *cluster); err != nil {
			return err
		}
	default:
		return usageErr("--role %q: use operator, admin, viewer or sync", *role)
	}
	if err := durationFlag("expires", *expires); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var issued apiv1.TokenIssued
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tokens"), nil,
		apiv1.TokenCreate{Name: *name, Role: *role, Tenant: *tenant, Cluster: *cluster, ExpiresIn: *expires}, &issued)
	if err != nil {
		return namingFlags(err, map[string]string{"name": "--name", "role": "--role", "tenant": "--tenant",
			"cluster": "--cluster", "expiresIn": "--expires"})
	}
	return e.emit(c, raw, func(w io.Writer) error {
		tk := issued.Token
		scope := tk.Role
		if tk.Cluster != "" {
			scope += " of cluster " + strconv.Quote(tk.Cluster)
		}
		if tk.Tenant != "" {
			scope += " of tenant " + strconv.Quote(tk.Tenant)
		}
		_, err := fmt.Fprintf(w, "token %d (%s) created; the secret is shown this once:\n%s\n", tk.ID, scope, issued.Secret)
		return err
	})
}

func cmdTokenList(e *env, args []string) error {
	f := e.newFlags("token list")
	c := f.conn(true)
	tenant := f.String("tenant", "", "only this tenant's tokens")
	active := f.Bool("active", false, "leave revoked and expired tokens out")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	q := activeOnly(*active)
	if *tenant != "" {
		q.Set("tenant", *tenant)
	}
	tokens, raw, err := listAll[apiv1.Token](e, cl, apiPath("tokens"), q)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printTokens(w, e.now(), tokens) })
}

func printTokens(w io.Writer, now time.Time, tokens []apiv1.Token) error {
	// A sync token is scoped to one cluster: without its cluster, two
	// clusters' sync tokens of a tenant would look the same.
	t := newTable(w, "ID", "NAME", "ROLE", "TENANT", "CLUSTER", "STATUS", "CREATED BY", "EXPIRES", "LAST USED", "AGE")
	for _, x := range tokens {
		t.row(strconv.FormatInt(x.ID, 10), x.Name, x.Role, x.Tenant, x.Cluster, credentialStatus(now, true, x.RevokedAt, x.ExpiresAt),
			x.CreatedBy, until(now, x.ExpiresAt), ago(now, x.LastUsedAt), age(now, x.CreatedAt))
	}
	return t.flush()
}

func cmdTokenRevoke(e *env, args []string) error {
	f := e.newFlags("token revoke")
	c := f.conn(true)
	cascade := f.Bool("cascade", false, "revoke as well every token this one minted, directly or not")
	pos, err := f.parse(args, 1, 1, "ID")
	if err != nil {
		return err
	}
	id, err := parseID(pos[0])
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var tk apiv1.Token
	var q url.Values
	if *cascade {
		q = url.Values{"cascade": {"true"}}
	}
	raw, err := cl.sendJSON(e, http.MethodDelete, apiPath("tokens", id), q, nil, &tk)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		msg := fmt.Sprintf("token %d (%q) revoked", tk.ID, tk.Name)
		switch n := len(tk.RevokedWith); {
		case *cascade && n == 0:
			msg += "; it had minted no token"
		case n > 0:
			ids := make([]string, n)
			for i, id := range tk.RevokedWith {
				ids[i] = strconv.FormatInt(id, 10)
			}
			msg += fmt.Sprintf(", with the %d token(s) it had minted: %s", n, strings.Join(ids, ", "))
		}
		_, err := fmt.Fprintln(w, msg)
		return err
	})
}
