package tenancy_test

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// world is two tenants with one cluster each and every credential type in
// every state, plus a TLS server that authenticates with them.
type world struct {
	store *tenancy.Store
	pool  *pgxpool.Pool
	ca    *tenancy.ClientCA
	auth  *tenancy.Authenticator
	srv   *httptest.Server

	acme, globex tenancy.Tenant
	creds        map[string]tenancy.Issued // "token", "token-revoked", "token-expired", "cert", ...
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s, pool, ca := newStore(t)
	w := &world{store: s, pool: pool, ca: ca, creds: map[string]tenancy.Issued{}}
	w.acme = must[tenancy.Tenant](t)(s.CreateTenant(ctx, "acme", ""))
	w.globex = must[tenancy.Tenant](t)(s.CreateTenant(ctx, "globex", ""))
	cl := must[tenancy.Cluster](t)(s.CreateCluster(ctx, w.acme.ID, "prod", map[string]string{"env": "prod"}))
	must[tenancy.Cluster](t)(s.CreateCluster(ctx, w.globex.ID, "prod", nil))

	create := map[string]func(tenancy.CredentialOptions) (tenancy.Issued, error){
		"token": func(o tenancy.CredentialOptions) (tenancy.Issued, error) {
			return s.CreateToken(ctx, w.acme.ID, cl.ID, o)
		},
		"cert": func(o tenancy.CredentialOptions) (tenancy.Issued, error) {
			return s.IssueCertificate(ctx, w.acme.ID, cl.ID, o)
		},
		"basic": func(o tenancy.CredentialOptions) (tenancy.Issued, error) {
			return s.CreateBasic(ctx, w.acme.ID, cl.ID, o)
		},
		"url": func(o tenancy.CredentialOptions) (tenancy.Issued, error) {
			return s.CreateURL(ctx, w.acme.ID, cl.ID, o)
		},
	}
	for typ, fn := range create {
		w.creds[typ] = must[tenancy.Issued](t)(fn(tenancy.CredentialOptions{}))
		w.creds[typ+"-revoked"] = must[tenancy.Issued](t)(fn(tenancy.CredentialOptions{}))
		must[tenancy.Credential](t)(s.RevokeCredential(ctx, w.acme.ID, w.creds[typ+"-revoked"].ID))
		w.creds[typ+"-expired"] = must[tenancy.Issued](t)(fn(tenancy.CredentialOptions{}))
		// Expired in the database, while the certificate itself is still
		// valid, so that the expiry, not the TLS layer, refuses it.
		if _, err := pool.Exec(ctx, `UPDATE credentials SET expires_at = now() - interval '1 minute' WHERE id = $1`,
			w.creds[typ+"-expired"].ID); err != nil {
			t.Fatal(err)
		}
	}

	w.auth = tenancy.NewAuthenticator(pool, tenancy.AuthOptions{})
	if err := w.auth.Load(ctx); err != nil {
		t.Fatal(err)
	}
	w.srv = authServer(t, w.auth, ca)
	return w
}

// authServer serves POST /t/{tenant}/validate and
// /t/{tenant}/k/{secret}/validate, answering 200 with the identity, or the
// error's status and message.
func authServer(t *testing.T, a *tenancy.Authenticator, ca *tenancy.ClientCA) *httptest.Server {
	mux := http.NewServeMux()
	handle := func(rw http.ResponseWriter, r *http.Request) {
		id, err := a.Authenticate(r)
		if err != nil {
			var e *fault.Error
			if !errors.As(err, &e) {
				t.Errorf("Authenticate returned %T, want *fault.Error", err)
			}
			http.Error(rw, e.Message, e.Code.HTTPStatus())
			return
		}
		fmt.Fprintf(rw, "%s/%s/%s/%s", id.TenantName, id.ClusterName, id.CredentialType, id.ClusterLabels["env"])
	}
	mux.HandleFunc("POST /t/{tenant}/validate", handle)
	mux.HandleFunc("POST /t/{tenant}/k/{secret}/validate", handle)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.TLS = &tls.Config{}
	ca.ConfigureTLS(srv.TLS)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// call is one request to the test server.
type call struct {
	tenant string
	secret string // a URL secret: the path is /t/{tenant}/k/{secret}/validate
	header func(h http.Header)
	cert   *tls.Certificate
}

type answer struct {
	status int
	body   string
	err    error // transport error (a refused TLS handshake)
}

func do(t *testing.T, srv *httptest.Server, c call) answer {
	t.Helper()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c.cert == nil {
			return &tls.Certificate{}, nil
		}
		return c.cert, nil
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	path := "/t/" + c.tenant + "/validate"
	if c.secret != "" {
		path = "/t/" + c.tenant + "/k/" + c.secret + "/validate"
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader("{}"))
	if c.header != nil {
		c.header(req.Header)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: strings.TrimSpace(string(b))}
}

func bearer(tok string) func(http.Header) {
	return func(h http.Header) { h.Set("Authorization", "Bearer "+tok) }
}

func basic(user, pass string) func(http.Header) {
	return func(h http.Header) {
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	}
}

func rawAuth(v ...string) func(http.Header) {
	return func(h http.Header) {
		for _, s := range v {
			h.Add("Authorization", s)
		}
	}
}

func keyPair(t testing.TB, iss tenancy.Issued) *tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(iss.CertificatePEM, iss.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

const (
	ok401 = "invalid or missing credentials"
	ok403 = "the credential is not valid for this tenant"
)

// TestIsolationMatrix runs every credential type in every state against its
// own tenant, another tenant and a tenant that does not exist.
func TestIsolationMatrix(t *testing.T) {
	w := newWorld(t)

	// A certificate from another CA, and one from the right CA that was
	// never recorded (so its fingerprint is unknown).
	otherCA := newCA(t)
	otherStore := tenancy.NewStore(w.pool, otherCA)
	cl := must[tenancy.Cluster](t)(w.store.FindClusterByName(ctx, w.acme.ID, "prod"))
	foreign := must[tenancy.Issued](t)(otherStore.IssueCertificate(ctx, w.acme.ID, cl.ID, tenancy.CredentialOptions{}))
	unknown := must[tenancy.Issued](t)(w.store.IssueCertificate(ctx, w.acme.ID, cl.ID, tenancy.CredentialOptions{}))
	if _, err := w.pool.Exec(ctx, `DELETE FROM credentials WHERE id = $1`, unknown.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.auth.Load(ctx); err != nil {
		t.Fatal(err)
	}

	cred := func(name string) call {
		iss := w.creds[name]
		switch iss.Type {
		case tenancy.CredentialToken:
			return call{header: bearer(iss.Token)}
		case tenancy.CredentialBasic:
			return call{header: basic(iss.Username, iss.Password)}
		case tenancy.CredentialURL:
			return call{secret: iss.URLSecret}
		}
		return call{cert: keyPair(t, iss)}
	}
	type row struct {
		name   string
		call   call
		status int
		body   string
	}
	var rows []row
	for _, typ := range []string{"token", "cert", "basic", "url"} {
		rows = append(rows,
			row{typ + "/own tenant", cred(typ), 200, "acme/prod/" + map[string]string{"token": "token", "cert": "certificate", "basic": "basic", "url": "url"}[typ] + "/prod"},
			row{typ + "/other tenant", with(cred(typ), "globex"), 403, ok403},
			row{typ + "/tenant that does not exist", with(cred(typ), "nosuch"), 403, ok403},
			row{typ + "/revoked", cred(typ + "-revoked"), 401, ok401},
			row{typ + "/revoked, other tenant", with(cred(typ+"-revoked"), "globex"), 401, ok401},
			row{typ + "/expired", cred(typ + "-expired"), 401, ok401},
		)
	}
	tok := w.creds["token"].Token
	b := w.creds["basic"]
	sec := w.creds["url"].URLSecret
	rows = append(rows,
		row{"cert/unknown fingerprint from the right CA", call{cert: keyPair(t, unknown)}, 401, ok401},
		row{"no credential", call{}, 401, ok401},
		row{"no credential, tenant that does not exist", with(call{}, "nosuch"), 401, ok401},
		row{"unknown token", call{header: bearer(tenancy.TokenPrefix + strings.Repeat("a", 52))}, 401, ok401},
		row{"unknown token, tenant that does not exist", with(call{header: bearer(tenancy.TokenPrefix + "x")}, "nosuch"), 401, ok401},
		row{"token without its prefix", call{header: bearer(strings.TrimPrefix(tok, tenancy.TokenPrefix))}, 401, ok401},
		row{"token with a changed character", call{header: bearer(tok[:len(tok)-1] + "z")}, 401, ok401},
		row{"malformed: scheme only", call{header: rawAuth("Bearer")}, 401, ok401},
		row{"malformed: empty token", call{header: rawAuth("Bearer ")}, 401, ok401},
		row{"malformed: unknown scheme", call{header: rawAuth("Token " + tok)}, 401, ok401},
		row{"malformed: two headers", call{header: rawAuth("Bearer "+tok, "Bearer "+tok)}, 401, ok401},
		row{"malformed: basic not base64", call{header: rawAuth("Basic !!!")}, 401, ok401},
		row{"malformed: basic without colon", call{header: rawAuth("Basic " + base64.StdEncoding.EncodeToString([]byte(b.Username)))}, 401, ok401},
		row{"basic: wrong password", call{header: basic(b.Username, "wrong")}, 401, ok401},
		row{"basic: wrong password again (cached)", call{header: basic(b.Username, "wrong")}, 401, ok401},
		row{"basic: unknown user", call{header: basic("pcu_nobody", b.Password)}, 401, ok401},
		row{"scheme is case-insensitive", call{header: rawAuth("bearer " + tok)}, 200, "acme/prod/token/prod"},
		// The Authorization header decides when both are present.
		row{"bad header with a good certificate", call{header: bearer("nope"), cert: keyPair(t, w.creds["cert"])}, 401, ok401},
		row{"good header with a revoked certificate", call{header: bearer(tok), cert: keyPair(t, w.creds["cert-revoked"])}, 200, "acme/prod/token/prod"},
		row{"unknown URL secret", call{secret: tenancy.URLSecretPrefix + strings.Repeat("a", 52)}, 401, ok401},
		row{"URL secret with a changed character", call{secret: sec[:len(sec)-1] + "z"}, 401, ok401},
		row{"URL secret as a bearer token", call{header: bearer(sec)}, 401, ok401},
		row{"token as a URL secret", call{secret: tok}, 401, ok401},
		// The URL secret decides alone when the path has one.
		row{"bad URL secret with a good token", call{secret: "nope", header: bearer(tok)}, 401, ok401},
		row{"good URL secret with a bad token", call{secret: sec, header: bearer("nope")}, 200, "acme/prod/url/prod"},
	)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			r.call.tenant = cmp.Or(r.call.tenant, "acme")
			got := do(t, w.srv, r.call)
			if got.err != nil || got.status != r.status || got.body != r.body {
				t.Fatalf("got %d %q (err %v), want %d %q", got.status, got.body, got.err, r.status, r.body)
			}
		})
	}

	// A certificate from another CA never reaches Authenticate: the TLS
	// handshake refuses it.
	t.Run("cert/wrong CA", func(t *testing.T) {
		got := do(t, w.srv, call{tenant: "acme", cert: keyPair(t, foreign)})
		if got.err == nil {
			t.Fatalf("got %d %q, want a refused handshake", got.status, got.body)
		}
	})
}

func with(c call, tenant string) call { c.tenant = tenant; return c }

// TestUnverifiedCertificateIsRefused covers a listener configured to request
// but not verify certificates: Authenticate trusts only verified chains.
func TestUnverifiedCertificateIsRefused(t *testing.T) {
	w := newWorld(t)
	cert, err := tenancy.ParseCertificatePEM(w.creds["cert"].CertificatePEM)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/t/acme/validate", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	if _, err := w.auth.Authenticate(r); fault.HTTPStatus(err) != 401 {
		t.Fatalf("unverified chain: err = %v, want 401", err)
	}
	// The path's tenant is parsed from the URL when no pattern set it.
	r.TLS.VerifiedChains = [][]*x509.Certificate{{cert, w.ca.Certificate()}}
	id, err := w.auth.Authenticate(r)
	if err != nil || id.TenantID != w.acme.ID || id.CredentialID != w.creds["cert"].ID {
		t.Fatalf("verified chain: %+v, %v", id, err)
	}
	r2 := httptest.NewRequest(http.MethodPost, "/t/globex/validate", nil)
	r2.TLS = r.TLS
	if _, err := w.auth.Authenticate(r2); fault.HTTPStatus(err) != 403 {
		t.Fatalf("other tenant: err = %v, want 403", err)
	}
}

func TestNotLoadedIsUnavailable(t *testing.T) {
	a := tenancy.NewAuthenticator(nil, tenancy.AuthOptions{})
	r := httptest.NewRequest(http.MethodPost, "/t/acme/validate", nil)
	r.Header.Set("Authorization", "Bearer "+tenancy.TokenPrefix+"x")
	if _, err := a.Authenticate(r); fault.HTTPStatus(err) != 503 {
		t.Fatalf("err = %v, want 503", err)
	}
}

// TestReasonIsLogOnly: a refusal says why in its Reason, which the logs and
// the webhook's metric read, while the Status sent to the client does not.
func TestReasonIsLogOnly(t *testing.T) {
	w := newWorld(t)
	b := w.creds["basic"]
	tests := []struct {
		name, tenant string
		header       func(http.Header)
		code         int32
		message      string
		reason       string
	}{
		{"unknown token", "acme", bearer(tenancy.TokenPrefix + strings.Repeat("a", 52)), 401, ok401, "unknown token"},
		{"wrong password", "acme", basic(b.Username, "wrong"), 401, ok401, "wrong password"},
		{"other tenant", "globex", bearer(w.creds["token"].Token), 403, ok403, "tenant mismatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/t/"+tc.tenant+"/validate", nil)
			tc.header(r.Header)
			_, err := w.auth.Authenticate(r)
			if got := fault.ErrorReason(err); got != tc.reason {
				t.Fatalf("reason = %q, want %q (err %v)", got, tc.reason, err)
			}
			st := fault.Status(err)
			body, _ := json.Marshal(st)
			if st.Code != tc.code || st.Message != tc.message || strings.Contains(string(body), tc.reason) {
				t.Fatalf("status sent = %s, want %d %q without the reason", body, tc.code, tc.message)
			}
		})
	}
}

// runAuth starts an authenticator with its own listener, as one replica.
func runAuth(t *testing.T, pool *pgxpool.Pool, opts tenancy.AuthOptions) *tenancy.Authenticator {
	t.Helper()
	a := tenancy.NewAuthenticator(pool, opts)
	l := pgnotify.New(pool, nil)
	a.Subscribe(l)
	c, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = l.Run(c) }()
	go func() { defer wg.Done(); _ = a.Run(c) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	testutil.Eventually(t, 10*time.Second, "first load", func() bool { return a.Ready() && l.Connected() })
	return a
}

// clock stands in for an Authenticator's wall clock: it stands still until
// the test moves it.
type clock struct{ ns atomic.Int64 }

// fakeClock gives a a clock that starts at the wall clock's now.
func fakeClock(a *tenancy.Authenticator) *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	a.SetClock(c.now)
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func status(a *tenancy.Authenticator, tenant string, h func(http.Header)) int {
	r := httptest.NewRequest(http.MethodPost, "/t/"+tenant+"/validate", nil)
	h(r.Header)
	_, err := a.Authenticate(r)
	if err == nil {
		return 200
	}
	return fault.HTTPStatus(err)
}

// TestChangesReachEveryReplica runs two authenticators on one database, each
// with its own listener, as two replicas do, with a resync too slow to
// matter: NOTIFY alone must carry every change within 2 s.
func TestChangesReachEveryReplica(t *testing.T) {
	s, pool, _ := newStore(t)
	acme := must[tenancy.Tenant](t)(s.CreateTenant(ctx, "acme", ""))
	cl := must[tenancy.Cluster](t)(s.CreateCluster(ctx, acme.ID, "prod", nil))
	opts := tenancy.AuthOptions{ResyncInterval: time.Hour}
	replicas := []*tenancy.Authenticator{runAuth(t, pool, opts), runAuth(t, pool, opts)}

	eventually := func(what string, h func(http.Header), tenant string, want int) {
		t.Helper()
		for i, a := range replicas {
			d := testutil.Eventually(t, 2*time.Second, fmt.Sprintf("replica %d: %s", i, what), func() bool { return status(a, tenant, h) == want })
			t.Logf("replica %d: %s after %v", i, what, d)
		}
	}
	tok := must[tenancy.Issued](t)(s.CreateToken(ctx, acme.ID, cl.ID, tenancy.CredentialOptions{}))
	eventually("new token accepted", bearer(tok.Token), "acme", 200)
	must[tenancy.Credential](t)(s.RevokeCredential(ctx, acme.ID, tok.ID))
	eventually("revoked token refused", bearer(tok.Token), "acme", 401)

	tok2 := must[tenancy.Issued](t)(s.CreateToken(ctx, acme.ID, cl.ID, tenancy.CredentialOptions{}))
	eventually("second token accepted", bearer(tok2.Token), "acme", 200)
	if err := s.DeleteCluster(ctx, acme.ID, cl.ID); err != nil {
		t.Fatal(err)
	}
	eventually("token of a deleted cluster refused", bearer(tok2.Token), "acme", 401)

	cl2 := must[tenancy.Cluster](t)(s.CreateCluster(ctx, acme.ID, "dev", nil))
	tok3 := must[tenancy.Issued](t)(s.CreateToken(ctx, acme.ID, cl2.ID, tenancy.CredentialOptions{}))
	eventually("third token accepted", bearer(tok3.Token), "acme", 200)
	if err := s.DeleteTenant(ctx, acme.ID); err != nil {
		t.Fatal(err)
	}
	eventually("token of a deleted tenant refused", bearer(tok3.Token), "acme", 401)
}

// TestResyncHealsLostNotification revokes behind the store's back (no
// NOTIFY): the periodic resync must catch it.
func TestResyncHealsLostNotification(t *testing.T) {
	s, pool, _ := newStore(t)
	acme := must[tenancy.Tenant](t)(s.CreateTenant(ctx, "acme", ""))
	cl := must[tenancy.Cluster](t)(s.CreateCluster(ctx, acme.ID, "prod", nil))
	tok := must[tenancy.Issued](t)(s.CreateToken(ctx, acme.ID, cl.ID, tenancy.CredentialOptions{}))
	a := runAuth(t, pool, tenancy.AuthOptions{ResyncInterval: 200 * time.Millisecond})
	if got := status(a, "acme", bearer(tok.Token)); got != 200 {
		t.Fatalf("before: %d", got)
	}
	if _, err := pool.Exec(ctx, `UPDATE credentials SET revoked_at = now() WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*time.Second, "resync", func() bool { return status(a, "acme", bearer(tok.Token)) == 401 })
}

// TestServesFromCacheWhileDatabaseIsDown: a warm authenticator answers
// without Postgres.
func TestServesFromCacheWhileDatabaseIsDown(t *testing.T) {
	w := newWorld(t)
	w.pool.Close()
	if got := status(w.auth, "acme", bearer(w.creds["token"].Token)); got != 200 {
		t.Fatalf("with the pool closed: %d, want 200", got)
	}
	if err := w.auth.Load(ctx); err == nil {
		t.Fatal("Load with the pool closed succeeded")
	}
	if got := status(w.auth, "acme", bearer(w.creds["token"].Token)); got != 200 {
		t.Fatalf("after a failed reload: %d, want 200 (last good set)", got)
	}
}

func TestLastUsedIsFlushedInBatches(t *testing.T) {
	w := newWorld(t)
	clk := fakeClock(w.auth)
	for range 3 {
		for _, name := range []string{"token", "basic"} {
			iss := w.creds[name]
			h := bearer(iss.Token)
			if name == "basic" {
				h = basic(iss.Username, iss.Password)
			}
			if got := status(w.auth, "acme", h); got != 200 {
				t.Fatalf("%s: %d", name, got)
			}
		}
	}
	lastUsed := func(id int64) *time.Time {
		var ts *time.Time
		if err := w.pool.QueryRow(ctx, `SELECT last_used_at FROM credentials WHERE id = $1`, id).Scan(&ts); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	if lastUsed(w.creds["token"].ID) != nil {
		t.Fatal("last_used_at written on the hot path")
	}
	if err := w.auth.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"token", "basic"} {
		if ts := lastUsed(w.creds[name].ID); ts == nil || time.Since(*ts) > time.Minute {
			t.Fatalf("%s: last_used_at = %v", name, ts)
		}
	}
	if ts := lastUsed(w.creds["cert"].ID); ts != nil {
		t.Fatalf("unused credential has last_used_at %v", ts)
	}
	// Usage survives a reload that happens before the flush. (Use is
	// recorded at most every 100 ms per credential.)
	clk.advance(150 * time.Millisecond)
	status(w.auth, "acme", bearer(w.creds["token"].Token))
	before := lastUsed(w.creds["token"].ID)
	if err := w.auth.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.auth.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	if after := lastUsed(w.creds["token"].ID); !after.After(*before) {
		t.Fatalf("last_used_at %v not after %v", after, before)
	}
}

// TestExpiryWithoutReload: a credential that expires between two loads is
// refused at once.
func TestExpiryWithoutReload(t *testing.T) {
	w := newWorld(t)
	clk := fakeClock(w.auth)
	cl := must[tenancy.Cluster](t)(w.store.FindClusterByName(ctx, w.acme.ID, "prod"))
	// An hour, not a second: the load must see the token live however
	// slow the machine, and the test moves its clock rather than waiting.
	exp := clk.now().Add(time.Hour)
	tok := must[tenancy.Issued](t)(w.store.CreateToken(ctx, w.acme.ID, cl.ID, tenancy.CredentialOptions{ExpiresAt: &exp}))
	if err := w.auth.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := status(w.auth, "acme", bearer(tok.Token)); got != 200 {
		t.Fatalf("before expiry: %d", got)
	}
	// Postgres keeps microseconds, so a millisecond before exp is still
	// before the stored expiry.
	clk.set(exp.Add(-time.Millisecond))
	if got := status(w.auth, "acme", bearer(tok.Token)); got != 200 {
		t.Fatalf("just before expiry: %d", got)
	}
	clk.set(exp.Add(10 * time.Millisecond))
	if got := status(w.auth, "acme", bearer(tok.Token)); got != 401 {
		t.Fatalf("after expiry: %d, want 401", got)
	}
}

// TestApiserverClientAuthenticates writes each credential into a kubeconfig
// with the artifacts package, lets the apiserver's own resolver pick the
// user entry for the gateway's host:port, builds the apiserver's HTTP
// transport from it and calls the gateway: what a real apiserver sends is
// what Authenticate accepts.
func TestApiserverClientAuthenticates(t *testing.T) {
	w := newWorld(t)
	t.Setenv("KUBECONFIG", "")
	servingCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	hostPort := strings.TrimPrefix(w.srv.URL, "https://")
	for _, name := range []string{"token", "basic", "cert"} {
		t.Run(name, func(t *testing.T) {
			iss := w.creds[name]
			creds := artifacts.Credentials{Token: iss.Token}
			switch iss.Type {
			case tenancy.CredentialBasic:
				creds = artifacts.Credentials{Username: iss.Username, Password: iss.Password}
			case tenancy.CredentialCertificate:
				creds = artifacts.Credentials{ClientCertificatePEM: iss.CertificatePEM, ClientKeyPEM: iss.KeyPEM}
			}
			kc, err := artifacts.Kubeconfig(creds, w.srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "kubeconfig")
			if err := os.WriteFile(file, kc, 0o600); err != nil {
				t.Fatal(err)
			}
			resolver, err := webhookutil.NewDefaultAuthenticationInfoResolver(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := resolver.ClientConfigFor(hostPort)
			if err != nil {
				t.Fatal(err)
			}
			cfg.TLSClientConfig.CAData = servingCA
			tr, err := rest.TransportFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for tenant, want := range map[string]int{"acme": 200, "globex": 403} {
				resp, err := client.Post(w.srv.URL+"/t/"+tenant+"/validate", "application/json", strings.NewReader("{}"))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("tenant %s: %d %s, want %d", tenant, resp.StatusCode, body, want)
				}
			}
		})
	}
}
