package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/ops"
)

// serveOps starts the operations listener: /livez, /readyz and /metrics.
// /metrics names tenants, clusters and policies, so it is served here
// only, never on the webhook or admin listeners that remote apiservers
// and admins reach. Plain HTTP without authentication by default (the
// listener belongs on a network only Prometheus and the kubelet reach);
// --metrics-tls and --metrics-token-file opt into TLS, with the gateway's
// certificate, and a bearer token on /metrics.
func (m *Main) serveOps() error {
	h := m.Health.Handler(m.Registry)
	if m.Config.MetricsTokenFile != "" {
		b, err := os.ReadFile(m.Config.MetricsTokenFile)
		if err != nil {
			return fmt.Errorf("--metrics-token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return fmt.Errorf("--metrics-token-file %s is empty", m.Config.MetricsTokenFile)
		}
		h = ops.RequireBearer("/metrics", token, h)
	}
	var tlsCfg *tls.Config
	if m.Config.MetricsTLS {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: m.TLS.GetCertificate}
	}
	m.metricsSrv = m.newServer(h, tlsCfg)
	m.serve(m.metricsSrv, m.metricsLn, m.Config.MetricsTLS)
	return nil
}
