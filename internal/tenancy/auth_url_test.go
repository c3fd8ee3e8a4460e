package tenancy_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// urlStatus authenticates an unrouted request to /t/{tenant}/k/{secret}/validate,
// as Authenticate reads the path itself when no router set the values.
func urlStatus(a *tenancy.Authenticator, tenant, secret string) int {
	r := httptest.NewRequest(http.MethodPost, "/t/"+tenant+"/k/"+secret+"/validate", nil)
	_, err := a.Authenticate(r)
	if err == nil {
		return 200
	}
	return fault.HTTPStatus(err)
}

// Issue 21 §7: a cluster whose managed control plane cannot load an
// AdmissionConfiguration authenticates by a secret in its webhook URL. The
// secret is one URL-safe path segment with 256 random bits; it is issued,
// rotated and revoked as the other kinds are.
func TestURLCredentialLifecycle(t *testing.T) {
	w := newWorld(t)
	cl := must[tenancy.Cluster](t)(w.store.FindClusterByName(ctx, w.acme.ID, "prod"))
	iss := must[tenancy.Issued](t)(w.store.CreateURL(ctx, w.acme.ID, cl.ID, tenancy.CredentialOptions{Description: "eks"}))
	if iss.Type != tenancy.CredentialURL || iss.Token != "" || iss.Password != "" || iss.Username != "" {
		t.Fatalf("issued %+v", iss)
	}
	// pcuk_ and 52 base32 characters: 260 bits of which 256 random.
	if !regexp.MustCompile(`^pcuk_[a-z2-7]{52}$`).MatchString(iss.URLSecret) || url.PathEscape(iss.URLSecret) != iss.URLSecret {
		t.Fatalf("secret %q is not one URL-safe path segment of the expected shape", iss.URLSecret)
	}
	if err := w.auth.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := urlStatus(w.auth, "acme", iss.URLSecret); got != 200 {
		t.Fatalf("new URL secret: %d", got)
	}
	if got := urlStatus(w.auth, "globex", iss.URLSecret); got != 403 {
		t.Fatalf("URL secret on another tenant's path: %d", got)
	}

	next, old, err := w.store.RotateCredential(ctx, w.acme.ID, iss.ID, 0, tenancy.CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if next.Type != tenancy.CredentialURL || next.URLSecret == "" || next.URLSecret == iss.URLSecret ||
		next.Description != "eks" || old.RevokedAt == nil {
		t.Fatalf("rotated: new %+v, old %+v", next, old)
	}
	if err := w.auth.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := urlStatus(w.auth, "acme", iss.URLSecret); got != 401 {
		t.Fatalf("rotated-out URL secret: %d, want 401", got)
	}
	if got := urlStatus(w.auth, "acme", next.URLSecret); got != 200 {
		t.Fatalf("rotated-in URL secret: %d", got)
	}

	if _, err := w.store.RevokeCredential(ctx, w.acme.ID, next.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.auth.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := urlStatus(w.auth, "acme", next.URLSecret); got != 401 {
		t.Fatalf("revoked URL secret: %d, want 401", got)
	}

	exp := time.Now().Add(-time.Minute)
	if _, err := w.store.CreateURL(ctx, w.acme.ID, cl.ID, tenancy.CredentialOptions{ExpiresAt: &exp}); err == nil {
		t.Fatal("a URL credential that expired already was issued")
	}
	// Listed without its secret, as every kind.
	creds := must[[]tenancy.Credential](t)(w.store.ListCredentials(ctx, w.acme.ID, cl.ID))
	found := false
	for _, c := range creds {
		found = found || c.ID == iss.ID && c.Type == tenancy.CredentialURL
	}
	if !found {
		t.Fatalf("URL credential %d not listed in %+v", iss.ID, creds)
	}
}
