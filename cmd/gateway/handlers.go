package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/api"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/ui"
	"github.com/portcullis-dev/portcullis/internal/webhook"
)

// setupWebhook routes the validate and mutate endpoints. Any method reaches
// the handler, which answers 405 with a JSON Status for anything but POST.
// The two share one handler configuration, metrics and recorder; they
// differ in what they evaluate.
func (m *Main) setupWebhook() {
	h := &webhook.Handler{
		Authenticate: m.Auth.Authenticate,
		Snapshot:     m.PolicyCache.Snapshot,
		Namespaces: func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
			return m.Namespaces.Lookup(ctx, tenantID, clusterID)
		},
		Learn:            m.Namespaces.LearnNamespace,
		LearnTerminating: m.Namespaces.LearnNamespaceTerminating,
		Recorder:         m.recorder(),
		Metrics:          webhook.NewMetrics(m.Registry, m.Config.MetricsTenantLabel),
		Tracer:           m.Tracing.Provider.Tracer("github.com/portcullis-dev/portcullis/internal/webhook"),
		Propagator:       m.Tracing.Propagator,
		Endpoint:         "validate",
		Logger:           m.Logger,
		Instance:         m.Config.Instance,
		MaxRequestBytes:  m.Config.MaxRequestBytes,
	}
	m.WebhookMux.Handle("/t/{tenant}/validate", h)
	mh := *h
	mh.Mutating, mh.Endpoint = true, "mutate"
	m.WebhookMux.Handle("/t/{tenant}/mutate", &mh)
}

// setupAdminAPI routes /api/v1 on the admin listener.
func (m *Main) setupAdminAPI() error {
	caFile := m.Config.WebhookCABundle
	switch {
	case caFile == "" && m.CAFile != "":
		caFile = m.CAFile
	case caFile == "":
		caFile = m.Config.TLSCert
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("webhook CA bundle: %w", err)
	}
	webhookURL := m.Config.PublicWebhookURL
	if webhookURL == "" {
		webhookURL = m.WebhookURL()
	}
	m.AdminAPI = &api.Server{
		Tokens:       adminauth.NewStore(m.Pool),
		Tenancy:      m.Tenancy,
		Policies:     m.Policies,
		Inventory:    m.Inventory,
		Audit:        auditlog.NewStore(m.Pool),
		Decisions:    m.Decisions,
		Logger:       m.Logger,
		WebhookURL:   webhookURL,
		CABundle:     ca,
		MaxBodyBytes: m.Config.MaxRequestBytes,
		Snapshot:     m.PolicyCache.Snapshot,
		Namespaces: func(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
			return m.Namespaces.Lookup(ctx, tenantID, clusterID)
		},
	}
	api := m.AdminAPI.Handler()
	m.AdminMux.Handle("/api/", api)
	// The web UI calls the API's handler in-process with the signed-in
	// user's token, so it has exactly the API's authorization.
	web, err := (&ui.Server{API: api, Logger: m.Logger}).Handler()
	if err != nil {
		return fmt.Errorf("web UI: %w", err)
	}
	m.AdminMux.Handle("/ui/", web)
	m.AdminMux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
	return nil
}
