// Package authmiss bounds what credentials that turn out unknown (admin
// tokens, UI session ids) cost the database. Looking one up is a plain
// read (adminauth), and this package rate-limits those reads:
//
//   - a credential found unknown is remembered for a minute, so that a
//     client retrying one wrong token or an expired session's cookie costs
//     one lookup, not one per request;
//   - each client address may have Burst lookups that found nothing, then
//     one per Every; beyond that a credential this replica has not seen
//     valid is refused (429 with Retry-After) without a lookup;
//   - a credential seen valid in the last hour is always looked up (its
//     revocation is checked as usual), so that the users of an address
//     that another client floods (everyone behind one proxy) keep working.
//
// Memory is bounded: each table keeps at most Max entries, forgetting the
// least recently used in O(1).
package authmiss

import (
	"container/list"
	"math"
	"sync"
	"time"
)

// Verdict is what to do with a presented credential.
type Verdict int

const (
	// Lookup: look the credential up, then report Miss or Hit.
	Lookup Verdict = iota
	// Unknown: the credential was found unknown within the last minute;
	// answer as for an unknown one, without a lookup.
	Unknown
	// Limited: the address has used up its lookups; answer 429 with
	// Retry-After, without a lookup.
	Limited
)

// Defaults of a Limiter.
const (
	DefaultBurst = 20
	DefaultEvery = time.Second
	DefaultMax   = 100_000
	unknownFor   = time.Minute
	validFor     = time.Hour
)

// Limiter is safe for concurrent use. Build it with New; a nil Limiter
// limits nothing.
type Limiter struct {
	now   func() time.Time
	burst float64
	every time.Duration

	mu      sync.Mutex
	addrs   *lru[string, bucket]
	unknown *lru[[32]byte, time.Time] // until
	valid   *lru[[32]byte, time.Time] // until
}

type bucket struct {
	tokens float64
	at     time.Time
}

// New returns a limiter with burst misses per address, one more per every,
// and at most max entries per table; zeros take the defaults, and a nil
// now is time.Now.
func New(now func() time.Time, burst int, every time.Duration, max int) *Limiter {
	if now == nil {
		now = time.Now
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	if every <= 0 {
		every = DefaultEvery
	}
	if max <= 0 {
		max = DefaultMax
	}
	return &Limiter{now: now, burst: float64(burst), every: every,
		addrs: newLRU[string, bucket](max), unknown: newLRU[[32]byte, time.Time](max), valid: newLRU[[32]byte, time.Time](max)}
}

// Check says what to do with credential key (its SHA-256) from addr; for
// Limited, also how long to wait.
func (l *Limiter) Check(addr string, key [32]byte) (Verdict, time.Duration) {
	if l == nil {
		return Lookup, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if until, ok := l.unknown.get(key); ok && now.Before(until) {
		return Unknown, 0
	}
	if until, ok := l.valid.get(key); ok && now.Before(until) {
		return Lookup, 0
	}
	b, ok := l.addrs.get(addr)
	if !ok {
		return Lookup, 0
	}
	b = l.refill(b, now)
	if b.tokens >= 1 {
		return Lookup, 0
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) * float64(l.every)))
	return Limited, wait
}

// Miss records that key, presented from addr, was looked up and unknown.
func (l *Limiter) Miss(addr string, key [32]byte) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.unknown.put(key, now.Add(unknownFor))
	b, ok := l.addrs.get(addr)
	if !ok {
		b = bucket{tokens: l.burst, at: now}
	}
	b = l.refill(b, now)
	b.tokens = max(b.tokens-1, 0)
	l.addrs.put(addr, b)
}

// Hit records that key was looked up and valid.
func (l *Limiter) Hit(key [32]byte) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.valid.put(key, l.now().Add(validFor))
	l.unknown.remove(key)
}

func (l *Limiter) refill(b bucket, now time.Time) bucket {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+float64(d)/float64(l.every))
		b.at = now
	}
	return b
}

// lru is a map of at most max entries that forgets the least recently
// used one when full. Not safe for concurrent use.
type lru[K comparable, V any] struct {
	max   int
	m     map[K]*list.Element
	order list.List // of *entry[K, V], the most recent first
}

type entry[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, m: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	if e, ok := c.m[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*entry[K, V]).v, true
	}
	var zero V
	return zero, false
}

func (c *lru[K, V]) put(k K, v V) {
	if e, ok := c.m[k]; ok {
		e.Value.(*entry[K, V]).v = v
		c.order.MoveToFront(e)
		return
	}
	for len(c.m) >= c.max {
		delete(c.m, c.order.Remove(c.order.Back()).(*entry[K, V]).k)
	}
	c.m[k] = c.order.PushFront(&entry[K, V]{k, v})
}

func (c *lru[K, V]) remove(k K) {
	if e, ok := c.m[k]; ok {
		c.order.Remove(e)
		delete(c.m, k)
	}
}

func (c *lru[K, V]) len() int { return len(c.m) }
