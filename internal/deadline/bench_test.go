package deadline

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkOverhead is what the deadline costs a request on top of its
// handler: a goroutine, a timer and a copy of the answer (a typical
// webhook answer is a few hundred bytes).
func BenchmarkOverhead(b *testing.B) {
	answer := make([]byte, 400)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", next},
		{"deadline", &Handler{Next: next, Timeout: 50 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest("POST", "/t/a/validate", nil)
			b.ReportAllocs()
			for b.Loop() {
				tc.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
