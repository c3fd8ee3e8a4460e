package tenancy_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// BenchmarkAuthenticate measures a cached authentication, the cost every
// webhook request pays. The pool is closed before timing starts, so a
// database round trip would fail the benchmark. 1,000 tenants with 3
// credentials each are loaded so that the maps are not trivially small.
func BenchmarkAuthenticate(b *testing.B) {
	pool := pgtest.Pool(b)
	ca, err := tenancy.NewClientCA("bench CA", 24*365*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	s := tenancy.NewStore(pool, ca)
	if _, err := pool.Exec(ctx, `
		INSERT INTO tenants (name) SELECT 'tenant-' || i FROM generate_series(1, 1000) i;
		INSERT INTO clusters (tenant_id, name) SELECT id, 'prod' FROM tenants;
		INSERT INTO credentials (tenant_id, cluster_id, type, token_hash)
		  SELECT tenant_id, id, 'token', sha256(('filler-a-' || id)::bytea) FROM clusters;
		INSERT INTO credentials (tenant_id, cluster_id, type, token_hash)
		  SELECT tenant_id, id, 'token', sha256(('filler-b-' || id)::bytea) FROM clusters;`); err != nil {
		b.Fatal(err)
	}
	tenant := must[tenancy.Tenant](b)(s.FindTenantByName(ctx, "tenant-500"))
	cl := must[tenancy.Cluster](b)(s.FindClusterByName(ctx, tenant.ID, "prod"))
	tok := must[tenancy.Issued](b)(s.CreateToken(ctx, tenant.ID, cl.ID, tenancy.CredentialOptions{}))
	crt := must[tenancy.Issued](b)(s.IssueCertificate(ctx, tenant.ID, cl.ID, tenancy.CredentialOptions{}))
	bas := must[tenancy.Issued](b)(s.CreateBasic(ctx, tenant.ID, cl.ID, tenancy.CredentialOptions{}))
	a := tenancy.NewAuthenticator(pool, tenancy.AuthOptions{})
	if err := a.Load(ctx); err != nil {
		b.Fatal(err)
	}
	cert := must[*x509.Certificate](b)(tenancy.ParseCertificatePEM(crt.CertificatePEM))

	path := "/t/" + tenant.Name + "/validate"
	reqs := map[string]*http.Request{}
	reqs["token"] = httptest.NewRequest(http.MethodPost, path, nil)
	reqs["token"].Header.Set("Authorization", "Bearer "+tok.Token)
	reqs["certificate"] = httptest.NewRequest(http.MethodPost, path, nil)
	reqs["certificate"].TLS = &tls.ConnectionState{
		PeerCertificates: []*x509.Certificate{cert},
		VerifiedChains:   [][]*x509.Certificate{{cert, ca.Certificate()}},
	}
	reqs["basic"] = httptest.NewRequest(http.MethodPost, path, nil)
	reqs["basic"].Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(bas.Username+":"+bas.Password)))
	reqs["unknown-token"] = httptest.NewRequest(http.MethodPost, path, nil)
	reqs["unknown-token"].Header.Set("Authorization", "Bearer "+tenancy.TokenPrefix+"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")

	// Warm the basic-auth cache (its first use costs an argon2id check).
	for name, r := range reqs {
		_, err := a.Authenticate(r)
		if (err == nil) == (name == "unknown-token") {
			b.Fatalf("%s: %v", name, err)
		}
	}
	pool.Close() // from here on, any database access fails

	for _, name := range []string{"token", "certificate", "basic", "unknown-token"} {
		r := reqs[name]
		wantErr := name == "unknown-token"
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(r); (err != nil) != wantErr {
					b.Fatal(fmt.Sprint(name, ": ", err))
				}
			}
		})
	}
	b.Run("token-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := a.Authenticate(reqs["token"]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
