package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// The webhook configurations carry --webhook-ca-bundle, read whenever
// artifacts are made: a CA renewed on disk is in the next artifacts
// without a restart; a file that is not PEM stops the start.
func TestWebhookCABundleIsReadForEachArtifact(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "ca.crt")
	cfg := testConfig(t, pgtest.URL(t))
	cfg.WebhookCABundle = bundle
	if err := os.WriteFile(bundle, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewMain()
	m.Config = cfg
	err := m.Run(t.Context())
	_ = m.Close()
	if err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Fatalf("a gateway with a bad CA bundle started: %v", err)
	}

	first, second := pemFile(t, "first"), pemFile(t, "second")
	if err := os.WriteFile(bundle, first, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newE2E(t, pgtest.URL(t), func(c *Config) { c.WebhookCABundle = bundle })
	a := operatorCLI(t, e)
	a.ok("tenant", "create", "acme")
	a.ok("cluster", "create", "prod", "--tenant", "acme", "--out", "prod")
	if hooks := readFile(t, "prod/webhooks.yaml"); !strings.Contains(hooks, base64.StdEncoding.EncodeToString(first)) {
		t.Fatalf("webhooks.yaml does not carry the CA bundle:\n%s", hooks)
	}
	if err := os.WriteFile(bundle, second, 0o600); err != nil {
		t.Fatal(err)
	}
	a.ok("cluster", "create", "dev", "--tenant", "acme", "--out", "dev")
	if hooks := readFile(t, "dev/webhooks.yaml"); !strings.Contains(hooks, base64.StdEncoding.EncodeToString(second)) {
		t.Fatalf("webhooks.yaml after the CA changed does not carry the new CA:\n%s", hooks)
	}
}

func pemFile(t *testing.T, tag string) []byte {
	t.Helper()
	return []byte("-----BEGIN CERTIFICATE-----\n" + base64.StdEncoding.EncodeToString([]byte(tag)) + "\n-----END CERTIFICATE-----\n")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
