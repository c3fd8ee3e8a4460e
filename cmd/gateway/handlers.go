package main

import (
	"bytes"
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

// setupWebhook routes the validate and mutate endpoints, with and without
// a URL secret in the path (/t/{tenant}/k/{secret}/validate). Any method reaches
// the handler, which answers 405 with a JSON Status for anything but POST.
// The two share one handler configuration, metrics and recorder; they
// differ in what they evaluate.
func (m *Main) setupWebhook() error {
	serves, err := m.Config.serves()
	if err != nil {
		return err
	}
	h := &webhook.Handler{
		Serves:           serves,
		Authenticate:     m.Auth.Authenticate,
		Snapshot:         m.PolicyCache.Snapshot,
		Namespaces:       m.namespaces,
		Observe:          m.Namespaces.Observe,
		LearnTerminating: m.Namespaces.LearnNamespaceTerminating,
		Recorder:         m.recorder(),
		Metrics:          webhook.NewMetrics(m.Registry, m.Config.MetricsTenantLabel),
		Tracer:           m.Tracing.Provider.Tracer("github.com/portcullis-dev/portcullis/internal/webhook"),
		Propagator:       m.Tracing.Propagator,
		Logger:           m.Logger,
		Instance:         m.Config.Instance,
		MaxRequestBytes:  m.Config.MaxRequestBytes,
		Limits:           m.Limits,
	}
	mh := *h
	mh.Kind = evaluator.Mutating // its metrics' endpoint label is then "mutate"
	// The second pattern of each carries a url credential's secret; the
	// span's http.route is the pattern, never the path, so the secret
	// reaches no trace, and nothing logs or labels the path.
	for _, p := range []string{"/t/{tenant}/", "/t/{tenant}/k/{secret}/"} {
		m.WebhookMux.Handle(p+"validate", h)
		m.WebhookMux.Handle(p+"mutate", &mh)
	}
	return nil
}

// namespaces is the cluster inventory that the webhook and the admin API
// evaluate against: the inventory cache's, as the evaluator reads it.
func (m *Main) namespaces(ctx context.Context, tenantID, clusterID int64) (evaluator.NamespaceLookup, error) {
	return m.Namespaces.Lookup(ctx, tenantID, clusterID)
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
	// Checked now, so a wrong path stops the start with a clear error;
	// read again for every artifact, so a renewed CA needs no restart.
	if _, err := readCABundle(caFile); err != nil {
		return err
	}
	webhookURL := m.Config.PublicWebhookURL
	if webhookURL == "" {
		webhookURL = m.WebhookURL()
	}
	serves, err := m.Config.serves()
	if err != nil {
		return err
	}
	m.AdminAPI = &api.Server{
		Tokens:            adminauth.NewStore(m.Pool),
		Tenancy:           m.Tenancy,
		Policies:          m.Policies,
		Inventory:         m.Inventory,
		Audit:             auditlog.NewStore(m.Pool),
		Decisions:         m.Decisions,
		Logger:            m.Logger,
		WebhookURL:        webhookURL,
		Serves:            serves,
		CABundle:          func() ([]byte, error) { return readCABundle(caFile) },
		MaxBodyBytes:      m.Config.MaxRequestBytes,
		Limits:            m.LimitStore,
		LimitDefaults:     m.Limits.Defaults(),
		Limiter:           m.Limits,
		MaxApplyDocuments: m.Config.MaxApplyDocuments,
		Tracer:            m.Tracing.Provider.Tracer("github.com/portcullis-dev/portcullis/internal/api"),
		Propagator:        m.Tracing.Propagator,
		Snapshot:          m.PolicyCache.Current, // read-your-writes after an apply
		Namespaces:        m.namespaces,
	}
	api := m.AdminAPI.Handler()
	m.AdminMux.Handle("/api/", api)
	// The web UI calls the API's handler in-process as the signed-in
	// user's token, so it has exactly the API's authorization; its
	// sessions are in the database, so any replica serves any browser.
	web, err := (&ui.Server{API: api, Logger: m.Logger, Sessions: m.AdminAPI.Tokens}).Handler()
	if err != nil {
		return fmt.Errorf("web UI: %w", err)
	}
	m.AdminMux.Handle("/ui/", web)
	m.AdminMux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
	return nil
}

// readCABundle reads the PEM the generated artifacts carry as caBundle.
func readCABundle(path string) ([]byte, error) {
	ca, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhook CA bundle: %w", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("webhook CA bundle %s holds no PEM certificate", path)
	}
	return ca, nil
}
