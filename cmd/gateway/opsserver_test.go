package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// /metrics names tenants, clusters and policies: it must not be reachable
// on the listeners that remote apiservers and admins use, and TLS and a
// bearer token on it are opt-in, probes staying open.
func TestMetricsOnlyOnTheOperationsListener(t *testing.T) {
	dbURL := pgtest.URL(t)
	m := startMain(t, testConfig(t, dbURL))
	c := httpsClient(t, m.CAFile)
	for _, base := range []string{m.WebhookURL(), m.AdminURL()} {
		if code, body, _ := get(t, c, base+"/metrics"); code == 200 || strings.Contains(body, "go_goroutines") {
			t.Errorf("%s/metrics = %d, serves metrics", base, code)
		}
	}
	if !strings.HasPrefix(m.MetricsURL(), "http://") {
		t.Fatalf("the default operations listener is %s, want plain HTTP", m.MetricsURL())
	}

	token := filepath.Join(t.TempDir(), "metrics-token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dbURL)
	cfg.MetricsTLS, cfg.MetricsTokenFile = true, token
	m = startMain(t, cfg)
	if !strings.HasPrefix(m.MetricsURL(), "https://") {
		t.Fatalf("with --metrics-tls the listener is %s", m.MetricsURL())
	}
	c = httpsClient(t, m.CAFile)
	cases := []struct {
		name, path, auth string
		want             int
	}{
		{"probe livez", "/livez", "", 200},
		{"probe readyz", "/readyz", "", 200},
		{"metrics without token", "/metrics", "", 401},
		{"metrics with a wrong token", "/metrics", "Bearer s3cre", 401},
		{"metrics with the token", "/metrics", "Bearer s3cret", 200},
	}
	for _, tc := range cases {
		var header []string
		if tc.auth != "" {
			header = []string{"Authorization", tc.auth}
		}
		if code, _, _ := get(t, c, m.MetricsURL()+tc.path, header...); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if code, _, _ := get(t, plain, strings.Replace(m.MetricsURL(), "https", "http", 1)+"/livez"); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to a TLS operations listener = %d, want 400", code)
	}
}
