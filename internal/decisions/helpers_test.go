package decisions

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var uidSeq atomic.Int64

// decision returns an allowed decision of tenant 1 at t.
func decision(t time.Time) *Decision {
	n := uidSeq.Add(1)
	return &Decision{
		ID: uuid.Must(uuid.NewV7()).String(), Time: t.UTC(), Instance: "test",
		TenantID: 1, TenantName: "acme", ClusterID: 10, ClusterName: "prod",
		UID: fmt.Sprintf("uid-%d", n), Operation: "CREATE", Version: "v1", Resource: "pods",
		Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("web-%d", n),
		UserName: "alice", UserGroups: []string{"system:authenticated"},
		Verdict: VerdictAllowed, HTTPStatus: 200, SnapshotVersion: 3, Latency: 1500 * time.Microsecond,
		Bindings: []BindingRecord{{Policy: "require-team", Binding: "require-team", Outcome: "Pass"}},
	}
}

// denied makes d a denial by policy.
func denied(d *Decision, policy string) *Decision {
	d.Verdict, d.Code, d.Reason, d.Message = VerdictDenied, 403, "Forbidden", "denied by "+policy
	d.Bindings = append(d.Bindings, BindingRecord{Policy: policy, Binding: policy, Outcome: "Violation",
		Denied: true, Messages: []string{"no"}})
	return d
}

type fixture struct {
	pool *pgxpool.Pool
	reg  *prometheus.Registry
	dir  string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return &fixture{pool: pgtest.Pool(t), reg: prometheus.NewRegistry(), dir: t.TempDir()}
}

func (f *fixture) recorder(t testing.TB, mutate ...func(*RecorderConfig)) *PGRecorder {
	t.Helper()
	cfg := RecorderConfig{Pool: f.pool, SpillDir: f.dir, Registerer: f.reg,
		FlushInterval: 20 * time.Millisecond, RetryInterval: 50 * time.Millisecond, WriteTimeout: 2 * time.Second}
	for _, m := range mutate {
		m(&cfg)
	}
	r, err := NewPGRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// rows returns how many decisions are stored and how many distinct ids.
func (f *fixture) rows(t testing.TB) (n, distinct int) {
	t.Helper()
	err := f.pool.QueryRow(context.Background(), "SELECT count(*), count(DISTINCT id) FROM decisions").Scan(&n, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	return n, distinct
}

// waitRows waits until want rows are stored, and fails at once if any id
// repeats or there are more.
func (f *fixture) waitRows(t *testing.T, want int) {
	t.Helper()
	n, done := 0, false
	defer func() {
		if !done { // Eventually gave up: say how far it got
			t.Logf("%d rows stored, want %d", n, want)
		}
	}()
	testutil.Eventually(t, 0, fmt.Sprintf("%d rows", want), func() bool {
		var distinct int
		n, distinct = f.rows(t)
		if n != distinct {
			t.Fatalf("%d rows but %d distinct ids", n, distinct)
		}
		if n > want {
			t.Fatalf("%d rows stored, want %d", n, want)
		}
		return n == want
	})
	done = true
}

// insert stores decisions directly.
func (f *fixture) insert(t *testing.T, ds ...*Decision) {
	t.Helper()
	for _, d := range ds {
		normalize(d)
	}
	if err := copyBatch(context.Background(), f.pool, ds); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) counter(t testing.TB, name string) int {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.Counter != nil {
				return int(m.Counter.GetValue())
			}
			return int(m.Gauge.GetValue())
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
