package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/limits"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// A tenant over one of its limits gets what the apiserver handles well:
// 429 with Retry-After (the webhook's failurePolicy decides) for its rate
// and concurrency, the apiserver's own out-of-budget error for its CEL
// cost. Each refusal is counted by tenant and limit.
func TestTenantLimits(t *testing.T) {
	send := func(f *fixture, query string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/t/acme/validate"+query, strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer good")
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		return rec
	}
	tooMany := func(t *testing.T, rec *httptest.ResponseRecorder, what string) {
		t.Helper()
		ra, err := strconv.Atoi(rec.Header().Get("Retry-After"))
		if rec.Code != http.StatusTooManyRequests || err != nil || ra < 1 ||
			!strings.Contains(rec.Body.String(), string(metav1.StatusReasonTooManyRequests)) || !strings.Contains(rec.Body.String(), what) {
			t.Fatalf("%d Retry-After %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Run("requests per second", func(t *testing.T) {
		f := newFixture(t)
		f.h.Limits = limits.NewLimiter(limits.Limits{RequestsPerSecond: 1}, nil, logger)
		f.h.Limits.CountClusters(func(int64) int { return 1 })
		if rec := send(f, ""); rec.Code != 200 {
			t.Fatalf("first request: %d %s", rec.Code, rec.Body)
		}
		tooMany(t, send(f, ""), "1 requests per second")
		if got := testutil.ToFloat64(f.h.Metrics.Limited().WithLabelValues("acme", limits.LimitRate)); got != 1 {
			t.Fatalf("limited metric = %v", got)
		}
		if d := f.recorded[1]; d.HTTPStatus != 429 || d.TenantName != "acme" {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("concurrent evaluations", func(t *testing.T) {
		f := newFixture(t)
		f.h.Limits = limits.NewLimiter(limits.Limits{ConcurrentEvaluations: 1}, nil, logger)
		f.h.Limits.CountClusters(func(int64) int { return 1 })
		release, _, err := f.h.Limits.Acquire(context.Background(), 7, 3)
		if err != nil {
			t.Fatal(err)
		}
		// The request waits for the slot until its deadline.
		tooMany(t, send(f, "?timeout=200ms"), "1 concurrent evaluations")
		release()
		if rec := send(f, ""); rec.Code != 200 {
			t.Fatalf("after the slot was released: %d %s", rec.Code, rec.Body)
		}
		if got := testutil.ToFloat64(f.h.Metrics.Limited().WithLabelValues("acme", limits.LimitConcurrency)); got != 1 {
			t.Fatalf("limited metric = %v", got)
		}
	})

	t.Run("expensive tenants evaluate on the low-priority lane", func(t *testing.T) {
		f := newFixture(t)
		f.h.Limits = limits.NewLimiter(limits.Limits{}, nil, logger)
		lane := limits.NewLane(1, logger)
		t.Cleanup(lane.Close)
		// Every evaluation of the fixture's policies costs more than 1:
		// the first moves the tenant to the lane.
		f.h.Limits.UseLane(lane, 1)
		first := send(f, "")
		if first.Code != 200 {
			t.Fatalf("first request: %d %s", first.Code, first.Body)
		}
		if !f.h.Limits.OnLane(7) {
			t.Fatal("the tenant is not on the lane after an evaluation over the threshold")
		}
		second := send(f, "")
		a := check(t, "admission.k8s.io/v1", "u", first.Body.Bytes())
		b := check(t, "admission.k8s.io/v1", "u", second.Body.Bytes())
		if second.Code != 200 || !reflect.DeepEqual(a, b) {
			t.Fatalf("on the lane the answer changed: %d %+v, before %+v", second.Code, b, a)
		}
		if got := testutil.ToFloat64(lane.Collectors()[0]); got != 1 {
			t.Fatalf("low-priority evaluations = %v, want 1", got)
		}
		// With the lane's only worker busy past the request's deadline:
		// 429, counted as the lane's limit.
		busy, free := make(chan struct{}), make(chan struct{})
		go func() { _ = lane.Run(context.Background(), func() { close(busy); <-free }) }()
		<-busy
		tooMany(t, send(f, "?timeout=200ms"), "low-priority lane")
		close(free)
		if got := testutil.ToFloat64(f.h.Metrics.Limited().WithLabelValues("acme", limits.LimitLane)); got != 1 {
			t.Fatalf("limited metric = %v", got)
		}
	})

	t.Run("CEL cost per request", func(t *testing.T) {
		f := newFixture(t)
		f.h.Limits = limits.NewLimiter(limits.Limits{CELCostPerRequest: 1}, nil, logger)
		rec := send(f, "")
		resp := check(t, "admission.k8s.io/v1", "u", rec.Body.Bytes())
		if resp.Allowed || !strings.Contains(resp.Result.Message, "running out of cost budget") {
			t.Fatalf("over the cost limit: %+v", resp.Result)
		}
		if got := testutil.ToFloat64(f.h.Metrics.Limited().WithLabelValues("acme", limits.LimitCost)); got != 1 {
			t.Fatalf("limited metric = %v", got)
		}
	})
}

// A tenant's cluster whose URL secret leaked cannot use up the tenant's
// rate: its flood is refused at its share, counted by cluster, and a
// sibling cluster's request still passes (issue 30, finding 2).
func TestOneClusterCannotStarveItsSiblings(t *testing.T) {
	f := newFixture(t)
	f.h.Authenticate = func(r *http.Request) (tenancy.Identity, error) {
		if r.Header.Get("Authorization") == "Bearer flood" {
			return tenancy.Identity{TenantID: 7, TenantName: "acme", ClusterID: 3, ClusterName: "leaked"}, nil
		}
		return tenancy.Identity{TenantID: 7, TenantName: "acme", ClusterID: 4, ClusterName: "sibling"}, nil
	}
	// Two a second: the flood's share is one.
	f.h.Limits = limits.NewLimiter(limits.Limits{RequestsPerSecond: 2}, nil, slog.New(slog.DiscardHandler))
	send := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(review("admission.k8s.io/v1", "u", "pods", "CREATE", goodPod, false)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		return rec
	}
	refused := 0
	for range 5 {
		if send("flood").Code == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused < 3 {
		t.Fatalf("the flood was refused %d times of 5", refused)
	}
	if rec := send("sibling"); rec.Code != 200 {
		t.Fatalf("the sibling cluster: %d %s", rec.Code, rec.Body)
	}
	if n, err := testutil.GatherAndCount(f.reg, "portcullis_webhook_cluster_limited_total"); err != nil || n != 1 {
		t.Fatalf("cluster_limited series: %d, %v", n, err)
	}
	if got := testutil.ToFloat64(f.h.Metrics.Limited().WithLabelValues("acme", "cluster_requests_per_second")); got < 3 {
		t.Fatalf("tenant_limited{limit=cluster_requests_per_second} = %v", got)
	}
}
