package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// whoamiPath is a test-only route that authenticates like the webhook will.
// It is not /t/{tenant}/validate, which belongs to the webhook handler.
const whoamiPath = "/_test/t/{tenant}/whoami"

func addWhoami(m *Main) {
	m.WebhookMux.HandleFunc("GET "+whoamiPath, func(w http.ResponseWriter, r *http.Request) {
		id, err := m.Auth.Authenticate(r)
		if err != nil {
			http.Error(w, err.(*fault.Error).Message, fault.HTTPStatus(err))
			return
		}
		fmt.Fprintf(w, "%s/%s/%s", id.TenantName, id.ClusterName, id.CredentialType)
	})
}

// webhookClient trusts the gateway's serving CA and presents cert, if any.
func webhookClient(t *testing.T, m *Main, cert *tls.Certificate) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(m.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: roots}
	if cert != nil {
		// Always present it, even when it does not chain to a CA the server
		// names as acceptable (Certificates would then send nothing).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func whoami(c *http.Client, m *Main, tenant, token string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodGet, m.WebhookURL()+"/_test/t/"+tenant+"/whoami", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestCrossReplicaRevocation runs two gateways on one database. A credential
// created and then revoked through one of them is accepted and then refused
// by the other within 2 s, over the real webhook listener.
func TestCrossReplicaRevocation(t *testing.T) {
	dbURL := pgtest.URL(t)
	cfgA := testConfig(t, dbURL)
	a := startMain(t, cfgA, addWhoami)
	// Replica B shares A's client CA, as replicas share --client-ca-cert.
	cfgB := testConfig(t, dbURL)
	cfgB.ClientCACert = filepath.Join(cfgA.StateDir, "tls", tenancy.ClientCACertFile)
	cfgB.ClientCAKey = filepath.Join(cfgA.StateDir, "tls", tenancy.ClientCAKeyFile)
	b := startMain(t, cfgB, addWhoami)
	if !a.ClientCA.Certificate().Equal(b.ClientCA.Certificate()) {
		t.Fatal("the replicas do not share the client CA")
	}

	ctx := context.Background()
	acme, err := a.Tenancy.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Tenancy.CreateTenant(ctx, "globex", ""); err != nil {
		t.Fatal(err)
	}
	cl, err := a.Tenancy.CreateCluster(ctx, acme.ID, "prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.Tenancy.CreateToken(ctx, acme.ID, cl.ID, tenancy.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crt, err := a.Tenancy.IssueCertificate(ctx, acme.ID, cl.ID, tenancy.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(crt.CertificatePEM, crt.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	plain := webhookClient(t, b, nil)
	withCert := webhookClient(t, b, &pair)

	// until polls replica B until the request gives want, within d.
	until := func(what string, c *http.Client, tenant, token string, want int, d time.Duration) {
		t.Helper()
		var code int
		var body string
		var err error
		defer func() {
			if t.Failed() {
				t.Logf("%s: last answer %d %q (%v)", what, code, body, err)
			}
		}()
		took := testutil.Eventually(t, d, fmt.Sprintf("%s to answer %d", what, want), func() bool {
			code, body, err = whoami(c, b, tenant, token)
			return err == nil && code == want
		})
		t.Logf("%s: %d %q after %v", what, code, body, took)
	}
	until("token on B", plain, "acme", tok.Token, 200, 2*time.Second)
	until("certificate on B", withCert, "acme", "", 200, 2*time.Second)
	until("token on B, other tenant", plain, "globex", tok.Token, 403, time.Second)
	until("no credential on B", plain, "acme", "", 401, time.Second)

	if _, err := a.Tenancy.RevokeCredential(ctx, acme.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	until("revoked token on B", plain, "acme", tok.Token, 401, 2*time.Second)
	if _, err := a.Tenancy.RevokeCredential(ctx, acme.ID, crt.ID); err != nil {
		t.Fatal(err)
	}
	// A new connection, so that nothing rides on an old one.
	until("revoked certificate on B", webhookClient(t, b, &pair), "acme", "", 401, 2*time.Second)
}

// TestWebhookRefusesForeignClientCertificate: the webhook listener verifies
// client certificates against the client CA during the handshake.
func TestWebhookRefusesForeignClientCertificate(t *testing.T) {
	m := startMain(t, testConfig(t, pgtest.URL(t)), addWhoami)
	if _, err := os.Stat(filepath.Join(m.Config.StateDir, "tls", tenancy.ClientCACertFile)); err != nil {
		t.Fatalf("--dev did not write the client CA: %v", err)
	}
	other, err := tenancy.NewClientCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	store := tenancy.NewStore(m.Pool, other)
	ctx := context.Background()
	acme, _ := store.CreateTenant(ctx, "acme", "")
	cl, _ := store.CreateCluster(ctx, acme.ID, "prod", nil)
	foreign, err := store.IssueCertificate(ctx, acme.ID, cl.ID, tenancy.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(foreign.CertificatePEM, foreign.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if code, body, err := whoami(webhookClient(t, m, &pair), m, "acme", ""); err == nil {
		t.Fatalf("a certificate from another CA got %d %q, want a refused handshake", code, body)
	}
}

func TestClientCAFlagsGoTogether(t *testing.T) {
	env := func(string) string { return "" }
	base := []string{"--dev", "--database-url", "postgres://x/y"}
	if _, err := ParseConfig(append(base, "--client-ca-cert", "ca.crt"), env); err == nil {
		t.Fatal("--client-ca-cert without --client-ca-key was accepted")
	}
	c, err := ParseConfig(append(base, "--client-ca-cert", "ca.crt", "--client-ca-key", "ca.key"), env)
	if err != nil || c.ClientCACert != "ca.crt" || c.ClientCAKey != "ca.key" {
		t.Fatalf("ParseConfig = %+v, %v", c, err)
	}
}
