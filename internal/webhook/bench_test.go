package webhook_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/decisions"
)

// discard drops decisions, so the benchmark measures the handler alone.
type discard struct{}

func (discard) Record(*decisions.Decision) {}

// BenchmarkServeHTTP is one allowed Pod CREATE through the whole handler:
// authentication, decoding, evaluation, encoding, metrics and hand-off.
func BenchmarkServeHTTP(b *testing.B) {
	f := newFixture(b)
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
