package ui

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// throttle slows down repeated failed sign-ins from one client address:
// after freeFailures failures, each further attempt must wait twice as
// long as the one before, up to maxLockout. A success clears the count.
// It counts in this replica's memory: with n admin replicas behind a load
// balancer, a client gets up to n times the attempts (docs/ui.md). That
// is the price of keeping a failed sign-in from writing to the database.
type throttle struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*failures
}

type failures struct {
	n     int
	until time.Time
	last  time.Time
}

const (
	freeFailures = 3
	maxLockout   = 5 * time.Minute
	// maxTracked bounds the memory an attacker with many addresses can
	// make the throttle use.
	maxTracked = 100_000
)

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, m: map[string]*failures{}}
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// wait is how long the client must still wait before trying again.
func (t *throttle) wait(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[addr]
	if f == nil {
		return 0
	}
	return max(0, f.until.Sub(t.now()))
}

func (t *throttle) fail(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.m) >= maxTracked {
		for a, f := range t.m {
			if now.Sub(f.last) > maxLockout {
				delete(t.m, a)
			}
		}
	}
	f := t.m[addr]
	if f == nil {
		f = &failures{}
		t.m[addr] = f
	}
	f.n++
	f.last = now
	if f.n > freeFailures {
		d := time.Second << min(f.n-freeFailures-1, 16)
		f.until = now.Add(min(d, maxLockout))
	}
}

func (t *throttle) succeed(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, addr)
}
