package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
	"github.com/portcullis-dev/portcullis/internal/tlsutil"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testConfig is a development configuration on loopback :0 addresses.
// It starts from the flag defaults, so new settings get their defaults here.
func testConfig(t *testing.T, dbURL string) Config {
	t.Helper()
	cfg, err := ParseConfig([]string{
		"--webhook-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
		"--dev", "--state-dir", t.TempDir(), "--database-url", dbURL,
		"--shutdown-timeout", "5s", "--log-level", "warn", "--instance", "test",
	}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startMain runs a gateway until the test ends.
func startMain(t *testing.T, cfg Config, setup ...func(*Main)) *Main {
	t.Helper()
	m := NewMain()
	m.Config = cfg
	m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, f := range setup {
		f(m)
	}
	if err := m.Run(context.Background()); err != nil {
		_ = m.Close()
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// httpsClient trusts the gateway's development CA.
func httpsClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, url string, header ...string) (int, string, *http.Response) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

func TestGatewayServes(t *testing.T) {
	dbURL := pgtest.URL(t)
	m := startMain(t, testConfig(t, dbURL))
	plain := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/livez", "/readyz"} {
		if code, body, _ := get(t, plain, m.MetricsURL()+path); code != 200 {
			t.Fatalf("%s = %d %s", path, code, body)
		}
	}
	if code, body, _ := get(t, plain, m.MetricsURL()+"/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics = %d", code)
	}

	c := httpsClient(t, m.CAFile)
	// Both HTTPS listeners negotiate HTTP/2.
	code, body, resp := get(t, c, m.AdminURL()+"/api/v1/whoami")
	if code != http.StatusUnauthorized || !strings.Contains(body, `"kind": "Status"`) {
		t.Fatalf("whoami without token = %d %s", code, body)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("admin protocol = %s, want HTTP/2", resp.Proto)
	}
	if _, _, resp := get(t, c, m.WebhookURL()+"/"); resp.ProtoMajor != 2 {
		t.Fatalf("webhook protocol = %s, want HTTP/2", resp.Proto)
	}
	// HTTP/1.1 is served too.
	h1 := httpsClient(t, m.CAFile)
	h1.Transport.(*http.Transport).ForceAttemptHTTP2 = false
	h1.Transport.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	if _, _, resp := get(t, h1, m.WebhookURL()+"/"); resp.ProtoMajor != 1 {
		t.Fatalf("webhook protocol = %s, want HTTP/1.1", resp.Proto)
	}
	// The webhook listener speaks HTTPS only.
	if code, _, _ := get(t, plain, strings.Replace(m.WebhookURL(), "https", "http", 1)+"/"); code != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the webhook = %d, want 400", code)
	}

	store := adminauth.NewStore(m.Pool)
	token, err := store.Bootstrap(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ = get(t, c, m.AdminURL()+"/api/v1/whoami", "Authorization", "Bearer "+token)
	if code != 200 || !strings.Contains(body, `"role": "operator"`) {
		t.Fatalf("whoami = %d %s", code, body)
	}
}

func TestRefusesPendingMigrations(t *testing.T) {
	m := NewMain()
	m.Config = testConfig(t, pgtest.EmptyURL(t))
	m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	err := m.Run(context.Background())
	_ = m.Close()
	if err == nil || !strings.Contains(err.Error(), "admin migrate --database-url") {
		t.Fatalf("Run on an unmigrated database = %v, want an error naming `admin migrate`", err)
	}
}

// A gateway that has never reached its database is alive but not ready.
func TestNotReadyUntilDatabaseReached(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	deadDB, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer deadDB.Close()
	go func() {
		for {
			c, err := deadDB.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	cfg := testConfig(t, fmt.Sprintf("postgres://postgres@%s/none?sslmode=disable&connect_timeout=1", deadDB.Addr()))
	cfg.MetricsAddr = metricsAddr
	m := NewMain()
	m.Config = cfg
	m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- m.Run(ctx) }()

	plain := &http.Client{Timeout: 2 * time.Second}
	var live, ready int
	var readyBody string
	testutil.Eventually(t, 10*time.Second, "the operations listener to answer", func() bool {
		resp, err := plain.Get("http://" + metricsAddr + "/livez")
		if err != nil {
			return false
		}
		live = resp.StatusCode
		resp.Body.Close()
		if resp, err = plain.Get("http://" + metricsAddr + "/readyz"); err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ready, readyBody = resp.StatusCode, string(b)
		return true
	})
	if live != 200 || ready != http.StatusServiceUnavailable || !strings.Contains(readyBody, "database not reached yet") {
		t.Fatalf("livez=%d readyz=%d %q", live, ready, readyBody)
	}
	cancel()
	select {
	case err := <-runErr:
		if err == nil {
			t.Fatal("Run succeeded without a database")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	_ = m.Close()
}

func TestTLSHotReload(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, err := tlsutil.EnsureCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "test CA")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first, err := tlsutil.IssueServing(ca, caKey, certFile, keyFile, "localhost", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t, pgtest.URL(t))
	cfg.Dev, cfg.TLSCert, cfg.TLSKey = false, certFile, keyFile
	m := startMain(t, cfg)

	serial := func() string {
		conn, err := tls.Dial("tcp", m.webhookLn.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if got := serial(); got != first {
		t.Fatalf("serving serial %s, want %s", got, first)
	}
	second, err := tlsutil.IssueServing(ca, caKey, certFile, keyFile, "localhost", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "new handshakes to get the new certificate", func() bool {
		return serial() == second
	})
}

func TestGracefulShutdown(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	cfg := testConfig(t, pgtest.URL(t))
	m := startMain(t, cfg, func(m *Main) {
		m.WebhookMux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-release
			fmt.Fprint(w, "finished")
		})
	})
	c := httpsClient(t, m.CAFile)
	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Get(m.WebhookURL() + "/slow")
		if err != nil {
			done <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{code: resp.StatusCode, body: string(b)}
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()

	// New connections are refused while the request is in flight.
	addr := m.webhookLn.Addr().String()
	testutil.Eventually(t, 5*time.Second, "the listener to refuse connections during shutdown", func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		conn.Close()
		return false
	})
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the request in flight finished", err)
	default:
	}
	close(release)
	r := <-done
	if r.err != nil || r.code != 200 || r.body != "finished" {
		t.Fatalf("request in flight: %+v", r)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestShutdownTimeoutBoundsTheWait(t *testing.T) {
	started := make(chan struct{})
	cfg := testConfig(t, pgtest.URL(t))
	cfg.ShutdownTimeout = 300 * time.Millisecond
	m := startMain(t, cfg, func(m *Main) {
		m.WebhookMux.HandleFunc("/stuck", func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-r.Context().Done()
		})
	})
	c := httpsClient(t, m.CAFile)
	go func() {
		if resp, err := c.Get(m.WebhookURL() + "/stuck"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	begin := time.Now()
	err := m.Close()
	if err == nil {
		t.Fatal("Close reported success with a request still stuck")
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("Close took %s with a 300ms shutdown timeout", took)
	}
}
