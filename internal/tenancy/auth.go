package tenancy

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// Messages sent to clients. They are the same whatever the reason, and never
// depend on whether the tenant in the path exists.
const (
	msgUnauthenticated = "invalid or missing credentials"
	msgForbidden       = "the credential is not valid for this tenant"
	msgUnavailable     = "authentication data is not loaded yet"
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
	basicKey  [32]byte
	basicBad  *expirable.LRU[[32]byte, struct{}]
	basicSlow chan struct{} // bounds concurrent argon2id verifications

	mu         sync.Mutex
	tombstones map[string]time.Time // "credential:1", "cluster:2", "tenant:3" -> when heard
	reloadReq  chan struct{}
}

// snapshot is one immutable load of the credential set. Only the atomic
// fields of its entries change after it is published.
type snapshot struct {
	tokens   map[[32]byte]*entry // SHA-256 of the token
	certs    map[[32]byte]*entry // SHA-256 of the certificate's DER
	basic    map[string]*entry   // username
	byID     map[int64]*entry
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

// usage records the last successful use, carried from snapshot to snapshot.
type usage struct {
	last    atomic.Int64 // unix nanoseconds
	flushed atomic.Int64
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
	a := &Authenticator{
		pool:       pool,
		logger:     opts.Logger,
		opts:       opts,
		now:        time.Now,
		basicBad:   expirable.NewLRU[[32]byte, struct{}](4096, nil, opts.NegativeCacheTTL),
		basicSlow:  make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
		tombstones: map[string]time.Time{},
		reloadReq:  make(chan struct{}, 1),
	}
	_, _ = rand.Read(a.basicKey[:])
	return a
}

// Subscribe registers the authenticator with the process's listener: a
// revocation or deletion takes effect on arrival, and any change, or a
// reconnect (notifications may have been lost), triggers a reload.
func (a *Authenticator) Subscribe(l *pgnotify.Listener) {
	l.Subscribe(Channel, a.notified)
	l.OnConnect(a.requestReload)
}

// notified handles one payload. It runs on the listener's goroutine and
// never blocks.
func (a *Authenticator) notified(payload string) {
	kind, idStr, ok := strings.Cut(payload, ":")
	if ok {
		if id, err := strconv.ParseInt(idStr, 10, 64); err == nil {
			a.forget(kind, id)
		}
	}
	a.requestReload()
}

// forget marks revoked, at once, every cached credential that a revocation
// or deletion of (kind, id) covers, and remembers it until a reload that
// began after it has been applied, so that a reload racing with the
// revocation cannot bring the credential back.
func (a *Authenticator) forget(kind string, id int64) {
	switch kind {
	case "credential", "cluster", "tenant":
	default:
		return
	}
	a.mu.Lock()
	a.tombstones[kind+":"+strconv.FormatInt(id, 10)] = a.now()
	a.mu.Unlock()
	if s := a.snap.Load(); s != nil {
		s.applyTombstone(kind, id)
	}
}

func (s *snapshot) applyTombstone(kind string, id int64) {
	if kind == "credential" {
		if e := s.byID[id]; e != nil {
			e.revoked.Store(true)
		}
		return
	}
	for _, e := range s.byID {
		if (kind == "cluster" && e.id.ClusterID == id) || (kind == "tenant" && e.id.TenantID == id) {
			e.revoked.Store(true)
		}
	}
}

func (a *Authenticator) requestReload() {
	select {
	case a.reloadReq <- struct{}{}:
	default: // a reload is already pending; it will see this change too
	}
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

// Run loads the credentials, then reloads them on demand and every
// ResyncInterval, and writes last_used_at every UsageFlushInterval, until ctx
// ends. A failed reload keeps the last good set. It returns nil when ctx ends,
// after a final flush of usage.
func (a *Authenticator) Run(ctx context.Context) error {
	resync := time.NewTicker(a.opts.ResyncInterval)
	defer resync.Stop()
	flush := time.NewTicker(a.opts.UsageFlushInterval)
	defer flush.Stop()
	a.requestReload()
	backoff := time.Duration(0)
	for {
		var retry <-chan time.Time
		if backoff > 0 {
			retry = time.After(backoff)
		}
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := a.FlushUsage(fctx); err != nil {
				a.logger.Warn("tenancy: final last_used_at flush failed", "error", err)
			}
			return nil
		case <-a.reloadReq:
		case <-resync.C:
		case <-retry:
		case <-flush.C:
			if err := a.FlushUsage(ctx); err != nil && ctx.Err() == nil {
				a.logger.Warn("tenancy: last_used_at flush failed; will retry", "error", err)
			}
			continue
		}
		if err := a.Load(ctx); err != nil {
			if ctx.Err() != nil {
				continue
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			a.logger.Warn("tenancy: credential reload failed; serving the last loaded set",
				"error", err, "loaded_at", a.LoadedAt(), "retry_in", backoff.String())
			continue
		}
		backoff = 0
	}
}

// Load reads every credential that is not revoked and publishes them. Run
// calls it; tests may call it directly.
func (a *Authenticator) Load(ctx context.Context) error {
	a.loadMu.Lock()
	defer a.loadMu.Unlock()
	started := a.now()
	rows, err := a.pool.Query(ctx, `
		SELECT cr.id, cr.type, cr.token_hash, cr.fingerprint, cr.username, cr.password_hash, cr.expires_at,
		       t.id, t.name, c.id, c.name, c.labels
		FROM credentials cr
		JOIN clusters c ON c.tenant_id = cr.tenant_id AND c.id = cr.cluster_id
		JOIN tenants t ON t.id = cr.tenant_id
		WHERE cr.revoked_at IS NULL AND (cr.expires_at IS NULL OR cr.expires_at > now())`)
	if err != nil {
		return fmt.Errorf("load credentials: %w", err)
	}
	defer rows.Close()
	old := a.snap.Load()
	s := &snapshot{
		tokens:   map[[32]byte]*entry{},
		certs:    map[[32]byte]*entry{},
		basic:    map[string]*entry{},
		byID:     map[int64]*entry{},
		loadedAt: started,
	}
	labelsByCluster := map[int64]map[string]string{}
	for rows.Next() {
		var (
			e                 entry
			typ               string
			tokenHash, fp     []byte
			username, phc     *string
			expiresAt         *time.Time
			labelsJSON        []byte
			tenantID, cluster int64
		)
		if err := rows.Scan(&e.id.CredentialID, &typ, &tokenHash, &fp, &username, &phc, &expiresAt,
			&tenantID, &e.id.TenantName, &cluster, &e.id.ClusterName, &labelsJSON); err != nil {
			return fmt.Errorf("load credentials: %w", err)
		}
		e.id.TenantID, e.id.ClusterID, e.id.CredentialType = tenantID, cluster, CredentialType(typ)
		labels, ok := labelsByCluster[cluster]
		if !ok {
			if err := json.Unmarshal(labelsJSON, &labels); err != nil {
				return fmt.Errorf("load credentials: cluster %d labels: %w", cluster, err)
			}
			if labels == nil {
				labels = map[string]string{}
			}
			labelsByCluster[cluster] = labels
		}
		e.id.ClusterLabels = labels
		if expiresAt != nil {
			e.expiresAt = *expiresAt
		}
		ep := &e
		var prev *entry
		if old != nil {
			prev = old.byID[e.id.CredentialID]
		}
		if prev != nil {
			ep.usage = prev.usage
		} else {
			ep.usage = &usage{}
		}
		switch e.id.CredentialType {
		case CredentialToken:
			copy(ep.hash[:], tokenHash)
			s.tokens[ep.hash] = ep
		case CredentialCertificate:
			copy(ep.hash[:], fp)
			s.certs[ep.hash] = ep
		case CredentialBasic:
			ep.phc = *phc
			if prev != nil && prev.phc == ep.phc {
				ep.basicOK.Store(prev.basicOK.Load())
			}
			s.basic[*username] = ep
		default:
			continue
		}
		s.byID[ep.id.CredentialID] = ep
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load credentials: %w", err)
	}

	// Publish, then re-apply every tombstone heard after this load began:
	// the rows may predate it. Older tombstones are settled (the rows read
	// already reflect them) and are dropped.
	a.mu.Lock()
	a.snap.Store(s)
	for key, heard := range a.tombstones {
		if heard.Before(started) {
			delete(a.tombstones, key)
			continue
		}
		kind, idStr, _ := strings.Cut(key, ":")
		id, _ := strconv.ParseInt(idStr, 10, 64)
		s.applyTombstone(kind, id)
	}
	a.mu.Unlock()
	return nil
}

// FlushUsage writes last_used_at for every credential used since the last
// flush, in one statement. Run calls it periodically.
func (a *Authenticator) FlushUsage(ctx context.Context) error {
	s := a.snap.Load()
	if s == nil {
		return nil
	}
	var ids []int64
	var times []time.Time
	var pending []*usage
	var marks []int64
	for id, e := range s.byID {
		last := e.usage.last.Load()
		if last != 0 && last != e.usage.flushed.Load() {
			ids = append(ids, id)
			times = append(times, time.Unix(0, last))
			pending = append(pending, e.usage)
			marks = append(marks, last)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := a.pool.Exec(ctx, `
		UPDATE credentials c SET last_used_at = u.t
		FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, t)
		WHERE c.id = u.id AND (c.last_used_at IS NULL OR c.last_used_at < u.t)`, ids, times)
	if err != nil {
		return fmt.Errorf("flush last_used_at: %w", err)
	}
	for i, u := range pending {
		u.flushed.Store(marks[i])
	}
	return nil
}

func unauthenticated(reason string) *fault.Error {
	return &fault.Error{Code: fault.Unauthenticated, Message: msgUnauthenticated, Reason: reason}
}

// Authenticate identifies the apiserver that sent r and checks that it may
// act for the tenant named in the path: r.PathValue("tenant") when the
// router set it (net/http ServeMux patterns; chi v5.1+ sets it too), else
// the segment after "/t/" in r.URL.Path.
//
// The credential is the Authorization header when there is one (Bearer
// token or Basic), otherwise the client certificate the TLS layer verified
// against the client CA. The error is a *fault.Error: 401
// (fault.Unauthenticated) when there is no valid credential, 403
// (fault.Forbidden) when the credential belongs to another tenant than the
// path's, 503 (fault.Unavailable) before the first load. Its Message is the
// same whether or not the path's tenant exists; its Reason says why, for
// logs and metrics only (fault.Status never sends it).
func (a *Authenticator) Authenticate(r *http.Request) (Identity, error) {
	tenant := r.PathValue("tenant")
	if tenant == "" {
		tenant = pathTenant(r.URL.Path)
	}
	return a.AuthenticateTenant(r, tenant)
}

// pathTenant returns the {tenant} of /t/{tenant}/...
func pathTenant(p string) string {
	rest, ok := strings.CutPrefix(p, "/t/")
	if !ok {
		return ""
	}
	tenant, _, _ := strings.Cut(rest, "/")
	return tenant
}

// AuthenticateTenant is Authenticate with the tenant's name given.
func (a *Authenticator) AuthenticateTenant(r *http.Request, tenant string) (Identity, error) {
	id, err := a.identify(r)
	if err != nil {
		return Identity{}, err
	}
	// Compared in constant time although tenant names are not secret.
	if subtle.ConstantTimeCompare([]byte(id.TenantName), []byte(tenant)) != 1 {
		return Identity{}, &fault.Error{Code: fault.Forbidden, Message: msgForbidden, Reason: "tenant mismatch"}
	}
	return id, nil
}

// identify finds the credential of r, whatever the path says.
func (a *Authenticator) identify(r *http.Request) (Identity, error) {
	s := a.snap.Load()
	if s == nil {
		return Identity{}, &fault.Error{Code: fault.Unavailable, Message: msgUnavailable}
	}
	if h := r.Header["Authorization"]; len(h) > 0 { // canonical key: no allocation
		if len(h) > 1 {
			return Identity{}, unauthenticated("several Authorization headers")
		}
		scheme, cred, ok := strings.Cut(h[0], " ")
		if !ok || cred == "" {
			return Identity{}, unauthenticated("malformed Authorization header")
		}
		switch {
		case strings.EqualFold(scheme, "Bearer"):
			return a.token(s, cred)
		case strings.EqualFold(scheme, "Basic"):
			return a.basicAuth(s, cred)
		}
		return Identity{}, unauthenticated("unsupported Authorization scheme")
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		// The TLS layer verified the chain and possession of the key; the
		// fingerprint says which of the certificates we issued it is.
		fp := sha256.Sum256(r.TLS.PeerCertificates[0].Raw)
		e := s.certs[fp]
		if e == nil {
			return Identity{}, unauthenticated("unknown certificate")
		}
		return a.accept(e, fp)
	}
	return Identity{}, unauthenticated("no credential")
}

func (a *Authenticator) token(s *snapshot, tok string) (Identity, error) {
	if !strings.HasPrefix(tok, TokenPrefix) {
		return Identity{}, unauthenticated("malformed token")
	}
	h := hashString(tok)
	e := s.tokens[h]
	if e == nil {
		return Identity{}, unauthenticated("unknown token")
	}
	return a.accept(e, h)
}

// accept checks a looked-up entry and records its use.
func (a *Authenticator) accept(e *entry, h [32]byte) (Identity, error) {
	// The map lookup already matched; compare again in constant time so that
	// correctness never rests on how the map compares keys.
	if subtle.ConstantTimeCompare(e.hash[:], h[:]) != 1 {
		return Identity{}, unauthenticated("unknown credential")
	}
	return a.live(e)
}

func (a *Authenticator) live(e *entry) (Identity, error) {
	if e.revoked.Load() {
		return Identity{}, unauthenticated("revoked")
	}
	now := a.now()
	if !e.expiresAt.IsZero() && !now.Before(e.expiresAt) {
		return Identity{}, unauthenticated("expired")
	}
	// Written at most every 100 ms per credential: replicas' cores do not
	// fight over one cache line on every request.
	if n := now.UnixNano(); n-e.usage.last.Load() > int64(100*time.Millisecond) {
		e.usage.last.Store(n)
	}
	return e.id, nil
}

// hashString is the SHA-256 of s without a heap copy for tokens of usual
// length.
func hashString(s string) [32]byte {
	var buf [128]byte
	if len(s) <= len(buf) {
		n := copy(buf[:], s)
		return sha256.Sum256(buf[:n])
	}
	return sha256.Sum256([]byte(s))
}

func (a *Authenticator) basicAuth(s *snapshot, cred string) (Identity, error) {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return Identity{}, unauthenticated("malformed basic credentials")
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return Identity{}, unauthenticated("malformed basic credentials")
	}
	e := s.basic[user]
	if e == nil {
		return Identity{}, unauthenticated("unknown user")
	}
	mac := hmac.New(sha256.New, a.basicKey[:])
	mac.Write([]byte(user))
	mac.Write([]byte{0})
	mac.Write([]byte(pass))
	var sum [32]byte
	mac.Sum(sum[:0])
	if ok := e.basicOK.Load(); ok != nil && subtle.ConstantTimeCompare(ok[:], sum[:]) == 1 {
		return a.live(e)
	}
	if _, bad := a.basicBad.Get(sum); bad {
		return Identity{}, unauthenticated("wrong password (cached)")
	}
	// Slow path: argon2id, at most a few at a time.
	a.basicSlow <- struct{}{}
	match, err := verifyPassword(e.phc, pass)
	<-a.basicSlow
	if err != nil || !match {
		a.basicBad.Add(sum, struct{}{})
		return Identity{}, unauthenticated("wrong password")
	}
	e.basicOK.Store(&sum)
	return a.live(e)
}
