package ui

import (
	"net/url"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

var auditFilters = []string{"actor", "kind", "name", "since", "until", "tenant"}

type auditPage struct {
	Filter map[string]string
	Items  []apiv1.AuditEntry
	Next   string
	// Fleet is the operator's gateway-wide log, filterable by tenant.
	Fleet bool
}

func (s *Server) audit(r *request) error {
	t, q := r.tenant(), r.r.URL.Query()
	path := p("tenants", t, "audit")
	pg := auditPage{Filter: map[string]string{}}
	if t == "" {
		if !r.sess.who.Operator() {
			return s.pickTenant("audit", "Audit")(r)
		}
		path, pg.Fleet = p("audit"), true
	}
	aq := url.Values{"limit": {"50"}}
	for _, k := range auditFilters {
		if k == "tenant" && !pg.Fleet {
			continue
		}
		if v := q.Get(k); v != "" {
			pg.Filter[k] = v
			aq.Set(k, v)
		}
	}
	if c := q.Get("continue"); c != "" {
		aq.Set("continue", c)
	}
	var l list[apiv1.AuditEntry]
	if err := r.api("GET", path, aq, nil, &l); err != nil {
		return err
	}
	pg.Items = l.Items
	if l.Continue != "" {
		nq := url.Values{"continue": {l.Continue}}
		for k, v := range pg.Filter {
			nq.Set(k, v)
		}
		pg.Next = nq.Encode()
	}
	return r.page("audit", r.view("Audit", "audit", pg))
}
