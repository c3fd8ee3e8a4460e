package webhook_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/telemetry"
)

// discard drops decisions, so the benchmark measures the handler alone.
type discard struct{}

func (discard) Record(*decisions.Decision) {}

// BenchmarkServeHTTP is one allowed Pod CREATE through the whole handler:
// authentication, decoding, evaluation, encoding, metrics and hand-off,
// wired as the gateway does without --otlp-endpoint.
func BenchmarkServeHTTP(b *testing.B) {
	f := newFixture(b)
	tr := telemetry.Disabled()
	f.h.Tracer, f.h.Propagator = tr.Provider.Tracer("bench"), tr.Propagator
	benchServe(b, f)
}

// BenchmarkServeHTTPTraced is the same request with every span sampled
// and kept in memory: the price of tracing when it is on.
func BenchmarkServeHTTPTraced(b *testing.B) {
	f := newFixture(b)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	b.Cleanup(func() { _ = tp.Shutdown(b.Context()) })
	f.h.Tracer, f.h.Propagator = tp.Tracer("bench"), telemetry.Disabled().Propagator
	benchServe(b, f)
	if len(exp.GetSpans()) == 0 {
		b.Fatal("no spans recorded")
	}
}

func benchServe(b *testing.B, f *fixture) {
	f.h.Recorder = discard{}
	body := review("admission.k8s.io/v1", "u1", "pods", "CREATE", goodPod, false)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/t/acme/validate", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer good")
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
