package tenancy

import (
	"crypto/rand"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AuthOptions tune an Authenticator. Zero values take the defaults.
type AuthOptions struct {
	Logger *slog.Logger
	// ResyncInterval is how often the whole credential set is reloaded, as a
	// safety net behind NOTIFY. Default 15 s.
	ResyncInterval time.Duration
	// UsageFlushInterval is how often last_used_at is written. Default 10 s.
	UsageFlushInterval time.Duration
	// NegativeCacheTTL bounds how long a wrong basic-auth password is
	// remembered, so that a retrying apiserver does not cost an argon2id
	// verification per request. Default 30 s.
	NegativeCacheTTL time.Duration
	// BasicSlots bounds the argon2id verifications of basic-auth passwords
	// that run at once, whatever the tenant. Default GOMAXPROCS/2, at
	// least 1: each costs a core and 19 MiB.
	BasicSlots int
	// BasicTenantSlots bounds those of one tenant. Default 1, so that a
	// tenant never holds more than one place in the global queue.
	BasicTenantSlots int
	// BasicTenantQueue bounds the verifications of one tenant that run or
	// wait; beyond it a request is answered 429 at once. Default 16.
	BasicTenantQueue int
	// BasicCredentialQueue is the same bound for one username (distinct
	// passwords: requests with the same password share a verification).
	// Default 2.
	BasicCredentialQueue int
	// Now is the clock that expiries are checked against; nil is
	// time.Now. A test sets it to move past an expiry without sleeping.
	Now func() time.Time
}

// Authenticator authenticates webhook requests against every live
// credential, held in memory.
//
// The whole set of credentials that are not revoked is loaded at start and
// reloaded on every NOTIFY on Channel, after every reconnect of the listener
// and every ResyncInterval. A lookup is therefore a map access: a known
// credential is a positive hit and an unknown one a negative hit, and neither
// touches Postgres. A revocation or deletion announced by NOTIFY takes effect
// as soon as it arrives, before the reload that follows it.
type Authenticator struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	opts   AuthOptions
	now    func() time.Time

	snap   atomic.Pointer[snapshot]
	loadMu sync.Mutex // one Load at a time, so loads publish in order

	// basicKey keys the HMAC under which verified basic-auth passwords are
	// remembered, so memory never holds a fast hash of a password that
	// could be attacked offline without also holding this key.
	basicKey [32]byte
	basicBad *expirable.LRU[[32]byte, struct{}]
	slow     *slowGate // runs the argon2id verifications

	mu         sync.Mutex
	tombstones map[string]time.Time // "credential:1", "cluster:2", "tenant:3" -> when heard
	reloadReq  chan struct{}
}

// snapshot is one immutable load of the credential set. Only the atomic
// fields of its entries change after it is published.
type snapshot struct {
	tokens map[[32]byte]*entry // SHA-256 of the token
	certs  map[[32]byte]*entry // SHA-256 of the certificate's DER
	basic  map[string]*entry   // username
	urls   map[[32]byte]*entry // SHA-256 of the URL secret
	byID   map[int64]*entry
	// clusters counts each tenant's clusters that have a live credential.
	clusters map[int64]int
	loadedAt time.Time
}

type entry struct {
	id        Identity
	hash      [32]byte // token hash or fingerprint
	phc       string   // basic: argon2id hash
	expiresAt time.Time
	revoked   atomic.Bool
	usage     *usage
	// basicOK is the HMAC of the last password verified for this entry.
	basicOK atomic.Pointer[[32]byte]
}

// NewAuthenticator returns an authenticator on pool. Call Subscribe before
// the listener runs, then Run.
func NewAuthenticator(pool *pgxpool.Pool, opts AuthOptions) *Authenticator {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = 15 * time.Second
	}
	if opts.UsageFlushInterval <= 0 {
		opts.UsageFlushInterval = 10 * time.Second
	}
	if opts.NegativeCacheTTL <= 0 {
		opts.NegativeCacheTTL = 30 * time.Second
	}
	if opts.BasicSlots <= 0 {
		opts.BasicSlots = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if opts.BasicTenantSlots <= 0 {
		opts.BasicTenantSlots = 1
	}
	if opts.BasicTenantQueue <= 0 {
		opts.BasicTenantQueue = 16
	}
	if opts.BasicCredentialQueue <= 0 {
		opts.BasicCredentialQueue = 2
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Authenticator{
		pool:       pool,
		logger:     opts.Logger,
		opts:       opts,
		now:        opts.Now,
		basicBad:   expirable.NewLRU[[32]byte, struct{}](4096, nil, opts.NegativeCacheTTL),
		slow:       newSlowGate(opts.BasicSlots, opts.BasicTenantSlots, opts.BasicTenantQueue, opts.BasicCredentialQueue),
		tombstones: map[string]time.Time{},
		reloadReq:  make(chan struct{}, 1),
	}
	_, _ = rand.Read(a.basicKey[:])
	return a
}

// Ready reports whether the credentials have been loaded at least once.
func (a *Authenticator) Ready() bool { return a.snap.Load() != nil }

// LoadedAt is when the credentials in use were read from Postgres (zero
// before the first load). Its age tells how stale the cache may be.
func (a *Authenticator) LoadedAt() time.Time {
	if s := a.snap.Load(); s != nil {
		return s.loadedAt
	}
	return time.Time{}
}
