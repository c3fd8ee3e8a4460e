package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// newRecordingE2E runs a gateway that stores its decisions in the database,
// as in production.
func newRecordingE2E(t *testing.T, dbURL string, mutate ...func(*Config)) *e2e {
	t.Helper()
	cfg := testConfig(t, dbURL)
	for _, f := range mutate {
		f(&cfg)
	}
	m := startMain(t, cfg)
	if m.DecisionRecorder == nil {
		t.Fatal("the gateway has no database recorder")
	}
	return &e2e{t: t, m: m, client: webhookClient(t, m, nil)}
}

// sender sends reviews with unique uids and counts the answers, per kind.
type sender struct {
	e        *e2e
	prefix   string
	seq      atomic.Int64
	answered atomic.Int64 // 200s
	rejected atomic.Int64 // authenticated 4xx (wrong content type)
}

// send posts one review (every 5th with a bad Content-Type, which is
// rejected and recorded too) and reports whether it was answered.
func (s *sender) send() bool {
	n := s.seq.Add(1)
	uid := fmt.Sprintf("%s-%d", s.prefix, n)
	obj, ct := goodPod, "application/json"
	if n%3 == 0 {
		obj = noTeamPod
	}
	if n%5 == 0 {
		ct = "text/plain"
	}
	req, _ := http.NewRequest(http.MethodPost, s.e.m.WebhookURL()+"/t/acme/validate",
		strings.NewReader(podReview("admission.k8s.io/v1", uid, "default", obj, false)))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+s.e.token)
	resp, err := s.e.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		s.answered.Add(1)
	case http.StatusUnsupportedMediaType:
		s.rejected.Add(1)
	default:
		s.e.t.Errorf("answer %d", resp.StatusCode)
	}
	return true
}

// storedOnce checks that the database holds one decision per answered
// request of s: each uid once, and as many rejections as were answered.
func (s *sender) storedOnce(t *testing.T, dbURL string) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var rows, uids, rejected, dupIDs int64
	err = pool.QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE uid LIKE $1 || '-%'), count(DISTINCT uid) FILTER (WHERE uid LIKE $1 || '-%'),
		       count(*) FILTER (WHERE verdict = 'rejected'), count(*) - count(DISTINCT id)
		FROM decisions`, s.prefix).Scan(&rows, &uids, &rejected, &dupIDs)
	if err != nil {
		t.Fatal(err)
	}
	if rows != s.answered.Load() || uids != rows || rejected != s.rejected.Load() || dupIDs != 0 {
		t.Fatalf("stored %d decisions (%d uids, %d rejected, %d duplicate ids) for %d answered and %d rejected requests",
			rows, uids, rejected, dupIDs, s.answered.Load(), s.rejected.Load())
	}
	if s.answered.Load() == 0 || s.rejected.Load() == 0 {
		t.Fatal("nothing was answered")
	}
}

// Concurrent requests, then shutdown: one stored decision per request, and
// the store lists them.
func TestDecisionsStoredOncePerRequest(t *testing.T) {
	dbURL := pgtest.URL(t)
	e := newRecordingE2E(t, dbURL)
	e.onboard()
	s := &sender{e: e, prefix: "conc"}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				if !s.send() {
					t.Error("request failed")
					return
				}
			}
		}()
	}
	wg.Wait()

	// The admin API's view: denials of tenant acme by require-team.
	var page decisions.Page
	testutil.Eventually(t, 5*time.Second, "a denial to be stored", func() bool {
		var err error
		page, err = e.m.Decisions.List(context.Background(), e.tenant.ID, decisions.Filter{Verdict: "denied", Policy: "require-team", Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Items) > 0
	})
	if r := page.Items[0]; r.Tenant != "acme" || r.Cluster != "prod" || r.Instance != "test" || r.Code != 403 || len(r.Bindings) == 0 {
		t.Fatalf("stored decision %+v", r)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	s.storedOnce(t, dbURL)
}

// Requests keep coming while the gateway shuts down (SIGTERM): every
// request it answered is stored, none twice.
func TestDecisionsSurviveShutdown(t *testing.T) {
	dbURL := pgtest.URL(t)
	// A long flush interval would leave everything queued at shutdown; the
	// queue is small so that some decisions also overflow to disk.
	e := newRecordingE2E(t, dbURL, func(c *Config) { c.DecisionQueueSize = 16; c.DecisionBatchRows = 8 })
	e.onboard()
	s := &sender{e: e, prefix: "term"}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !s.send() {
					return // the listener is closed
				}
			}
		}()
	}
	// Shut down in full flow: the senders keep going until Close returns.
	testutil.Eventually(t, 0, "200 answered requests", func() bool { return s.answered.Load() >= 200 })
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	// Whatever overflowed to disk is replayed by the next process on this
	// state directory.
	cfg := e.m.Config
	next := startMain(t, cfg)
	waitSpillReplayed(t, next)
	s.storedOnce(t, dbURL)
}

// The database goes away mid-stream and comes back: the warm gateway keeps
// answering, spills, replays, and stores each answered request once.
func TestDecisionsSurviveDatabaseOutage(t *testing.T) {
	dbURL := pgtest.URL(t)
	e := newRecordingE2E(t, dbURL)
	e.onboard()
	s := &sender{e: e, prefix: "outage"}
	burst := func(n int) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					if !s.send() {
						t.Error("request failed")
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	burst(25)
	pgtest.StopServer(t)
	restarted := false
	defer func() {
		if !restarted {
			pgtest.StartServer(t)
		}
	}()
	burst(25)
	// The batch in flight when the server stopped may still be failing;
	// give the writer its flush interval.
	testutil.Eventually(t, time.Second, "decisions to spill while the database is down", func() bool {
		return gauge(t, e.m, "portcullis_decisions_spilled_total") > 0
	})
	pgtest.StartServer(t)
	restarted = true
	burst(25)
	waitSpillReplayed(t, e.m)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if d := gauge(t, e.m, "portcullis_decisions_dropped_total"); d != 0 {
		t.Fatalf("dropped %v", d)
	}
	s.storedOnce(t, dbURL)
}

// waitSpillReplayed waits until m's recorder has nothing left on disk.
func waitSpillReplayed(t *testing.T, m *Main) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, "the spilled decisions to be replayed", func() bool {
		return gauge(t, m, "portcullis_decisions_spill_bytes") == 0
	})
}

func gauge(t *testing.T, m *Main, name string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			if c := mf.GetMetric()[0].GetCounter(); c != nil {
				return c.GetValue()
			}
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// --decision-store=false keeps decisions out of the database.
func TestDecisionStoreOff(t *testing.T) {
	dbURL := pgtest.URL(t)
	cfg := testConfig(t, dbURL)
	cfg.DecisionStore = false
	e := &e2e{t: t, m: startMain(t, cfg)}
	e.client = webhookClient(t, e.m, nil)
	e.onboard()
	if e.m.DecisionRecorder != nil {
		t.Fatal("a database recorder with --decision-store=false")
	}
	s := &sender{e: e, prefix: "off"}
	for range 10 {
		s.send()
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM decisions").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d decisions stored (%v), want none", n, err)
	}
}
