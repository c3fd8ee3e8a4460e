package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// The fast drills need no HAProxy and no load: `make test` runs them
// (PORTCULLIS_DRILLS=fast).

// Drill 5: a replica started while its database is down (behind a
// PgBouncer that is up) is not ready and answers every webhook call with
// 503 at once: never an allowed review.
func TestDrillColdStart(t *testing.T) {
	drillsEnabled(t, true)
	dir := t.TempDir()
	// Nothing listens on this socket directory.
	f := &fixture{dir: dir, dbURL: "postgres://postgres@/postgres?host=" + dir + "/no-postgres&sslmode=disable"}
	// PgBouncer is up, PostgreSQL behind it is not.
	f.bouncer = startPgBouncer(t, filepath.Join(dir, "no-postgres"))
	f.makeCerts(t)
	r := newReplica(t, f, gatewayBinary(t), "drill-cold")
	r.start(t)
	testutil.Eventually(t, 30*time.Second, "drill-cold's /livez", func() bool {
		return httpStatus("http://"+r.metrics+"/livez") == http.StatusOK
	})
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: f.caPool}, ForceAttemptHTTP2: true}}
	items := buildCorpus(t)
	var probes int
	var slowest time.Duration
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); probes++ {
		if st := httpStatus("http://" + r.metrics + "/readyz"); st != http.StatusServiceUnavailable {
			t.Fatalf("/readyz answered %d with the database down; want 503", st)
		}
		it := items[probes%len(items)]
		req, _ := http.NewRequest(http.MethodPost, r.webhookURL(tenantName)+"?timeout=10s", bytes.NewReader(it.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer any-token")
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("webhook call %d: %v", probes, err)
		}
		took := time.Since(start)
		slowest = max(slowest, took)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var a reviewAnswer
		if json.Unmarshal(body, &a) == nil && a.Response != nil && a.Response.Allowed {
			t.Fatalf("a cold replica allowed a review: %s", body)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("webhook answered %d (Retry-After %q): %.200s; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		if took > 500*time.Millisecond {
			t.Errorf("webhook call %d took %v; a cold replica must answer at once", probes, took)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("drill 5, cold start with Postgres down behind PgBouncer: %d probes over 3s: /readyz 503 every time, webhook 503 with Retry-After every time (slowest %s ms), never allowed\n",
		probes, ms(slowest))
}

// Drill 6: a credential revoked through one replica's admin API is refused
// by the other within 2s.
func TestDrillRevocation(t *testing.T) {
	drillsEnabled(t, true)
	f := newFixture(t)
	f.bouncer = startPgBouncer(t, f.pg.SocketDir)
	bin := gatewayBinary(t)
	a, b := newReplica(t, f, bin, "drill-rev-a"), newReplica(t, f, bin, "drill-rev-b")
	for _, r := range []*replica{a, b} {
		r.start(t)
		r.waitReady(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	operator, err := adminauth.Bootstrap(ctx, f.pool, "drills")
	if err != nil {
		t.Fatal(err)
	}
	ten := f.tenants[0]
	c := newDrillClient(f, ten.name, ten.creds[0].token)
	it := buildCorpus(t)[0]
	call := func(r *replica, i int) string {
		uid := fmt.Sprintf("revoke-%s-%d", r.name, i)
		_, problem := c.review(r.webhookURL(ten.name), withUID(it, uid), uid, it.allowed)
		return problem
	}
	if p := call(b, 0); p != "" {
		t.Fatalf("before the revocation: %s", p)
	}

	xacts := f.bouncer.transactions()
	url := fmt.Sprintf("https://%s/api/v1/tenants/%s/clusters/%s/credentials/%d", a.admin, ten.name, ten.creds[0].cluster, ten.creds[0].id)
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+operator)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("revoke through %s: %s: %s", a.name, resp.Status, body)
	}
	revoked := time.Now()
	var took time.Duration
	for i := 1; ; i++ {
		p := call(b, i)
		if p != "" {
			took = time.Since(revoked)
			if !bytes.Contains([]byte(p), []byte("status 401")) {
				t.Fatalf("after the revocation %s answered %s; want 401", b.name, p)
			}
			break
		}
		if time.Since(revoked) > 10*time.Second {
			t.Fatalf("%s still accepts the revoked token 10s later", b.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	through := f.bouncer.transactions() - xacts
	fmt.Printf("drill 6, revocation through %s's admin API (pool through PgBouncer: %d transactions meanwhile; LISTEN direct): refused by %s %s ms later (target %s)\n",
		a.name, through, b.name, ms(took), drillRevokeMax)
	if through <= 0 {
		t.Errorf("PgBouncer passed %d transactions during the revocation: the replicas' pool did not go through it", through)
	}
	if took > drillRevokeMax {
		t.Errorf("the revocation took %v to reach the other replica; want at most %v", took, drillRevokeMax)
	}
}
