package tenancy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var ctx = context.Background()

func newCA(t testing.TB) *tenancy.ClientCA {
	t.Helper()
	ca, err := tenancy.NewClientCA("test client CA", 24*time.Hour*365)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func newStore(t testing.TB) (*tenancy.Store, *pgxpool.Pool, *tenancy.ClientCA) {
	t.Helper()
	pool := pgtest.Pool(t)
	ca := newCA(t)
	return tenancy.NewStore(pool, ca), pool, ca
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantCode(t *testing.T, err error, code fault.Code) {
	t.Helper()
	if got := fault.ErrorCode(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func TestTenantsAndClusters(t *testing.T) {
	s, _, _ := newStore(t)
	acme := must[tenancy.Tenant](t)(s.CreateTenant(ctx, "acme", "ACME Corp"))
	globex := must[tenancy.Tenant](t)(s.CreateTenant(ctx, "globex", ""))

	_, err := s.CreateTenant(ctx, "acme", "again")
	wantCode(t, err, fault.AlreadyExists)
	for _, bad := range []string{"", "ACME", "-a", "a_b", strings.Repeat("a", 64), "a.b"} {
		_, err := s.CreateTenant(ctx, bad, "")
		wantCode(t, err, fault.Invalid)
	}

	all := must[[]tenancy.Tenant](t)(s.ListAllTenants(ctx))
	if len(all) != 2 || all[0].Name != "acme" || all[1].Name != "globex" {
		t.Fatalf("ListAllTenants = %+v", all)
	}
	if got := must[tenancy.Tenant](t)(s.FindTenantByName(ctx, "acme")); got.ID != acme.ID || got.DisplayName != "ACME Corp" {
		t.Fatalf("FindTenantByName = %+v", got)
	}
	_, err = s.FindTenantByName(ctx, "nope")
	wantCode(t, err, fault.NotFound)
	if got := must[tenancy.Tenant](t)(s.UpdateTenantDisplayName(ctx, globex.ID, "Globex")); got.DisplayName != "Globex" {
		t.Fatalf("UpdateTenantDisplayName = %+v", got)
	}

	prod := must[tenancy.Cluster](t)(s.CreateCluster(ctx, acme.ID, "prod", map[string]string{"env": "prod", "example.com/region": "eu"}))
	if prod.TenantID != acme.ID || prod.Labels["env"] != "prod" {
		t.Fatalf("CreateCluster = %+v", prod)
	}
	// The same name in another tenant is fine; in the same tenant it is not.
	must[tenancy.Cluster](t)(s.CreateCluster(ctx, globex.ID, "prod", nil))
	_, err = s.CreateCluster(ctx, acme.ID, "prod", nil)
	wantCode(t, err, fault.AlreadyExists)
	_, err = s.CreateCluster(ctx, acme.ID, "dev", map[string]string{"bad key!": "x"})
	wantCode(t, err, fault.Invalid)
	_, err = s.CreateCluster(ctx, acme.ID, "dev", map[string]string{"k": "bad value!"})
	wantCode(t, err, fault.Invalid)
	_, err = s.CreateCluster(ctx, 999999, "dev", nil)
	wantCode(t, err, fault.NotFound)

	// Another tenant's cluster is "not found", exactly like a missing one.
	tests := []struct {
		name string
		call func() error
	}{
		{"FindCluster", func() error { _, err := s.FindCluster(ctx, globex.ID, prod.ID); return err }},
		{"SetClusterLabels", func() error { _, err := s.SetClusterLabels(ctx, globex.ID, prod.ID, nil); return err }},
		{"DeleteCluster", func() error { return s.DeleteCluster(ctx, globex.ID, prod.ID) }},
		{"ListCredentials", func() error { _, err := s.ListCredentials(ctx, globex.ID, prod.ID); return err }},
		{"CreateToken", func() error {
			_, err := s.CreateToken(ctx, globex.ID, prod.ID, tenancy.CredentialOptions{})
			return err
		}},
		{"CreateBasic", func() error {
			_, err := s.CreateBasic(ctx, globex.ID, prod.ID, tenancy.CredentialOptions{})
			return err
		}},
		{"IssueCertificate", func() error {
			_, err := s.IssueCertificate(ctx, globex.ID, prod.ID, tenancy.CredentialOptions{})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run("other tenant/"+tc.name, func(t *testing.T) { wantCode(t, tc.call(), fault.NotFound) })
	}

	got := must[tenancy.Cluster](t)(s.SetClusterLabels(ctx, acme.ID, prod.ID, map[string]string{"env": "staging"}))
	if len(got.Labels) != 1 || got.Labels["env"] != "staging" {
		t.Fatalf("SetClusterLabels = %+v", got)
	}
	if cs := must[[]tenancy.Cluster](t)(s.ListClusters(ctx, acme.ID)); len(cs) != 1 || cs[0].ID != prod.ID {
		t.Fatalf("ListClusters = %+v", cs)
	}
	if got := must[tenancy.Cluster](t)(s.FindClusterByName(ctx, acme.ID, "prod")); got.ID != prod.ID {
		t.Fatalf("FindClusterByName = %+v", got)
	}

	must[tenancy.Issued](t)(s.CreateToken(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{}))
	if err := s.DeleteCluster(ctx, acme.ID, prod.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindCluster(ctx, acme.ID, prod.ID)
	wantCode(t, err, fault.NotFound)
	if err := s.DeleteTenant(ctx, acme.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.DeleteTenant(ctx, acme.ID), fault.NotFound)
}

func TestCredentials(t *testing.T) {
	s, pool, ca := newStore(t)
	acme := must[tenancy.Tenant](t)(s.CreateTenant(ctx, "acme", ""))
	globex := must[tenancy.Tenant](t)(s.CreateTenant(ctx, "globex", ""))
	prod := must[tenancy.Cluster](t)(s.CreateCluster(ctx, acme.ID, "prod", nil))

	t.Run("token", func(t *testing.T) {
		iss := must[tenancy.Issued](t)(s.CreateToken(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{Description: "ci"}))
		if !strings.HasPrefix(iss.Token, tenancy.TokenPrefix) || len(iss.Token) != len(tenancy.TokenPrefix)+52 {
			t.Fatalf("token %q: want the prefix and 52 base32 characters (256 bits)", iss.Token)
		}
		var stored []byte
		if err := pool.QueryRow(ctx, `SELECT token_hash FROM credentials WHERE id = $1`, iss.ID).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256([]byte(iss.Token)); hex.EncodeToString(stored) != hex.EncodeToString(sum[:]) {
			t.Fatal("the stored hash is not the SHA-256 of the token")
		}
		if iss.Type != tenancy.CredentialToken || iss.Description != "ci" || iss.ExpiresAt != nil {
			t.Fatalf("credential = %+v", iss.Credential)
		}
	})

	t.Run("basic", func(t *testing.T) {
		iss := must[tenancy.Issued](t)(s.CreateBasic(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{}))
		if !strings.HasPrefix(iss.Username, tenancy.UsernamePrefix) || len(iss.Password) < 40 {
			t.Fatalf("basic = %q / %q", iss.Username, iss.Password)
		}
		var phc string
		if err := pool.QueryRow(ctx, `SELECT password_hash FROM credentials WHERE id = $1`, iss.ID).Scan(&phc); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(phc, "$argon2id$v=19$") || strings.Contains(phc, iss.Password) {
			t.Fatalf("password hash %q", phc)
		}
	})

	t.Run("generated certificate", func(t *testing.T) {
		exp := time.Now().Add(48 * time.Hour).Truncate(time.Second)
		iss := must[tenancy.Issued](t)(s.IssueCertificate(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{ExpiresAt: &exp}))
		cert := must[*x509.Certificate](t)(tenancy.ParseCertificatePEM(iss.CertificatePEM))
		if cert.Subject.CommonName != "prod" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "acme" {
			t.Fatalf("subject = %v", cert.Subject)
		}
		if k, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
			t.Fatalf("public key %T, want ECDSA P-256", cert.PublicKey)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("verify against the client CA: %v", err)
		}
		if !cert.NotAfter.Equal(exp) || iss.ExpiresAt == nil || !iss.ExpiresAt.Equal(exp) {
			t.Fatalf("NotAfter %v, ExpiresAt %v, want %v", cert.NotAfter, iss.ExpiresAt, exp)
		}
		fp := sha256.Sum256(cert.Raw)
		if iss.Fingerprint != hex.EncodeToString(fp[:]) {
			t.Fatal("fingerprint is not the SHA-256 of the DER")
		}
		block, _ := pem.Decode(iss.KeyPEM)
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if !key.(*ecdsa.PrivateKey).PublicKey.Equal(cert.PublicKey) {
			t.Fatal("key does not match certificate")
		}
	})

	t.Run("CSR", func(t *testing.T) {
		ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		_, edKey, _ := ed25519.GenerateKey(rand.Reader)
		rsaSmall, _ := rsa.GenerateKey(rand.Reader, 1024)
		tests := []struct {
			name string
			csr  []byte
			code fault.Code // "" = success
		}{
			{"ECDSA P-256", csrPEM(t, ecKey, "evil-cluster", "globex"), ""},
			{"Ed25519", csrPEM(t, edKey, "x", ""), ""},
			{"RSA 1024 is refused", csrPEM(t, rsaSmall, "x", ""), fault.Invalid},
			{"not PEM", []byte("hello"), fault.Invalid},
			{"bad signature", tamper(csrPEM(t, ecKey, "x", "")), fault.Invalid},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				// CheckCSR, the API's check before anything is created,
				// refuses exactly what SignCSR refuses.
				if err := tenancy.CheckCSR(tc.csr); (err != nil) != (tc.code != "") {
					t.Fatalf("CheckCSR = %v, want an error: %v", err, tc.code != "")
				}
				iss, err := s.SignCSR(ctx, acme.ID, prod.ID, tc.csr, tenancy.CredentialOptions{})
				if tc.code != "" {
					wantCode(t, err, tc.code)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(iss.KeyPEM) != 0 {
					t.Fatal("a signed CSR must not return a key")
				}
				cert := must[*x509.Certificate](t)(tenancy.ParseCertificatePEM(iss.CertificatePEM))
				// The subject the CSR asked for is ignored.
				if cert.Subject.CommonName != "prod" || cert.Subject.Organization[0] != "acme" {
					t.Fatalf("subject = %v", cert.Subject)
				}
			})
		}
	})

	t.Run("expiry in the past is refused", func(t *testing.T) {
		past := time.Now().Add(-time.Minute)
		_, err := s.CreateToken(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{ExpiresAt: &past})
		wantCode(t, err, fault.Invalid)
	})

	t.Run("list and revoke", func(t *testing.T) {
		list := must[[]tenancy.Credential](t)(s.ListCredentials(ctx, acme.ID, prod.ID))
		if len(list) != 5 {
			t.Fatalf("ListCredentials: %d credentials, want 5", len(list))
		}
		for _, c := range list {
			if !c.Active(time.Now()) {
				t.Fatalf("credential %d is not active", c.ID)
			}
		}
		_, err := s.RevokeCredential(ctx, globex.ID, list[0].ID)
		wantCode(t, err, fault.NotFound)
		_, err = s.FindCredential(ctx, globex.ID, list[0].ID)
		wantCode(t, err, fault.NotFound)
		rev := must[tenancy.Credential](t)(s.RevokeCredential(ctx, acme.ID, list[0].ID))
		if rev.RevokedAt == nil || rev.Active(time.Now()) {
			t.Fatalf("revoked credential = %+v", rev)
		}
		again := must[tenancy.Credential](t)(s.RevokeCredential(ctx, acme.ID, list[0].ID))
		if !again.RevokedAt.Equal(*rev.RevokedAt) {
			t.Fatal("revoking twice changed revoked_at")
		}
	})

	t.Run("no client CA", func(t *testing.T) {
		s2 := tenancy.NewStore(pool, nil)
		_, err := s2.IssueCertificate(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{})
		wantCode(t, err, fault.Invalid)
	})
}

func csrPEM(t testing.TB, key any, cn, org string) []byte {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}
	if org != "" {
		tmpl.Subject.Organization = []string{org}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// tamper flips a byte of the CSR's signature.
func tamper(p []byte) []byte {
	block, _ := pem.Decode(p)
	block.Bytes[len(block.Bytes)-3] ^= 0xff
	return pem.EncodeToMemory(block)
}

func TestLoadOrCreateClientCA(t *testing.T) {
	dir := t.TempDir()
	a := must[*tenancy.ClientCA](t)(tenancy.LoadOrCreateClientCA(dir))
	b := must[*tenancy.ClientCA](t)(tenancy.LoadOrCreateClientCA(dir))
	if !a.Certificate().Equal(b.Certificate()) {
		t.Fatal("a second start generated a new CA instead of loading the first")
	}
	if !b.Certificate().IsCA {
		t.Fatal("not a CA")
	}
}

func TestRotateCredential(t *testing.T) {
	s, pool, _ := newStore(t)
	acme := must[tenancy.Tenant](t)(s.CreateTenant(ctx, "acme", ""))
	globex := must[tenancy.Tenant](t)(s.CreateTenant(ctx, "globex", ""))
	prod := must[tenancy.Cluster](t)(s.CreateCluster(ctx, acme.ID, "prod", nil))
	old := must[tenancy.Issued](t)(s.CreateToken(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{Description: "apiservers"}))

	_, _, err := s.RotateCredential(ctx, globex.ID, old.ID, time.Hour, tenancy.CredentialOptions{})
	wantCode(t, err, fault.NotFound)

	type rotated struct {
		iss tenancy.Issued
		old tenancy.Credential
	}
	rotate := func(id int64, grace time.Duration) rotated {
		t.Helper()
		iss, o, err := s.RotateCredential(ctx, acme.ID, id, grace, tenancy.CredentialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rotated{iss, o}
	}
	r := rotate(old.ID, time.Hour)
	if r.iss.Type != tenancy.CredentialToken || r.iss.Token == "" || r.iss.ClusterID != prod.ID || r.iss.Description != "apiservers" {
		t.Fatalf("new credential = %+v", r.iss)
	}
	if r.old.ID != old.ID || r.old.RevokedAt != nil || r.old.ExpiresAt == nil ||
		time.Until(*r.old.ExpiresAt) < 59*time.Minute || time.Until(*r.old.ExpiresAt) > 61*time.Minute {
		t.Fatalf("old credential = %+v", r.old)
	}
	// Never extended.
	if again := rotate(old.ID, 48*time.Hour); !again.old.ExpiresAt.Equal(*r.old.ExpiresAt) {
		t.Errorf("a longer grace moved the expiry from %v to %v", r.old.ExpiresAt, again.old.ExpiresAt)
	}
	// Zero revokes.
	if z := rotate(r.iss.ID, 0); z.old.RevokedAt == nil || z.old.Active(time.Now()) {
		t.Errorf("grace 0: %+v", z.old)
	}

	basic := must[tenancy.Issued](t)(s.CreateBasic(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{}))
	if b := rotate(basic.ID, time.Minute); b.iss.Type != tenancy.CredentialBasic || b.iss.Password == "" || b.iss.Username == basic.Username {
		t.Errorf("rotated basic = %+v", b.iss)
	}
	cert := must[tenancy.Issued](t)(s.IssueCertificate(ctx, acme.ID, prod.ID, tenancy.CredentialOptions{}))
	if c := rotate(cert.ID, time.Minute); c.iss.Type != tenancy.CredentialCertificate || len(c.iss.KeyPEM) == 0 || c.iss.Fingerprint == cert.Fingerprint {
		t.Errorf("rotated certificate = %+v", c.iss)
	}

	// A failed rotation changes nothing: no new credential, the old one
	// untouched.
	before := must[[]tenancy.Credential](t)(s.ListCredentials(ctx, acme.ID, prod.ID))
	noCA := tenancy.NewStore(pool, nil)
	_, _, err = noCA.RotateCredential(ctx, acme.ID, cert.ID, 0, tenancy.CredentialOptions{})
	wantCode(t, err, fault.Invalid)
	after := must[[]tenancy.Credential](t)(s.ListCredentials(ctx, acme.ID, prod.ID))
	if len(after) != len(before) || after[len(after)-1].ID != before[len(before)-1].ID {
		t.Errorf("a failed rotation added a credential: %d then %d", len(before), len(after))
	}
	for _, c := range after {
		if c.ID == cert.ID && c.RevokedAt != nil {
			t.Error("a failed rotation revoked the old credential")
		}
	}
}
