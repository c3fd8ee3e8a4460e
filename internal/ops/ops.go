// Package ops serves the plain-HTTP operations endpoints: /livez, /readyz
// and /metrics.
package ops

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Health collects readiness checks from the components of a process.
type Health struct {
	mu     sync.RWMutex
	checks map[string]func(context.Context) error
}

// NewHealth returns an empty set of checks: ready until one is added.
func NewHealth() *Health { return &Health{checks: map[string]func(context.Context) error{}} }

// AddReadyCheck registers a named check; /readyz fails while any fails.
func (h *Health) AddReadyCheck(name string, check func(context.Context) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks[name] = check
}

// Ready runs every check and returns the failures by name.
func (h *Health) Ready(ctx context.Context) map[string]error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	failed := map[string]error{}
	for name, check := range h.checks {
		if err := check(ctx); err != nil {
			failed[name] = err
		}
	}
	return failed
}

// Handler serves /livez, /readyz and /metrics (from reg).
func (h *Health) Handler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		failed := h.Ready(ctx)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if len(failed) == 0 {
			fmt.Fprintln(w, "ok")
			return
		}
		names := make([]string, 0, len(failed))
		for n := range failed {
			names = append(names, n)
		}
		sort.Strings(names)
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "%s: %v\n", n, failed[n])
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, b.String())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

// RequireBearer answers 401 on path unless the request carries
// "Authorization: Bearer <token>"; other paths pass. The probes stay open:
// the kubelet sends no token.
func RequireBearer(path, token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path {
			got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			// Hashes of equal length: the comparison's time says nothing
			// about the token.
			sum := sha256.Sum256([]byte(got))
			if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				http.Error(w, "a bearer token is required for "+path, http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
