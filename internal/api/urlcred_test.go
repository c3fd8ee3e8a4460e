package api

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// Issue 21 §7: `--auth url` issues a secret carried in the webhook URLs'
// path, for managed control planes. The answer has no kubeconfig and no
// AdmissionConfiguration, only webhooks whose URLs hold the secret; it is
// rotated and revoked like the other kinds, and it appears nowhere else:
// not in the list, the audit log or the server's log.
func TestURLCredentialRoutes(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	e.s.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	auth := tenancy.NewAuthenticator(e.pool, tenancy.AuthOptions{})
	byURL := func(secret string) int {
		t.Helper()
		if err := auth.Load(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := auth.Authenticate(httptest.NewRequest("POST", "/t/a/k/"+secret+"/validate", nil))
		if err == nil {
			return 200
		}
		return fault.HTTPStatus(err)
	}

	var created apiv1.ClusterCreated
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "eks",
		Credential: &apiv1.CredentialCreate{Type: apiv1.AuthURL}}, 201, &created)
	v1 := created.Credential
	if v1 == nil || v1.Credential.Type != "url" || !strings.HasPrefix(v1.URLSecret, tenancy.URLSecretPrefix) ||
		v1.Token != "" || v1.Password != "" {
		t.Fatalf("cluster create --auth url = %+v", created)
	}
	art := v1.Artifacts
	if art.Kubeconfig != "" || art.AdmissionConfiguration != "" || !art.WebhooksHoldSecret ||
		!strings.Contains(art.Webhooks, "url: https://gateway.example:8443/t/a/k/"+v1.URLSecret+"/validate") ||
		!strings.Contains(art.Webhooks, "url: https://gateway.example:8443/t/a/k/"+v1.URLSecret+"/mutate") ||
		!strings.Contains(art.Webhooks, "caBundle: ") {
		t.Fatalf("artifacts of a url credential:\n%+v", art)
	}
	if got := byURL(v1.URLSecret); got != 200 {
		t.Fatalf("the issued URL authenticates: %d", got)
	}

	creds := "/api/v1/tenants/a/clusters/eks/credentials"
	var v2 apiv1.CredentialIssued
	e.doJSON(e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, v1.Credential.ID),
		apiv1.CredentialRotate{Grace: "0s", WebhookURL: "https://gw.other/pc"}, 201, &v2)
	if v2.Credential.Type != "url" || v2.URLSecret == "" || v2.URLSecret == v1.URLSecret ||
		!strings.Contains(v2.Artifacts.Webhooks, "url: https://gw.other/pc/t/a/k/"+v2.URLSecret+"/validate") ||
		strings.Contains(v2.Artifacts.Webhooks, tenancy.URLSecretPrefix+strings.Repeat("a", 52)) {
		t.Fatalf("rotated = %+v", v2)
	}
	if got := byURL(v1.URLSecret); got != 401 {
		t.Fatalf("the rotated-out URL: %d, want 401", got)
	}
	if got := byURL(v2.URLSecret); got != 200 {
		t.Fatalf("the rotated-in URL: %d", got)
	}
	e.doJSON(e.adminA, "DELETE", fmt.Sprintf("%s/%d", creds, v2.Credential.ID), nil, 200, nil)
	if got := byURL(v2.URLSecret); got != 401 {
		t.Fatalf("the revoked URL: %d, want 401", got)
	}

	var v3 apiv1.CredentialIssued
	e.doJSON(e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "url", ExpiresIn: "1h"}, 201, &v3)
	e.run(t, []apiCase{
		{"CSR on a url credential", e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "url", CSR: newCSR(t)}, 422, "csr: ", "csr"},
	})

	for _, path := range []string{creds, "/api/v1/audit", "/api/v1/tenants/a/audit"} {
		code, raw := e.do(e.operator, "GET", path, nil)
		if code != 200 {
			t.Fatalf("GET %s = %d", path, code)
		}
		for _, s := range []string{v1.URLSecret, v2.URLSecret, v3.URLSecret} {
			if strings.Contains(string(raw), s) {
				t.Errorf("GET %s holds a URL secret", path)
			}
		}
	}
	for _, s := range []string{v1.URLSecret, v2.URLSecret, v3.URLSecret} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the server's log holds a URL secret:\n%s", logs.String())
		}
	}
}
