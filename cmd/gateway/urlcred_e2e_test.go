package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// syncBuffer is a bytes.Buffer that the gateway's goroutines may write to
// at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rawCollector keeps every OTLP export body as it arrived.
type rawCollector struct{ syncBuffer }

func (c *rawCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	_, _ = c.Write(b)
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// Issue 21 §7: a cluster with a managed control plane authenticates by the
// secret in its webhook URL, issued through the admin API; a wrong, unknown
// or revoked secret is 401; and the secret appears in none of what the
// gateway writes: its log (at debug, with the decision log on), /metrics,
// the spans it exports, or the decision rows.
func TestURLCredentialAuthenticatesAndIsNeverWritten(t *testing.T) {
	dbURL := pgtest.URL(t)
	col := &rawCollector{}
	otlp := httptest.NewServer(col)
	defer otlp.Close()
	logs := &syncBuffer{}
	cfg := testConfig(t, dbURL)
	cfg.OTLPEndpoint, cfg.LogLevel, cfg.DecisionLog = otlp.URL, "debug", true
	m := startMain(t, cfg, func(m *Main) { m.LogOutput = logs })
	e := &e2e{t: t, m: m, client: webhookClient(t, m, nil)}
	ctx := context.Background()

	tenant, err := m.Tenancy.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	applyAll(t, m, tenant.ID, e2ePolicies)
	op, err := adminauth.NewStore(m.Pool).Bootstrap(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	admin := httpsClient(t, m.CAFile)
	call := func(method, path string, body any, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, m.AdminURL()+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+op)
		req.Header.Set("Content-Type", "application/json")
		resp, err := admin.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	var created apiv1.ClusterCreated
	call("POST", "/api/v1/tenants/acme/clusters", apiv1.ClusterCreate{Name: "eks",
		Credential: &apiv1.CredentialCreate{Type: apiv1.AuthURL}}, &created)
	secret := created.Credential.URLSecret
	if secret == "" || !strings.Contains(created.Credential.Artifacts.Webhooks, m.WebhookURL()+"/t/acme/k/"+secret+"/validate") {
		t.Fatalf("issued %+v", created.Credential)
	}

	// post sends a review to a URL of the webhooks.yaml shape, with no
	// other credential, in a sampled trace.
	post := func(path, uid, body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, m.WebhookURL()+path+"?timeout=5s", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	validate := "/t/acme/k/" + secret + "/validate"
	testutil.Eventually(t, 5*time.Second, "the URL credential to be accepted", func() bool {
		return post(validate, "probe", podReview("admission.k8s.io/v1", "probe", "default", goodPod, false)) == 200
	})
	other := tenancy.URLSecretPrefix + strings.Repeat("b", 52)
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"allowed", validate, podReview("admission.k8s.io/v1", "ok", "default", goodPod, false), 200},
		{"denied", validate, podReview("admission.k8s.io/v1", "denied", "default", noTeamPod, false), 200},
		{"mutate", "/t/acme/k/" + secret + "/mutate", podReview("admission.k8s.io/v1", "mut", "default", goodPod, false), 200},
		{"bad body", validate, `{"kind":`, 400},
		{"wrong secret", "/t/acme/k/" + secret[:len(secret)-1] + "x/validate", podReview("admission.k8s.io/v1", "w", "default", goodPod, false), 401},
		{"unknown secret", "/t/acme/k/" + other + "/validate", podReview("admission.k8s.io/v1", "u", "default", goodPod, false), 401},
		{"another tenant's path", "/t/globex/k/" + secret + "/validate", podReview("admission.k8s.io/v1", "g", "default", goodPod, false), 403},
	} {
		if got := post(tc.path, tc.name, tc.body); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}

	call("DELETE", fmt.Sprintf("/api/v1/tenants/acme/clusters/eks/credentials/%d", created.Credential.Credential.ID), nil, nil)
	testutil.Eventually(t, 5*time.Second, "the revoked URL credential to be refused", func() bool {
		return post(validate, "revoked", podReview("admission.k8s.io/v1", "revoked", "default", goodPod, false)) == 401
	})

	resp, err := http.Get(m.MetricsURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := m.Close(); err != nil { // flushes spans and decisions
		t.Fatalf("Close: %v", err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var rows string
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(string_agg(to_jsonb(d)::text, E'\n'), '') FROM decisions d`).Scan(&n, &rows); err != nil {
		t.Fatal(err)
	}
	var audit string
	if err := pool.QueryRow(ctx, `SELECT coalesce(string_agg(to_jsonb(a)::text, E'\n'), '') FROM admin_audit_log a`).Scan(&audit); err != nil {
		t.Fatal(err)
	}

	// What was captured must be there, or finding nothing proves nothing.
	for _, tc := range []struct {
		name, text, want string
	}{
		{"log", logs.String(), `"uid":"denied"`},
		{"metrics", string(metrics), `portcullis_webhook_authentication_failures_total{reason="unknown URL secret"}`},
		{"traces", col.String(), "/t/{tenant}/k/{secret}/validate"},
		{"decision rows", rows, `"uid": "denied"`},
		{"audit log", audit, `"url"`},
	} {
		if !strings.Contains(tc.text, tc.want) {
			t.Errorf("%s: %q not captured, so the search below proves nothing", tc.name, tc.want)
		}
		for _, s := range []string{secret, strings.TrimPrefix(secret, tenancy.URLSecretPrefix), other} {
			if strings.Contains(tc.text, s) {
				t.Errorf("%s holds a URL secret", tc.name)
			}
		}
	}
	if n < 4 {
		t.Errorf("%d decision rows, want the 4 authenticated requests and more", n)
	}
}

// `admin cluster create --auth url` writes webhooks.yaml only, privately,
// with URLs that the gateway authenticates; a rotated secret replaces it.
func TestCLIClusterCreateAuthURL(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	a := operatorCLI(t, e)
	a.ok("tenant", "create", "acme")
	out := a.ok("cluster", "create", "eks", "--tenant", "acme", "--auth", "url", "--out", "eks")
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "credential 1 (url)") || !strings.Contains(flat, "needs no AdmissionConfiguration and no kubeconfig") {
		t.Fatalf("cluster create --auth url:\n%s", out)
	}
	for _, name := range []string{"kubeconfig.yaml", "admission-configuration.yaml"} {
		if _, err := os.Stat(filepath.Join("eks", name)); !os.IsNotExist(err) {
			t.Errorf("eks/%s written for a url credential (%v)", name, err)
		}
	}
	st, err := os.Stat(filepath.Join("eks", "webhooks.yaml"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("eks/webhooks.yaml: %v %v, want mode 0600", st, err)
	}
	hookURL := func(dir string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "webhooks.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`url: (https://\S+/t/acme/k/pcuk_[a-z2-7]{52}/validate)\n`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no validate URL with a secret in %s/webhooks.yaml:\n%s", dir, b)
		}
		return strings.TrimPrefix(string(m[1]), e.m.WebhookURL())
	}
	first := hookURL("eks")
	accepted := func(path string) int {
		code, _ := e.post(e.client, path, "", "application/json", podReview("admission.k8s.io/v1", "p", "default", goodPod, false))
		return code
	}
	testutil.Eventually(t, 5*time.Second, "the webhook URL to authenticate", func() bool { return accepted(first) == 200 })

	out = a.ok("credential", "rotate", "1", "--tenant", "acme", "--cluster", "eks", "--grace", "0s", "--out", "eks-2")
	if !strings.Contains(out, "url secret: pcuk_") {
		t.Fatalf("credential rotate of a url credential:\n%s", out)
	}
	second := hookURL("eks-2")
	testutil.Eventually(t, 5*time.Second, "the rotated URLs to swap", func() bool {
		return accepted(second) == 200 && accepted(first) == 401
	})
	if out := a.ok("credential", "list", "--tenant", "acme", "--cluster", "eks"); strings.Contains(out, "pcuk_") {
		t.Fatalf("credential list shows a URL secret:\n%s", out)
	}
}
