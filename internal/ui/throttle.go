package ui

import (
	lru "container/list"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// throttle slows down repeated failed sign-ins. A failure counts against
// two keys: the client address and the presented token's id prefix
// (tokenKey). After freeFailures failures of a key, each further failure
// locks it twice as long as the one before, up to maxLockout; a key quiet
// for maxLockout starts over.
//
// It only ever refuses a failed sign-in (login checks the token first): a
// valid token always signs in, so that one client behind the same proxy
// as everyone else (one address for all) cannot lock the others out, and
// a user who mistyped their token is not held back once they get it right.
// What the lockout buys is that a failing client is told to wait
// (429 with Retry-After) rather than to try again.
//
// It counts in this replica's memory: with n admin replicas behind a load
// balancer, a client gets up to n times the attempts (docs/ui.md). That
// is the price of keeping a failed sign-in from writing to the database.
type throttle struct {
	now func() time.Time
	// max bounds the keys tracked, so that an attacker with many
	// addresses or tokens cannot make the throttle use unbounded memory;
	// beyond it the key that failed least recently is forgotten, in O(1)
	// (no scan of the map under the lock).
	max   int
	mu    sync.Mutex
	m     map[string]*lru.Element
	order lru.List // of *failures, the most recent failure first
}

type failures struct {
	key   string
	n     int
	until time.Time
	last  time.Time
}

const (
	freeFailures = 3
	maxLockout   = 5 * time.Minute
	// maxTracked is the default bound of tracked keys: two per failure,
	// about 200 bytes each.
	maxTracked = 100_000
)

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, max: maxTracked, m: map[string]*lru.Element{}}
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// tokenIDLen is how much of a token, after its pcadm_ prefix, names it in
// the throttle: 8 base64url characters, 48 bits, enough that two users'
// tokens do not share a key, and a short mistyping of one token (its end)
// still counts against the same key.
const tokenIDLen = 8

// addrKey and tokenKey are the throttle's keys of a sign-in; tokenKey is
// empty when the token has no id to key on.
func addrKey(addr string) string { return "addr:" + addr }

func tokenKey(token string) string {
	id, ok := strings.CutPrefix(token, "pcadm_")
	if !ok || len(id) < tokenIDLen {
		return ""
	}
	return "token:" + id[:tokenIDLen]
}

// wait is how long the longest lockout of keys still lasts.
func (t *throttle) wait(keys ...string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var d time.Duration
	for _, k := range keys {
		if e := t.m[k]; e != nil {
			d = max(d, e.Value.(*failures).until.Sub(now))
		}
	}
	return d
}

// fail counts a failure against each non-empty key.
func (t *throttle) fail(keys ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, k := range keys {
		if k == "" {
			continue
		}
		var f *failures
		if e := t.m[k]; e != nil {
			f = e.Value.(*failures)
			t.order.MoveToFront(e)
			if now.Sub(f.last) > maxLockout {
				f.n, f.until = 0, time.Time{}
			}
		} else {
			for len(t.m) >= t.max {
				oldest := t.order.Back()
				delete(t.m, t.order.Remove(oldest).(*failures).key)
			}
			f = &failures{key: k}
			t.m[k] = t.order.PushFront(f)
		}
		f.n++
		f.last = now
		if f.n > freeFailures {
			d := time.Second << min(f.n-freeFailures-1, 16)
			f.until = now.Add(min(d, maxLockout))
		}
	}
}

// succeed forgets key's failures.
func (t *throttle) succeed(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[key]; e != nil {
		t.order.Remove(e)
		delete(t.m, key)
	}
}
