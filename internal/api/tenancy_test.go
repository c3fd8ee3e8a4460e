package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// apiCase is one request and the answer it must get. For an error, msg is
// a substring of the Status message and cause, when set, a field that
// details.causes must name.
type apiCase struct {
	name         string
	token        string
	method, path string
	body         any
	code         int
	msg          string
	cause        string
}

// run sends each case in order; cases may depend on earlier ones.
func (e *env) run(t *testing.T, cases []apiCase) {
	t.Helper()
	for _, tc := range cases {
		code, raw := e.do(tc.token, tc.method, tc.path, tc.body)
		if code != tc.code {
			t.Errorf("%s: %s %s = %d %s, want %d", tc.name, tc.method, tc.path, code, raw, tc.code)
			continue
		}
		if code < 400 {
			continue
		}
		stCode, _, msg, causes := statusOf(t, raw)
		if int(stCode) != code {
			t.Errorf("%s: Status code %d in a %d answer", tc.name, stCode, code)
		}
		if !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: message %q, want it to contain %q", tc.name, msg, tc.msg)
		}
		if tc.cause != "" && !slices.ContainsFunc(causes, func(c string) bool { return strings.HasPrefix(c, tc.cause+": ") }) {
			t.Errorf("%s: causes %q, want one for field %q", tc.name, causes, tc.cause)
		}
	}
}

// sameAnswer checks that two answers have the same status and message: an
// object the caller may not see must look exactly like an absent one.
func sameAnswer(t *testing.T, what string, code1 int, raw1 []byte, code2 int, raw2 []byte) {
	t.Helper()
	_, _, m1, _ := statusOf(t, raw1)
	_, _, m2, _ := statusOf(t, raw2)
	if code1 != http.StatusNotFound || code1 != code2 || m1 != m2 {
		t.Errorf("%s: %d %q, and for an absent one %d %q; want the same 404", what, code1, m1, code2, m2)
	}
}

func TestTenantRoutes(t *testing.T) {
	e := newEnv(t)
	e.run(t, []apiCase{
		{"create", e.operator, "POST", "/api/v1/tenants", apiv1.TenantCreate{Name: "c", DisplayName: "C"}, 201, "", ""},
		{"duplicate", e.operator, "POST", "/api/v1/tenants", apiv1.TenantCreate{Name: "c"}, 409, `tenant "c" already exists`, ""},
		{"invalid name", e.operator, "POST", "/api/v1/tenants", apiv1.TenantCreate{Name: "Bad_Name"}, 422, "name: ", "name"},
		{"empty name", e.operator, "POST", "/api/v1/tenants", `{}`, 422, "name: ", "name"},
		{"bad JSON", e.operator, "POST", "/api/v1/tenants", `{"name":`, 400, "invalid JSON body", ""},
		{"unknown field", e.operator, "POST", "/api/v1/tenants", `{"name":"d","dispayName":"D"}`, 400, `unknown field "dispayName"`, ""},
		{"no body", e.operator, "POST", "/api/v1/tenants", nil, 400, "a JSON request body is required", ""},
		{"two values", e.operator, "POST", "/api/v1/tenants", `{"name":"d"} {}`, 400, "more than one JSON value", ""},
		{"tenant admin creates", e.adminA, "POST", "/api/v1/tenants", apiv1.TenantCreate{Name: "d"}, 403, "operator token", ""},
		{"viewer gets own", e.viewerA, "GET", "/api/v1/tenants/a", nil, 200, "", ""},
		{"admin gets other", e.adminA, "GET", "/api/v1/tenants/b", nil, 404, `tenant "b" not found`, ""},
		{"operator gets absent", e.operator, "GET", "/api/v1/tenants/nope", nil, 404, `tenant "nope" not found`, ""},
		{"tenant admin deletes", e.adminA, "DELETE", "/api/v1/tenants/a", nil, 403, "operator token", ""},
		{"delete absent", e.operator, "DELETE", "/api/v1/tenants/nope", nil, 404, `tenant "nope" not found`, ""},
		{"delete", e.operator, "DELETE", "/api/v1/tenants/c", nil, 204, "", ""},
		{"deleted is gone", e.operator, "GET", "/api/v1/tenants/c", nil, 404, `tenant "c" not found`, ""},
		{"bad limit", e.operator, "GET", "/api/v1/tenants?limit=0", nil, 422, "limit", "limit"},
		{"bad cursor", e.operator, "GET", "/api/v1/tenants?continue=!!", nil, 422, "continue", "continue"},
	})

	names := func(token, query string) ([]string, string) {
		var l apiv1.List[apiv1.Tenant]
		e.doJSON(token, "GET", "/api/v1/tenants"+query, nil, 200, &l)
		var out []string
		for _, t := range l.Items {
			out = append(out, t.Name)
		}
		return out, l.Continue
	}
	if got, _ := names(e.operator, ""); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("operator lists %q", got)
	}
	for _, tok := range []string{e.adminA, e.viewerA} {
		if got, _ := names(tok, ""); !slices.Equal(got, []string{"a"}) {
			t.Errorf("a tenant token lists %q, want only its own tenant", got)
		}
	}
	first, cont := names(e.operator, "?limit=1")
	second, end := names(e.operator, "?limit=1&continue="+cont)
	if !slices.Equal(first, []string{"a"}) || !slices.Equal(second, []string{"b"}) || end != "" {
		t.Errorf("pages %q (%q), %q (%q)", first, cont, second, end)
	}

	var got apiv1.Tenant
	e.doJSON(e.viewerA, "GET", "/api/v1/tenants/a", nil, 200, &got)
	if got.Name != "a" || got.DisplayName != "Tenant A" || got.CreatedAt.IsZero() {
		t.Errorf("tenant = %+v", got)
	}
	// The wire type exposes no internal id.
	_, raw := e.do(e.viewerA, "GET", "/api/v1/tenants/a", nil)
	if strings.Contains(string(raw), `"id"`) {
		t.Errorf("tenant JSON exposes an id: %s", raw)
	}

	// A deleted tenant's tokens stop working with it.
	e.doJSON(e.operator, "POST", "/api/v1/tenants", apiv1.TenantCreate{Name: "gone"}, 201, nil)
	var tok apiv1.TokenIssued
	e.doJSON(e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "g", Role: "admin", Tenant: "gone"}, 201, &tok)
	e.doJSON(e.operator, "DELETE", "/api/v1/tenants/gone", nil, 204, nil)
	if code, raw := e.do(tok.Secret, "GET", "/api/v1/whoami", nil); code != 401 {
		t.Errorf("a deleted tenant's token: %d %s", code, raw)
	}
}

func TestClusterRoutes(t *testing.T) {
	e := newEnv(t)
	const a = "/api/v1/tenants/a/clusters"
	e.run(t, []apiCase{
		{"create", e.adminA, "POST", a, apiv1.ClusterCreate{Name: "prod", Labels: map[string]string{"env": "prod", "region": "eu"}}, 201, "", ""},
		{"create another", e.operator, "POST", a, apiv1.ClusterCreate{Name: "dev", Labels: map[string]string{"env": "dev"}}, 201, "", ""},
		{"create bare", e.adminA, "POST", a, apiv1.ClusterCreate{Name: "edge"}, 201, "", ""},
		{"duplicate", e.adminA, "POST", a, apiv1.ClusterCreate{Name: "prod"}, 409, `cluster "prod" already exists`, ""},
		{"invalid name", e.adminA, "POST", a, apiv1.ClusterCreate{Name: "Prod!"}, 422, "name: ", "name"},
		{"invalid label key", e.adminA, "POST", a, apiv1.ClusterCreate{Name: "x", Labels: map[string]string{"bad key": "v"}}, 422, `label key "bad key"`, "labels"},
		{"invalid label value", e.adminA, "POST", a, apiv1.ClusterCreate{Name: "x", Labels: map[string]string{"k": "no spaces"}}, 422, `label "k"`, "labels"},
		{"unknown field", e.adminA, "POST", a, `{"name":"x","label":{}}`, 400, `unknown field "label"`, ""},
		{"bad JSON", e.adminA, "POST", a, `[`, 400, "invalid JSON body", ""},
		{"viewer creates", e.viewerA, "POST", a, apiv1.ClusterCreate{Name: "x"}, 403, "needs an admin token", ""},
		{"bad credential type", e.adminA, "POST", a, `{"name":"x","credential":{"type":"kerberos"}}`, 422, "credential.type", "credential.type"},
		{"bad credential expiry", e.adminA, "POST", a, `{"name":"x","credential":{"expiresIn":"soon"}}`, 422, "credential.expiresIn", "credential.expiresIn"},
		{"bad webhook URL", e.adminA, "POST", a, `{"name":"x","credential":{"webhookURL":"http://gw"}}`, 422, "https", "credential.webhookURL"},
		{"bad credential CSR", e.adminA, "POST", a, `{"name":"x","credential":{"type":"certificate","csr":"junk"}}`, 422, "CSR", "credential.csr"},
		// None of the refused creates left a cluster behind.
		{"refused creates left nothing", e.adminA, "GET", a + "/x", nil, 404, `cluster "x" not found in tenant "a"`, ""},
		{"get", e.viewerA, "GET", a + "/prod", nil, 200, "", ""},
		{"get absent", e.viewerA, "GET", a + "/nope", nil, 404, `cluster "nope" not found in tenant "a"`, ""},
		{"bad selector", e.viewerA, "GET", a + "?labelSelector=env%3D%3D%3D", nil, 422, "labelSelector", "labelSelector"},
		{"patch", e.adminA, "PATCH", a + "/prod", apiv1.ClusterUpdate{Labels: map[string]string{"env": "production"}}, 200, "", ""},
		{"patch without labels", e.adminA, "PATCH", a + "/prod", `{}`, 422, "labels: is required", "labels"},
		{"patch bad label", e.adminA, "PATCH", a + "/prod", apiv1.ClusterUpdate{Labels: map[string]string{"-x": "y"}}, 422, "label key", "labels"},
		{"patch unknown field", e.adminA, "PATCH", a + "/prod", `{"labels":{},"name":"p"}`, 400, `unknown field "name"`, ""},
		{"patch absent", e.adminA, "PATCH", a + "/nope", apiv1.ClusterUpdate{Labels: map[string]string{}}, 404, `cluster "nope" not found`, ""},
		{"viewer patches", e.viewerA, "PATCH", a + "/prod", apiv1.ClusterUpdate{Labels: map[string]string{}}, 403, "needs an admin token", ""},
		{"viewer deletes", e.viewerA, "DELETE", a + "/edge", nil, 403, "needs an admin token", ""},
		{"delete", e.adminA, "DELETE", a + "/edge", nil, 204, "", ""},
		{"delete again", e.adminA, "DELETE", a + "/edge", nil, 404, `cluster "edge" not found`, ""},
	})

	var cl apiv1.Cluster
	e.doJSON(e.viewerA, "GET", a+"/prod", nil, 200, &cl)
	if cl.Name != "prod" || cl.Tenant != "a" || len(cl.Labels) != 1 || cl.Labels["env"] != "production" {
		t.Errorf("after the patch: %+v", cl)
	}

	list := func(query string) []string {
		var l apiv1.List[apiv1.Cluster]
		e.doJSON(e.viewerA, "GET", a+query, nil, 200, &l)
		var out []string
		for _, c := range l.Items {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"dev", "prod"}},
		{"?labelSelector=env%3Dproduction", []string{"prod"}},
		{"?labelSelector=env+in+(dev,production)", []string{"dev", "prod"}},
		{"?labelSelector=env!%3Ddev", []string{"prod"}},
		{"?labelSelector=region", nil},
		{"?limit=1", []string{"dev"}},
	} {
		if got := list(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("list%s = %q, want %q", tc.query, got, tc.want)
		}
	}

	// Tenant b's cluster of the same name is invisible from tenant a, and
	// tenant a's is invisible to b's admin: both look like absent ones.
	c1, r1 := e.do(e.adminA, "GET", "/api/v1/tenants/a/clusters/shared", nil)
	e.doJSON(e.adminB, "POST", "/api/v1/tenants/b/clusters", apiv1.ClusterCreate{Name: "shared"}, 201, nil)
	c2, r2 := e.do(e.adminA, "GET", "/api/v1/tenants/a/clusters/shared", nil)
	sameAnswer(t, "tenant b's cluster seen from a", c2, r2, c1, r1)
	c3, r3 := e.do(e.adminB, "GET", "/api/v1/tenants/a/clusters/prod", nil)
	c4, r4 := e.do(e.adminB, "GET", "/api/v1/tenants/nope/clusters/prod", nil)
	_, _, m3, _ := statusOf(t, r3)
	_, _, m4, _ := statusOf(t, r4)
	if c3 != 404 || c3 != c4 || m3 != strings.Replace(m4, `"nope"`, `"a"`, 1) {
		t.Errorf("tenant a's cluster seen by b's admin: %d %q; an absent tenant: %d %q", c3, m3, c4, m4)
	}
	var bl apiv1.List[apiv1.Cluster]
	e.doJSON(e.adminB, "GET", "/api/v1/tenants/b/clusters", nil, 200, &bl)
	if len(bl.Items) != 1 || bl.Items[0].Name != "shared" {
		t.Errorf("tenant b lists %+v", bl.Items)
	}
}

// newCSR returns a PEM certificate signing request with a fresh key.
func newCSR(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "apiserver"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func TestCredentialRoutes(t *testing.T) {
	e := newEnv(t)
	const a = "/api/v1/tenants/a/clusters"
	var created apiv1.ClusterCreated
	e.doJSON(e.adminA, "POST", a, apiv1.ClusterCreate{Name: "prod", Credential: &apiv1.CredentialCreate{Description: "first"}}, 201, &created)
	first := created.Credential
	if first == nil || first.Credential.Type != "token" || !strings.HasPrefix(first.Token, tenancy.TokenPrefix) ||
		first.Credential.Description != "first" || !first.Credential.Active || created.Cluster.Name != "prod" {
		t.Fatalf("cluster create with a credential = %+v", created)
	}
	art := first.Artifacts
	if !strings.Contains(art.Kubeconfig, first.Token) || !strings.Contains(art.Kubeconfig, "gateway.example:8443") {
		t.Errorf("kubeconfig:\n%s", art.Kubeconfig)
	}
	if !strings.Contains(art.AdmissionConfiguration, "kubeConfigFile: "+apiv1.KubeconfigPath) {
		t.Errorf("admission configuration:\n%s", art.AdmissionConfiguration)
	}
	if !strings.Contains(art.Webhooks, "url: https://gateway.example:8443/t/a/validate") ||
		!strings.Contains(art.Webhooks, "caBundle: "+base64.StdEncoding.EncodeToString([]byte(testCABundle))) {
		t.Errorf("webhooks:\n%s", art.Webhooks)
	}

	creds := a + "/prod/credentials"
	var basic, cert, csr, own apiv1.CredentialIssued
	e.doJSON(e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "basic", ExpiresIn: "720h"}, 201, &basic)
	if basic.Username == "" || basic.Password == "" || basic.Credential.ExpiresAt == nil ||
		time.Until(*basic.Credential.ExpiresAt) < 719*time.Hour || !strings.Contains(basic.Artifacts.Kubeconfig, basic.Password) {
		t.Errorf("basic = %+v", basic)
	}
	e.doJSON(e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "certificate"}, 201, &cert)
	if !strings.Contains(cert.CertificatePEM, "BEGIN CERTIFICATE") || !strings.Contains(cert.KeyPEM, "PRIVATE KEY") ||
		cert.Credential.Fingerprint == "" || !strings.Contains(cert.Artifacts.Kubeconfig, "client-key-data") {
		t.Errorf("certificate = %+v", cert)
	}
	e.doJSON(e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "certificate", CSR: newCSR(t)}, 201, &csr)
	if csr.KeyPEM != "" || csr.Artifacts.Kubeconfig != "" || csr.CertificatePEM == "" || csr.Artifacts.Webhooks == "" {
		t.Errorf("a certificate from a CSR: key %q, kubeconfig %q", csr.KeyPEM, csr.Artifacts.Kubeconfig)
	}
	e.doJSON(e.operator, "POST", creds, apiv1.CredentialCreate{WebhookURL: "https://gw.other:9443/prefix"}, 201, &own)
	if !strings.Contains(own.Artifacts.Webhooks, "url: https://gw.other:9443/prefix/t/a/validate") ||
		!strings.Contains(own.Artifacts.Kubeconfig, "gw.other:9443") {
		t.Errorf("with a webhook URL: %+v", own.Artifacts)
	}

	// Tenant b's credential, to be looked for through tenant a.
	var bc apiv1.ClusterCreated
	e.doJSON(e.adminB, "POST", "/api/v1/tenants/b/clusters", apiv1.ClusterCreate{Name: "prod", Credential: &apiv1.CredentialCreate{}}, 201, &bc)
	bID := bc.Credential.Credential.ID
	e.doJSON(e.adminA, "POST", a, apiv1.ClusterCreate{Name: "dev"}, 201, nil)

	e.run(t, []apiCase{
		{"bad type", e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "kerberos"}, 422, "type: ", "type"},
		{"CSR on a token", e.adminA, "POST", creds, apiv1.CredentialCreate{CSR: newCSR(t)}, 422, "csr: ", "csr"},
		{"bad CSR", e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "certificate", CSR: "junk"}, 422, "CSR", "csr"},
		{"bad expiry", e.adminA, "POST", creds, apiv1.CredentialCreate{ExpiresIn: "1 week"}, 422, "Go duration", "expiresIn"},
		{"negative expiry", e.adminA, "POST", creds, apiv1.CredentialCreate{ExpiresIn: "-1h"}, 422, "positive", "expiresIn"},
		{"http webhook", e.adminA, "POST", creds, apiv1.CredentialCreate{WebhookURL: "http://gw"}, 422, "https", "webhookURL"},
		{"unknown field", e.adminA, "POST", creds, `{"typ":"basic"}`, 400, `unknown field "typ"`, ""},
		{"bad JSON", e.adminA, "POST", creds, `{`, 400, "invalid JSON body", ""},
		{"viewer creates", e.viewerA, "POST", creds, apiv1.CredentialCreate{}, 403, "needs an admin token", ""},
		{"absent cluster", e.adminA, "POST", a + "/nope/credentials", apiv1.CredentialCreate{}, 404, `cluster "nope" not found`, ""},
		{"list absent cluster", e.viewerA, "GET", a + "/nope/credentials", nil, 404, `cluster "nope" not found`, ""},
		{"revoke bad id", e.adminA, "DELETE", creds + "/abc", nil, 422, "id: ", "id"},
		{"revoke absent", e.adminA, "DELETE", creds + "/999999", nil, 404, `credential 999999 not found in cluster "prod"`, ""},
		{"revoke through another cluster", e.adminA, "DELETE", fmt.Sprintf("%s/dev/credentials/%d", a, basic.Credential.ID), nil,
			404, fmt.Sprintf(`credential %d not found in cluster "dev"`, basic.Credential.ID), ""},
		{"viewer revokes", e.viewerA, "DELETE", fmt.Sprintf("%s/%d", creds, basic.Credential.ID), nil, 403, "needs an admin token", ""},
		{"revoke", e.adminA, "DELETE", fmt.Sprintf("%s/%d", creds, basic.Credential.ID), nil, 200, "", ""},
		{"revoke again", e.adminA, "DELETE", fmt.Sprintf("%s/%d", creds, basic.Credential.ID), nil, 200, "", ""},
		{"rotate revoked", e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, basic.Credential.ID), apiv1.CredentialRotate{}, 409, "is revoked", ""},
		{"rotate bad grace", e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, first.Credential.ID), apiv1.CredentialRotate{Grace: "a day"}, 422, "Go duration", "grace"},
		{"rotate negative grace", e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, first.Credential.ID), apiv1.CredentialRotate{Grace: "-1s"}, 422, "negative", "grace"},
		{"rotate bad expiry", e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, first.Credential.ID), apiv1.CredentialRotate{ExpiresIn: "0s"}, 422, "positive", "expiresIn"},
		{"rotate unknown field", e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, first.Credential.ID), `{"gracePeriod":"1h"}`, 400, `unknown field "gracePeriod"`, ""},
		{"rotate absent", e.adminA, "POST", creds + "/999999/rotate", apiv1.CredentialRotate{}, 404, "credential 999999 not found", ""},
		{"viewer rotates", e.viewerA, "POST", fmt.Sprintf("%s/%d/rotate", creds, first.Credential.ID), apiv1.CredentialRotate{}, 403, "needs an admin token", ""},
		{"artifacts", e.viewerA, "GET", a + "/prod/artifacts", nil, 200, "", ""},
		{"artifacts bad URL", e.viewerA, "GET", a + "/prod/artifacts?webhookURL=https://", nil, 422, "host", "webhookURL"},
		{"artifacts absent cluster", e.viewerA, "GET", a + "/nope/artifacts", nil, 404, `cluster "nope" not found`, ""},
	})

	// Tenant b's credential through tenant a's cluster looks exactly like
	// an id that does not exist: compare with the same id once b's
	// credential is gone.
	bPath := fmt.Sprintf("%s/%d", creds, bID)
	for _, m := range []string{"DELETE", "POST"} {
		p, body := bPath, any(nil)
		if m == "POST" {
			p, body = bPath+"/rotate", apiv1.CredentialRotate{}
		}
		c1, r1 := e.do(e.adminA, m, p, body)
		defer func() {
			c2, r2 := e.do(e.adminA, m, p, body)
			sameAnswer(t, m+" of tenant b's credential through tenant a", c1, r1, c2, r2)
		}()
	}
	e.doJSON(e.adminB, "DELETE", "/api/v1/tenants/b/clusters/prod", nil, 204, nil)

	var arts apiv1.Artifacts
	e.doJSON(e.viewerA, "GET", a+"/prod/artifacts?webhookURL=https://gw.example", nil, 200, &arts)
	if arts.Kubeconfig != "" || !strings.Contains(arts.Webhooks, "https://gw.example/t/a/validate") ||
		!strings.Contains(arts.AdmissionConfiguration, apiv1.KubeconfigPath) {
		t.Errorf("artifacts = %+v", arts)
	}

	// The list has every credential, the revoked one inactive, and never
	// a secret.
	code, raw := e.do(e.viewerA, "GET", creds, nil)
	if code != 200 {
		t.Fatalf("list = %d %s", code, raw)
	}
	for _, secret := range []string{first.Token, basic.Password, cert.KeyPEM, own.Token, `"token":`, `"password":`, `"keyPEM":`} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the credential list holds a secret %q", secret)
		}
	}
	var l apiv1.List[apiv1.Credential]
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, c := range l.Items {
		ids = append(ids, c.ID)
		if (c.ID == basic.Credential.ID) == c.Active || (c.ID == basic.Credential.ID) != (c.RevokedAt != nil) {
			t.Errorf("credential %d: active %v, revoked at %v", c.ID, c.Active, c.RevokedAt)
		}
	}
	want := []int64{first.Credential.ID, basic.Credential.ID, cert.Credential.ID, csr.Credential.ID, own.Credential.ID}
	if !slices.Equal(ids, want) {
		t.Errorf("list ids %v, want %v", ids, want)
	}
	var live apiv1.List[apiv1.Credential]
	e.doJSON(e.viewerA, "GET", creds+"?activeOnly=true", nil, 200, &live)
	if len(live.Items) != 4 || slices.ContainsFunc(live.Items, func(c apiv1.Credential) bool { return c.ID == basic.Credential.ID }) {
		t.Errorf("activeOnly lists %+v", live.Items)
	}
	e.run(t, []apiCase{{"bad activeOnly", e.viewerA, "GET", creds + "?activeOnly=yes", nil, 422, "true or false", "activeOnly"}})
	var p1, p2 apiv1.List[apiv1.Credential]
	e.doJSON(e.viewerA, "GET", creds+"?limit=3", nil, 200, &p1)
	e.doJSON(e.viewerA, "GET", creds+"?limit=3&continue="+p1.Continue, nil, 200, &p2)
	if len(p1.Items) != 3 || len(p2.Items) != 2 || p2.Items[0].ID != csr.Credential.ID || p2.Continue != "" {
		t.Errorf("pages: %d items (%q), then %d (%q)", len(p1.Items), p1.Continue, len(p2.Items), p2.Continue)
	}
}

// authenticates reports whether an apiserver with this Authorization
// header gets through the webhook's authenticator for tenant a.
func authenticates(t *testing.T, a *tenancy.Authenticator, header string) bool {
	t.Helper()
	r := httptest.NewRequest("POST", "/t/a/validate", nil)
	r.Header.Set("Authorization", header)
	_, err := a.AuthenticateTenant(r, "a")
	if err != nil && fault.ErrorCode(err) != fault.Unauthenticated {
		t.Fatalf("authenticate: %v", err)
	}
	return err == nil
}

func TestCredentialRotation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// The authenticator's clock runs ahead by ahead: a test moves past a
	// grace period without waiting for it.
	var ahead atomic.Int64
	auth := tenancy.NewAuthenticator(e.pool, tenancy.AuthOptions{
		Now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	load := func() {
		t.Helper()
		if err := auth.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const creds = "/api/v1/tenants/a/clusters/prod/credentials"
	var created apiv1.ClusterCreated
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "prod",
		Credential: &apiv1.CredentialCreate{Description: "apiservers"}}, 201, &created)
	v1 := *created.Credential
	load()
	if !authenticates(t, auth, "Bearer "+v1.Token) {
		t.Fatal("the first credential does not authenticate")
	}

	// Default grace: 24 hours, and both work meanwhile.
	var v2 apiv1.CredentialIssued
	e.doJSON(e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, v1.Credential.ID), `{}`, 201, &v2)
	if v2.Credential.Type != "token" || v2.Credential.ID == v1.Credential.ID || v2.Token == "" || v2.Token == v1.Token ||
		v2.Credential.Description != "apiservers" || !strings.Contains(v2.Artifacts.Kubeconfig, v2.Token) {
		t.Fatalf("rotated = %+v", v2)
	}
	load()
	if !authenticates(t, auth, "Bearer "+v1.Token) || !authenticates(t, auth, "Bearer "+v2.Token) {
		t.Fatal("during the grace period both the old and the new token must work")
	}
	var old apiv1.Credential
	for _, c := range listCredentials(t, e, creds) {
		if c.ID == v1.Credential.ID {
			old = c
		}
	}
	if old.ExpiresAt == nil || old.RevokedAt != nil || !old.Active ||
		time.Until(*old.ExpiresAt) < 23*time.Hour || time.Until(*old.ExpiresAt) > 25*time.Hour {
		t.Errorf("the old credential after rotation: %+v", old)
	}

	// A short grace: the old one stops once it is over.
	var v3 apiv1.CredentialIssued
	e.doJSON(e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, v2.Credential.ID), apiv1.CredentialRotate{Grace: "1s", ExpiresIn: "48h"}, 201, &v3)
	if v3.Credential.ExpiresAt == nil || time.Until(*v3.Credential.ExpiresAt) < 47*time.Hour {
		t.Errorf("the new credential's expiry: %v", v3.Credential.ExpiresAt)
	}
	load()
	if !authenticates(t, auth, "Bearer "+v2.Token) || !authenticates(t, auth, "Bearer "+v3.Token) {
		t.Fatal("within a 1s grace both must work")
	}
	ahead.Store(int64(2 * time.Second))
	if authenticates(t, auth, "Bearer "+v2.Token) {
		t.Error("the old token still works after its grace period")
	}
	if !authenticates(t, auth, "Bearer "+v3.Token) {
		t.Error("the new token stopped working")
	}
	ahead.Store(0)

	// A rotation never extends the old credential: v1 keeps its 24 hours
	// and a rotation with a longer grace leaves that alone.
	e.doJSON(e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, v1.Credential.ID), apiv1.CredentialRotate{Grace: "100h"}, 201, nil)
	for _, c := range listCredentials(t, e, creds) {
		if c.ID == v1.Credential.ID && (c.ExpiresAt == nil || time.Until(*c.ExpiresAt) > 25*time.Hour) {
			t.Errorf("a rotation extended credential %d to %v", c.ID, c.ExpiresAt)
		}
	}

	// "0s" revokes at once.
	var basic, v4 apiv1.CredentialIssued
	e.doJSON(e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "basic"}, 201, &basic)
	e.doJSON(e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, basic.Credential.ID), apiv1.CredentialRotate{Grace: "0s"}, 201, &v4)
	if v4.Credential.Type != "basic" || v4.Username == basic.Username || v4.Password == "" {
		t.Fatalf("rotated basic = %+v", v4)
	}
	load()
	basicHeader := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	if authenticates(t, auth, basicHeader(basic.Username, basic.Password)) {
		t.Error("a credential rotated with grace 0s still works")
	}
	if !authenticates(t, auth, basicHeader(v4.Username, v4.Password)) {
		t.Error("the new basic credential does not work")
	}
	for _, c := range listCredentials(t, e, creds) {
		if c.ID == basic.Credential.ID && (c.RevokedAt == nil || c.Active) {
			t.Errorf("credential rotated with 0s: %+v", c)
		}
	}

	// A certificate rotates to a new certificate with a new key.
	var cert, v5 apiv1.CredentialIssued
	e.doJSON(e.adminA, "POST", creds, apiv1.CredentialCreate{Type: "certificate", CSR: newCSR(t)}, 201, &cert)
	e.doJSON(e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, cert.Credential.ID), `{}`, 201, &v5)
	if v5.Credential.Type != "certificate" || v5.KeyPEM == "" || v5.Credential.Fingerprint == cert.Credential.Fingerprint ||
		!strings.Contains(v5.Artifacts.Kubeconfig, "client-key-data") {
		t.Errorf("rotated certificate = %+v", v5.Credential)
	}
}

func listCredentials(t *testing.T, e *env, path string) []apiv1.Credential {
	t.Helper()
	var l apiv1.List[apiv1.Credential]
	e.doJSON(e.viewerA, "GET", path, nil, 200, &l)
	return l.Items
}

func TestTokenRoutes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var tokB []apiv1.Token
	var lb apiv1.List[apiv1.Token]
	e.doJSON(e.operator, "GET", "/api/v1/tokens?tenant=b", nil, 200, &lb)
	tokB = lb.Items
	if len(tokB) != 1 || tokB[0].Name != "bob" || tokB[0].Tenant != "b" || tokB[0].Role != "admin" {
		t.Fatalf("tenant b's tokens: %+v", tokB)
	}
	var root apiv1.Token
	var all apiv1.List[apiv1.Token]
	e.doJSON(e.operator, "GET", "/api/v1/tokens", nil, 200, &all)
	for _, tk := range all.Items {
		if tk.Role == "operator" {
			root = tk
		}
	}
	if len(all.Items) != 4 || root.Name != "root" {
		t.Fatalf("every token: %+v", all.Items)
	}

	e.run(t, []apiCase{
		{"operator creates operator", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "ops", Role: "operator"}, 201, "", ""},
		{"operator creates admin of b", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "bea", Role: "admin", Tenant: "b", ExpiresIn: "1h"}, 201, "", ""},
		{"admin creates viewer", e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "val", Role: "viewer", Tenant: "a"}, 201, "", ""},
		{"admin creates admin", e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "ann", Role: "admin", Tenant: "a"}, 201, "", ""},
		{"admin creates operator", e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "evil", Role: "operator"}, 403, "only an operator", ""},
		{"admin creates for another tenant", e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "evil", Role: "admin", Tenant: "b"}, 404, `tenant "b" not found`, ""},
		{"admin creates for an absent tenant", e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x", Role: "admin", Tenant: "nope"}, 404, `tenant "nope" not found`, ""},
		{"operator creates for an absent tenant", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x", Role: "admin", Tenant: "nope"}, 404, `tenant "nope" not found`, ""},
		{"viewer creates", e.viewerA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x", Role: "viewer", Tenant: "a"}, 403, "admin or operator token", ""},
		{"viewer lists", e.viewerA, "GET", "/api/v1/tokens", nil, 403, "admin or operator token", ""},
		{"viewer revokes", e.viewerA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", root.ID), nil, 403, "admin or operator token", ""},
		{"unknown role", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x", Role: "root"}, 422, "role: ", "role"},
		{"no role", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x"}, 422, "role: ", "role"},
		{"operator token with a tenant", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x", Role: "operator", Tenant: "a"}, 422, "tenant: must be empty", "tenant"},
		{"admin token without a tenant", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x", Role: "admin"}, 422, "tenant: is required", "tenant"},
		{"no name", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Role: "operator"}, 422, "name: is required", "name"},
		{"control characters", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "a\nb", Role: "operator"}, 422, "printable", "name"},
		{"bad expiry", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x", Role: "operator", ExpiresIn: "1y"}, 422, "Go duration", "expiresIn"},
		{"past expiry", e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "x", Role: "operator", ExpiresIn: "-5m"}, 422, "positive", "expiresIn"},
		{"unknown field", e.operator, "POST", "/api/v1/tokens", `{"name":"x","role":"operator","expires":"1h"}`, 400, `unknown field "expires"`, ""},
		{"bad JSON", e.operator, "POST", "/api/v1/tokens", `nope`, 400, "invalid JSON body", ""},
		{"admin lists another tenant", e.adminA, "GET", "/api/v1/tokens?tenant=b", nil, 404, `tenant "b" not found`, ""},
		{"operator lists an absent tenant", e.operator, "GET", "/api/v1/tokens?tenant=nope", nil, 404, `tenant "nope" not found`, ""},
		{"revoke bad id", e.operator, "DELETE", "/api/v1/tokens/x1", nil, 422, "id: ", "id"},
		{"revoke absent", e.operator, "DELETE", "/api/v1/tokens/999999", nil, 404, "admin token 999999 not found", ""},
		{"admin revokes an operator token", e.adminA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", root.ID), nil, 404, fmt.Sprintf("admin token %d not found", root.ID), ""},
	})

	// Tenant b's token is out of reach of a's admin, exactly as an absent one.
	c1, r1 := e.do(e.adminA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", tokB[0].ID), nil)
	c2, r2 := e.do(e.adminA, "DELETE", "/api/v1/tokens/999999", nil)
	r2 = []byte(strings.Replace(string(r2), "999999", fmt.Sprint(tokB[0].ID), 1))
	sameAnswer(t, "tenant b's token revoked by a's admin", c1, r1, c2, r2)
	if code, _ := e.do(e.adminB, "GET", "/api/v1/whoami", nil); code != 200 {
		t.Fatal("a's admin revoked b's token")
	}

	// Scoped lists.
	names := func(token, query string) []string {
		var l apiv1.List[apiv1.Token]
		e.doJSON(token, "GET", "/api/v1/tokens"+query, nil, 200, &l)
		var out []string
		for _, tk := range l.Items {
			out = append(out, tk.Name)
		}
		return out
	}
	if got := names(e.adminA, ""); !slices.Equal(got, []string{"alice", "vera", "val", "ann"}) {
		t.Errorf("a's admin lists %q", got)
	}
	if got := names(e.adminA, "?tenant=a"); !slices.Equal(got, []string{"alice", "vera", "val", "ann"}) {
		t.Errorf("a's admin lists ?tenant=a: %q", got)
	}
	if got := names(e.operator, ""); !slices.Equal(got, []string{"root", "alice", "vera", "bob", "ops", "bea", "val", "ann"}) {
		t.Errorf("the operator lists %q", got)
	}
	if got := names(e.operator, "?tenant=b"); !slices.Equal(got, []string{"bob", "bea"}) {
		t.Errorf("the operator lists ?tenant=b: %q", got)
	}
	if got := names(e.operator, "?limit=3"); !slices.Equal(got, []string{"root", "alice", "vera"}) {
		t.Errorf("first page: %q", got)
	}

	// A new token works at once, with its role and creator; the secret is
	// never listed.
	var viewer apiv1.TokenIssued
	e.doJSON(e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "temp", Role: "viewer", Tenant: "a", ExpiresIn: "10m"}, 201, &viewer)
	if !strings.HasPrefix(viewer.Secret, adminauth.Prefix) || viewer.Token.CreatedBy != "alice" || viewer.Token.Tenant != "a" ||
		viewer.Token.ExpiresAt == nil || time.Until(*viewer.Token.ExpiresAt) > 10*time.Minute {
		t.Fatalf("issued = %+v", viewer)
	}
	var who apiv1.WhoAmI
	e.doJSON(viewer.Secret, "GET", "/api/v1/whoami", nil, 200, &who)
	if who.Role != "viewer" || who.Tenant != "a" || who.Name != "temp" {
		t.Errorf("whoami = %+v", who)
	}
	if _, raw := e.do(e.operator, "GET", "/api/v1/tokens", nil); strings.Contains(string(raw), viewer.Secret) || strings.Contains(string(raw), "secret") {
		t.Error("the token list holds a secret")
	}

	// Revoked: 401 from then on, and revoking again changes nothing.
	var revoked apiv1.Token
	e.doJSON(e.adminA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", viewer.Token.ID), nil, 200, &revoked)
	if revoked.RevokedAt == nil || revoked.Name != "temp" {
		t.Errorf("revoked = %+v", revoked)
	}
	var again apiv1.Token
	e.doJSON(e.adminA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", viewer.Token.ID), nil, 200, &again)
	if again.RevokedAt == nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Errorf("revoked twice: %v then %v", revoked.RevokedAt, again.RevokedAt)
	}
	if code, _ := e.do(viewer.Secret, "GET", "/api/v1/tenants/a", nil); code != 401 {
		t.Errorf("a revoked token got %d, want 401", code)
	}
	// An operator revokes anyone's, an operator token included.
	var ops apiv1.TokenIssued
	e.doJSON(e.operator, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "ops2", Role: "operator"}, 201, &ops)
	e.doJSON(ops.Secret, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", tokB[0].ID), nil, 200, nil)
	e.doJSON(e.operator, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", ops.Token.ID), nil, 200, nil)
	for name, tok := range map[string]string{"b's admin": e.adminB, "an operator": ops.Secret} {
		if code, _ := e.do(tok, "GET", "/api/v1/whoami", nil); code != 401 {
			t.Errorf("%s's revoked token got %d, want 401", name, code)
		}
	}

	if got := names(e.operator, "?activeOnly=true&tenant=b"); !slices.Equal(got, []string{"bea"}) {
		t.Errorf("b's live tokens: %q", got)
	}
	if got := names(e.adminA, "?activeOnly=true"); !slices.Equal(got, []string{"alice", "vera", "val", "ann"}) {
		t.Errorf("a's live tokens: %q", got)
	}
	e.run(t, []apiCase{{"bad activeOnly", e.operator, "GET", "/api/v1/tokens?activeOnly=1x", nil, 422, "true or false", "activeOnly"}})

	// Expired: 401.
	past := time.Now().Add(-time.Minute)
	_, expired, err := e.s.Tokens.Create(ctx, e.tenantA.ID, "old", adminauth.RoleAdmin, &past, adminauth.Creator{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/v1/whoami", "/api/v1/tokens", "/api/v1/tenants/a/clusters"} {
		if code, _ := e.do(expired, "GET", p, nil); code != 401 {
			t.Errorf("an expired token on %s got %d, want 401", p, code)
		}
	}
}

func TestAuditLog(t *testing.T) {
	e := newEnv(t)
	// A sequence of calls by several actors.
	e.doJSON(e.operator, "POST", "/api/v1/tenants", apiv1.TenantCreate{Name: "c"}, 201, nil)
	var tok apiv1.TokenIssued
	e.doJSON(e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "ci", Role: "viewer", Tenant: "a"}, 201, &tok)
	var created apiv1.ClusterCreated
	e.doJSON(e.adminA, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "prod",
		Labels: map[string]string{"env": "prod"}, Credential: &apiv1.CredentialCreate{Type: "basic"}}, 201, &created)
	creds := "/api/v1/tenants/a/clusters/prod/credentials"
	var rotated apiv1.CredentialIssued
	e.doJSON(e.adminA, "POST", fmt.Sprintf("%s/%d/rotate", creds, created.Credential.Credential.ID), apiv1.CredentialRotate{Grace: "1h"}, 201, &rotated)
	e.doJSON(e.operator, "DELETE", fmt.Sprintf("%s/%d", creds, rotated.Credential.ID), nil, 200, nil)
	e.doJSON(e.adminA, "PATCH", "/api/v1/tenants/a/clusters/prod", apiv1.ClusterUpdate{Labels: map[string]string{"env": "staging"}}, 200, nil)
	e.doJSON(e.adminA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", tok.Token.ID), nil, 200, nil)
	e.doJSON(e.adminB, "POST", "/api/v1/tenants/b/clusters", apiv1.ClusterCreate{Name: "other"}, 201, nil)
	e.doJSON(e.adminA, "DELETE", "/api/v1/tenants/a/clusters/prod", nil, 204, nil)
	e.doJSON(e.operator, "DELETE", "/api/v1/tenants/c", nil, 204, nil)
	// Refused calls are not recorded.
	e.do(e.adminA, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "Bad!"})
	e.do(e.viewerA, "DELETE", "/api/v1/tenants/a/clusters/prod", nil)

	type row struct{ actor, tenant, action, kind, name string }
	rows := func(token, path string) ([]row, []auditlog.Entry) {
		t.Helper()
		code, raw := e.do(token, "GET", path, nil)
		if code != 200 {
			t.Fatalf("GET %s = %d %s", path, code, raw)
		}
		for _, secret := range []string{tok.Secret, created.Credential.Password, rotated.Password} {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("the audit log holds a secret: %s", raw)
			}
		}
		var l apiv1.List[auditlog.Entry]
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		var out []row
		for _, en := range l.Items {
			out = append(out, row{en.ActorName, en.Tenant, en.Action, en.Kind, en.Name})
		}
		return out, l.Items
	}
	want := []row{
		{"root", "c", "delete", "Tenant", "c"},
		{"alice", "a", "delete", "Cluster", "prod"},
		{"bob", "b", "create", "Cluster", "other"},
		{"alice", "a", "revoke", "Token", "ci"},
		{"alice", "a", "update", "Cluster", "prod"},
		{"root", "a", "revoke", "Credential", "prod"},
		{"alice", "a", "rotate", "Credential", "prod"},
		{"alice", "a", "create", "Credential", "prod"},
		{"alice", "a", "create", "Cluster", "prod"},
		{"alice", "a", "create", "Token", "ci"},
		{"root", "c", "create", "Tenant", "c"},
	}
	got, entries := rows(e.operator, "/api/v1/audit")
	if !slices.Equal(got, want) {
		t.Fatalf("audit log:\n got %v\nwant %v", got, want)
	}
	// The actor is the token's id and role; the name is only a label.
	roles := map[string]string{"root": "operator", "alice": "admin", "bob": "admin"}
	for _, en := range entries {
		if en.TokenID == 0 || en.Time.IsZero() || time.Since(en.Time) > time.Minute {
			t.Errorf("entry %+v: no token id or time", en)
		}
		if want := fmt.Sprintf("token:%d/%s", en.TokenID, roles[en.ActorName]); en.Actor != want {
			t.Errorf("entry %+v: actor %q, want %q", en, en.Actor, want)
		}
	}
	bob, err := e.s.Tokens.Authenticate(t.Context(), e.adminB)
	if err != nil {
		t.Fatal(err)
	}
	detail := func(i int, key string) any { return entries[i].Detail[key] }
	if detail(5, "id") != float64(rotated.Credential.ID) || detail(6, "id") != float64(rotated.Credential.ID) ||
		detail(6, "replaces") != float64(created.Credential.Credential.ID) || detail(6, "grace") != "1h0m0s" ||
		detail(7, "id") != float64(created.Credential.Credential.ID) || detail(7, "type") != "basic" ||
		detail(9, "role") != "viewer" || detail(9, "id") != float64(tok.Token.ID) {
		t.Errorf("details: %+v", entries)
	}

	// The tenant's log has only its own entries; viewers may read it.
	gotA, _ := rows(e.viewerA, "/api/v1/tenants/a/audit")
	var wantA []row
	for _, r := range want {
		if r.tenant == "a" {
			wantA = append(wantA, r)
		}
	}
	if !slices.Equal(gotA, wantA) {
		t.Errorf("tenant a's log:\n got %v\nwant %v", gotA, wantA)
	}

	for _, tc := range []struct {
		query string
		want  []row
	}{
		{"?tenant=c", []row{want[0], want[10]}},
		{"?actorName=bob", []row{want[2]}},
		{fmt.Sprintf("?actor=token:%d", bob.TokenID), []row{want[2]}},
		{fmt.Sprintf("?actor=token:%d/admin", bob.TokenID), []row{want[2]}},
		{fmt.Sprintf("?actor=token:%d/viewer", bob.TokenID), nil},
		{"?actor=bob", nil},
		{"?kind=credential", want[5:8]},
		{"?kind=Cluster&name=other", []row{want[2]}},
		{"?since=1h", want},
		{"?until=1h", nil},
		{"?since=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339), nil},
		{"?until=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339), want},
	} {
		if got, _ := rows(e.operator, "/api/v1/audit"+tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("audit%s:\n got %v\nwant %v", tc.query, got, tc.want)
		}
	}
	// ?tenant= means nothing on a tenant's own log.
	if got, _ := rows(e.viewerA, "/api/v1/tenants/a/audit?tenant=b"); !slices.Equal(got, wantA) {
		t.Errorf("tenant a's log with ?tenant=b: %v", got)
	}

	// Paging: pages of 4 cover the log once, in order.
	var paged []row
	next := "/api/v1/audit?limit=4"
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		var l apiv1.List[auditlog.Entry]
		e.doJSON(e.operator, "GET", next, nil, 200, &l)
		for _, en := range l.Items {
			paged = append(paged, row{en.ActorName, en.Tenant, en.Action, en.Kind, en.Name})
		}
		next = ""
		if l.Continue != "" {
			next = "/api/v1/audit?limit=4&continue=" + l.Continue
		}
	}
	if !slices.Equal(paged, want) {
		t.Errorf("paged log:\n got %v\nwant %v", paged, want)
	}

	e.run(t, []apiCase{
		{"viewer reads the gateway's log", e.viewerA, "GET", "/api/v1/audit", nil, 403, "operator token", ""},
		{"another tenant's log", e.adminB, "GET", "/api/v1/tenants/a/audit", nil, 404, `tenant "a" not found`, ""},
		{"bad since", e.operator, "GET", "/api/v1/audit?since=yesterday", nil, 422, "RFC 3339", "since"},
		{"bad until", e.viewerA, "GET", "/api/v1/tenants/a/audit?until=-1h", nil, 422, "RFC 3339", "until"},
		{"bad limit", e.operator, "GET", "/api/v1/audit?limit=1001", nil, 422, "between 1 and 1000", "limit"},
		{"bad cursor", e.operator, "GET", "/api/v1/audit?continue=bm9wZQ", nil, 422, "cursor", "continue"},
	})
}
