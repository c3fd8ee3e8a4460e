package tenancy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/argon2"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// slowGate runs the argon2id verifications of basic auth, the one costly
// step of authentication, so that no caller can make another tenant wait.
//
// Measured before it existed: 100 wrong-password requests for one known
// username, abandoned by their callers after 1 s, delayed another tenant's
// first valid login by 6.9 s (one global queue that ignored the caller's
// context). Now:
//   - Requests with the same credential and password share one
//     verification (a flight): a flood of one wrong password costs one
//     argon2id, and its result is then cached.
//   - A flight waits for a slot of its tenant (tenantSlots) and then for a
//     global one (len(global)); a tenant never has more than tenantSlots
//     flights in the global queue, and that queue serves in order, so
//     another tenant waits for at most a few verifications.
//   - A tenant may have at most tenantQueue flights, a credential (a
//     username) credentialQueue; beyond that a request fails at once with
//     429, so a flood of different wrong passwords costs its own tenant's
//     queue and never piles up.
//   - A flight whose callers have all gone before its verification began is
//     dropped; one that began finishes and its result is cached.
//
// Unknown usernames are verified against a dummy hash in a tenant of their
// own (ID 0), under the same rules: a known and an unknown username take
// the same time, so the answer's timing does not say which usernames exist.
type slowGate struct {
	global                                    chan struct{}
	tenantSlots, tenantQueue, credentialQueue int

	mu          sync.Mutex
	tenants     map[int64]*tenantGate
	credentials map[string]int // flights per username
	flights     map[[32]byte]*flight

	verified atomic.Int64 // argon2id verifications run, for tests
}

type tenantGate struct {
	sem     chan struct{}
	flights int
}

// flight is one verification, shared by the requests that wait for it.
type flight struct {
	done    chan struct{}
	match   bool  // set before done is closed
	err     error // set before done is closed
	waiters int   // under slowGate.mu
	cancel  context.CancelFunc
}

func newSlowGate(global, tenantSlots, tenantQueue, credentialQueue int) *slowGate {
	return &slowGate{
		global:      make(chan struct{}, global),
		tenantSlots: tenantSlots, tenantQueue: tenantQueue, credentialQueue: credentialQueue,
		tenants:     map[int64]*tenantGate{},
		credentials: map[string]int{},
		flights:     map[[32]byte]*flight{},
	}
}

// slowCall is one verification to run: key identifies the credential and
// password (the HMAC of both), done caches its result.
type slowCall struct {
	key      [32]byte
	tenantID int64
	username string
	phc      string
	password string
	done     func(match bool)
}

func busy(what string) *fault.Error {
	return &fault.Error{Code: fault.TooManyRequests,
		Message: "too many password verifications are waiting for this credential's tenant; retry later",
		Reason:  "basic-auth queue full: " + what}
}

func abandoned(err error) *fault.Error {
	return &fault.Error{Code: fault.Unavailable, Message: "the password verification did not finish before the request ended",
		Reason: "basic-auth verification abandoned", Err: err}
}

// verify joins the flight of c.key, or starts one, and waits for its result
// or for ctx to end.
func (g *slowGate) verify(ctx context.Context, c slowCall) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, abandoned(err)
	}
	g.mu.Lock()
	f := g.flights[c.key]
	if f == nil {
		tg := g.tenants[c.tenantID]
		if tg == nil {
			tg = &tenantGate{sem: make(chan struct{}, g.tenantSlots)}
			g.tenants[c.tenantID] = tg
		}
		switch {
		case tg.flights >= g.tenantQueue:
			g.mu.Unlock()
			return false, busy("tenant")
		case g.credentials[c.username] >= g.credentialQueue:
			g.mu.Unlock()
			return false, busy("credential")
		}
		tg.flights++
		g.credentials[c.username]++
		fctx, cancel := context.WithCancel(context.Background())
		f = &flight{done: make(chan struct{}), cancel: cancel}
		g.flights[c.key] = f
		go g.run(fctx, f, tg, c)
	}
	f.waiters++
	g.mu.Unlock()

	select {
	case <-f.done:
		return f.match, f.err
	case <-ctx.Done():
		g.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			// Nobody waits: drop the flight unless its verification
			// began, and let a later request start afresh.
			f.cancel()
			if g.flights[c.key] == f {
				delete(g.flights, c.key)
			}
		}
		g.mu.Unlock()
		return false, abandoned(ctx.Err())
	}
}

func (g *slowGate) run(ctx context.Context, f *flight, tg *tenantGate, c slowCall) {
	defer func() {
		g.mu.Lock()
		if tg.flights--; tg.flights == 0 {
			delete(g.tenants, c.tenantID)
		}
		if g.credentials[c.username]--; g.credentials[c.username] == 0 {
			delete(g.credentials, c.username)
		}
		if g.flights[c.key] == f {
			delete(g.flights, c.key)
		}
		g.mu.Unlock()
		f.cancel()
		close(f.done)
	}()
	if !acquire(ctx, tg.sem) {
		f.err = abandoned(ctx.Err())
		return
	}
	defer func() { <-tg.sem }()
	if !acquire(ctx, g.global) {
		f.err = abandoned(ctx.Err())
		return
	}
	defer func() { <-g.global }()
	g.verified.Add(1)
	match, err := verifyPassword(c.phc, c.password)
	f.match = err == nil && match
	c.done(f.match)
}

// acquire takes a slot of sem unless ctx ends first; a slot taken as ctx
// ended is given back.
func acquire(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		if ctx.Err() != nil {
			<-sem
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// unknownTenant is the tenant of the flights for unknown usernames; real
// tenant IDs start at 1.
const unknownTenant = 0

// dummyPHC is a hash with the parameters of real ones and random contents:
// verifying any password against it costs what a real verification costs
// and never matches.
var dummyPHC = sync.OnceValue(func() string {
	var salt, key [argonKeyLen]byte
	_, _ = rand.Read(salt[:16])
	_, _ = rand.Read(key[:])
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt[:16]), base64.RawStdEncoding.EncodeToString(key[:]))
})
