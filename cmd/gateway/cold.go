package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// coldRetryAfter is the Retry-After of a cold replica's 503, in seconds:
// the longest wait between two attempts to reach the database.
const coldRetryAfter = "5"

// coldGate answers every request with 503 until open is called, then hands
// them to next. The webhook and admin listeners serve through one from the
// moment they are bound: a replica that has not reached its database yet
// answers at once, so an apiserver's failurePolicy decides now instead of
// after its whole timeout (a bound listener that nobody serves accepts
// connections and never answers).
type coldGate struct {
	next    http.Handler
	message string
	opened  atomic.Bool
}

func (g *coldGate) open() { g.opened.Store(true) }

// servingCheck fails /readyz until the webhook gate opens. Between reaching
// the database and opening the gate, a replica loads its credentials and
// warms its policy cache (seconds with many tenants); without this check
// /readyz said ready then, and a load balancer sent it requests it
// answered 503 (seen in drill 6, docs/production.md).
func (m *Main) servingCheck(context.Context) error {
	if m.webhookGate == nil || !m.webhookGate.opened.Load() {
		return errors.New("not serving yet: loading credentials and policies")
	}
	return nil
}

func (g *coldGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.opened.Load() {
		g.next.ServeHTTP(w, r)
		return
	}
	st := fault.Status(fault.Errorf(fault.Unavailable, "%s", g.message))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Retry-After", coldRetryAfter)
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

// Messages of a cold replica.
const (
	coldWebhookMessage = "this gateway replica has not reached its database yet; the apiserver's failurePolicy for this webhook applies"
	coldAdminMessage   = "this gateway replica has not reached its database yet; retry later"
)
