package ui

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// objectRow is one stored object on the Policies page.
type objectRow struct {
	object
	Type       string
	LastChange *apiv1.Version
	Denials    int64
}

// Href is the object's page.
func (o objectRow) Href(tenant string) string {
	return objectHref(tenant, o.Kind, o.Metadata.Name, o.Metadata.Namespace, groupOf(o.APIVersion))
}

func groupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// objectHref is an object's page, or with a suffix (/diff) one below it.
func objectHref(tenant, kind, name, namespace, group string, suffix ...string) string {
	u := "/ui/t/" + url.PathEscape(tenant) + "/objects/" + url.PathEscape(kind) + "/" + url.PathEscape(name) + strings.Join(suffix, "")
	q := url.Values{}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	// Policy kinds are unambiguous; a param kind may need its group.
	if group != "" && !strings.HasSuffix(group, "admissionregistration.k8s.io") {
		q.Set("group", group)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (s *Server) policies(r *request) error {
	t := r.tenant()
	var st apiv1.DecisionStats
	if err := r.api("GET", p("tenants", t, "decisions", "stats"), url.Values{"since": {"24h"}, "bucket": {"24h"}}, nil, &st); err != nil {
		return err
	}
	_, _, denials := totals(st)
	groups := map[string][]objectRow{}
	for _, typ := range []string{apiv1.TypePolicies, apiv1.TypeBindings, apiv1.TypeParams} {
		var objs list[json.RawMessage]
		if err := r.api("GET", p("tenants", t, "objects"), url.Values{"type": {typ}, "limit": {"1000"}}, nil, &objs); err != nil {
			return err
		}
		for _, raw := range objs.Items {
			var row objectRow
			if err := json.Unmarshal(raw, &row.object); err != nil {
				return err
			}
			row.Type = typ
			row.Denials = denials[row.Metadata.Name]
			q := objectQuery(row.Metadata.Namespace, groupOf(row.APIVersion))
			q.Set("limit", "1")
			var h list[apiv1.Version]
			if err := r.api("GET", p("tenants", t, "objects", row.Kind, row.Metadata.Name, "history"), q, nil, &h); err != nil {
				return err
			}
			if len(h.Items) > 0 {
				row.LastChange = &h.Items[0]
			}
			groups[typ] = append(groups[typ], row)
		}
	}
	return r.page("policies", r.view("Policies", "policies", groups))
}

// objectQuery is the ?namespace=&group= of an object's API path.
func objectQuery(namespace, group string) url.Values {
	q := url.Values{}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	if group != "" {
		q.Set("group", group)
	}
	return q
}
