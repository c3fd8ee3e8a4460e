package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// Finding 30.10: decision searches run under a per-tenant concurrency
// limit. With the decisions table locked, the tenant's searches hang in
// the database; one more is refused at once with 429 and Retry-After
// instead of taking another connection, and the slots come back when the
// searches end.
func TestDecisionSearchesAreBoundedPerTenant(t *testing.T) {
	e := newEnv(t)
	e.s.DecisionSearches = 2
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE decisions IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, path := range []string{"/api/v1/tenants/a/decisions", "/api/v1/tenants/a/decisions/stats"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = e.do(e.viewerA, "GET", path, nil)
		}()
	}
	testutil.Eventually(t, 10*time.Second, "two searches waiting on the lock", func() bool {
		var n int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'relation'`).Scan(&n)
		return err == nil && n >= 2
	})

	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "GET", e.srv.URL+"/api/v1/tenants/a/decisions?since=1h", nil)
	req.Header.Set("Authorization", "Bearer "+e.adminA)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("a third search of the tenant waits for the others (%v); want 429 at once", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	code, reason, msg, _ := statusOf(t, body)
	if res.StatusCode != http.StatusTooManyRequests || code != 429 || reason != "TooManyRequests" || res.Header.Get("Retry-After") != "1" ||
		!strings.Contains(msg, "tenant a already has 2 decision searches running") {
		t.Fatalf("third search = %d (Retry-After %q): %s %s", res.StatusCode, res.Header.Get("Retry-After"), reason, msg)
	}

	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Fatalf("the waiting searches = %v, want 200s", codes)
	}
	for _, path := range []string{"/api/v1/tenants/a/decisions", "/api/v1/tenants/b/decisions"} {
		tok := e.adminA
		if strings.Contains(path, "/b/") {
			tok = e.adminB
		}
		if code, raw := e.do(tok, "GET", path, nil); code != 200 {
			t.Errorf("%s after the searches ended = %d: %s", path, code, raw)
		}
	}
}
