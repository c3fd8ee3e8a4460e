// Package adminauth issues and checks the bearer tokens of the admin API.
// Only a SHA-256 of each token is stored; the token itself is shown once.
package adminauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Prefix starts every admin token, so a leaked one can be found by grep.
const Prefix = "pcadm_"

// Role is what a token may do.
type Role string

// Roles. An operator manages the whole gateway; admin and viewer roles are
// scoped to one tenant. A sync token is scoped to one cluster of a tenant
// and may do nothing but push that cluster's inventory (admin namespaces
// sync), so that the sync running inside the cluster holds no more.
const (
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
	RoleViewer   Role = "viewer"
	RoleSync     Role = "sync"
)

// Principal is the holder of a valid token.
type Principal struct {
	TokenID   int64
	Name      string
	Role      Role
	ExpiresAt *time.Time
	// TenantID and TenantName scope an admin or viewer token; both are
	// zero for an operator.
	TenantID   int64
	TenantName string
	// ClusterID and ClusterName scope a sync token; zero otherwise.
	ClusterID   int64
	ClusterName string
}

// Operator reports whether p manages the whole gateway.
func (p Principal) Operator() bool { return p.Role == RoleOperator }

// ErrUnauthenticated covers missing, unknown, expired and revoked tokens
// alike, so a caller learns nothing about which.
var ErrUnauthenticated = errors.New("invalid or expired admin token")

// ErrAlreadyBootstrapped means an operator token already exists.
var ErrAlreadyBootstrapped = errors.New("an operator token already exists; bootstrap runs once (create more tokens through the admin API)")

// NewToken returns a fresh token with 256 random bits.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return Prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// Hash is what is stored for a token.
func Hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Store keeps tokens in the admin_tokens table.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns a store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Bootstrap creates the first operator token and returns it, or
// ErrAlreadyBootstrapped. Two bootstraps racing create one token.
func (s *Store) Bootstrap(ctx context.Context, name string) (string, error) {
	return Bootstrap(ctx, s.pool, name)
}

// Bootstrap is Store.Bootstrap on a pool, in the shape the admin CLI takes
// (cli.Bootstrapper).
func Bootstrap(ctx context.Context, pool *pgxpool.Pool, name string) (string, error) {
	token := NewToken()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE admin_tokens IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM admin_tokens WHERE role = 'operator')`).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return ErrAlreadyBootstrapped
		}
		_, err := tx.Exec(ctx, `INSERT INTO admin_tokens (name, role, token_hash) VALUES ($1, 'operator', $2)`, name, Hash(token))
		return err
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// Authenticate returns the principal of a valid token.
func (s *Store) Authenticate(ctx context.Context, token string) (Principal, error) {
	if !strings.HasPrefix(token, Prefix) {
		return Principal{}, ErrUnauthenticated
	}
	// The lookup is by hash: an index probe on a SHA-256 leaks nothing
	// useful about the secret through timing.
	return s.authenticate(ctx, "k.token_hash = $1", Hash(token))
}

// AuthenticateID returns the principal of the valid token id: the web
// UI's calls, whose session names its token but never holds its secret
// (uisession.WithToken). Revoked, expired and unknown tokens are
// ErrUnauthenticated, as in Authenticate.
func (s *Store) AuthenticateID(ctx context.Context, id int64) (Principal, error) {
	return s.authenticate(ctx, "k.id = $1", id)
}

func (s *Store) authenticate(ctx context.Context, where string, arg any) (Principal, error) {
	var p Principal
	var role string
	var tenantID, clusterID *int64
	var tenantName, clusterName *string
	var stale bool
	// A plain read: an unknown token costs no write (issue 30, finding 10),
	// so that a flood of wrong tokens is one index probe each and runs on a
	// read-only connection. last_used_at is written at most once a minute
	// per token, after it was found, so that busy scripts do not turn every
	// call into a write.
	err := s.pool.QueryRow(ctx, `
		SELECT k.id, k.name, k.role, k.expires_at, k.tenant_id, t.name, k.cluster_id, c.name,
			k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute'
		FROM admin_tokens k LEFT JOIN tenants t ON t.id = k.tenant_id LEFT JOIN clusters c ON c.id = k.cluster_id
		WHERE `+where+` AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`,
		arg).Scan(&p.TokenID, &p.Name, &role, &p.ExpiresAt, &tenantID, &tenantName, &clusterID, &clusterName, &stale)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up admin token: %w", err)
	}
	if stale {
		if err := s.touchToken(ctx, p.TokenID); err != nil {
			return Principal{}, err
		}
	}
	p.Role = Role(role)
	if tenantID != nil {
		p.TenantID, p.TenantName = *tenantID, *tenantName
	}
	if clusterID != nil {
		p.ClusterID, p.ClusterName = *clusterID, *clusterName
	}
	return p, nil
}

// touchToken records that the token id was used, at most once a minute
// (two replicas racing write once).
func (s *Store) touchToken(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE admin_tokens SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, id); err != nil {
		return fmt.Errorf("record admin token use: %w", err)
	}
	return nil
}

// Creator is who creates a token: the name of the token whose call it is
// (a label) and its id (0 when no token made the call), which RevokeTree
// follows.
type Creator struct {
	Name    string
	TokenID int64
}

// Create issues a token and returns its secret, which is not stored.
// tenantID must be 0 for an operator token and a tenant's id otherwise.
func (s *Store) Create(ctx context.Context, tenantID int64, name string, role Role, expiresAt *time.Time, by Creator) (Token, string, error) {
	switch {
	case role == RoleOperator && tenantID != 0:
		return Token{}, "", errors.New("an operator token cannot belong to a tenant")
	case (role == RoleAdmin || role == RoleViewer) && tenantID == 0:
		return Token{}, "", fmt.Errorf("a %s token needs a tenant", role)
	case role != RoleOperator && role != RoleAdmin && role != RoleViewer:
		return Token{}, "", fmt.Errorf("unknown role %q", role)
	}
	return s.create(ctx, tenantID, 0, name, role, expiresAt, by)
}

// CreateSync issues a sync token of the tenant's cluster and returns its
// secret, which is not stored.
func (s *Store) CreateSync(ctx context.Context, tenantID, clusterID int64, name string, expiresAt *time.Time, by Creator) (Token, string, error) {
	if tenantID == 0 || clusterID == 0 {
		return Token{}, "", errors.New("a sync token needs a tenant and a cluster")
	}
	return s.create(ctx, tenantID, clusterID, name, RoleSync, expiresAt, by)
}

func (s *Store) create(ctx context.Context, tenantID, clusterID int64, name string, role Role, expiresAt *time.Time, by Creator) (Token, string, error) {
	secret := NewToken()
	var tid, cid *int64
	if tenantID != 0 {
		tid = &tenantID
	}
	if clusterID != 0 {
		cid = &clusterID
	}
	var byID *int64
	if by.TokenID != 0 {
		byID = &by.TokenID
	}
	rows, err := s.pool.Query(ctx, `
		WITH k AS (
			INSERT INTO admin_tokens (name, role, token_hash, tenant_id, expires_at, created_by, created_by_id, cluster_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *)
		SELECT `+tokenColumns+` FROM k LEFT JOIN tenants t ON t.id = k.tenant_id`,
		name, string(role), Hash(secret), tid, expiresAt, by.Name, byID, cid)
	if err != nil {
		return Token{}, "", fmt.Errorf("create admin token: %w", err)
	}
	tok, err := pgx.CollectExactlyOneRow(rows, scanToken)
	if err != nil {
		return Token{}, "", fmt.Errorf("create admin token: %w", err)
	}
	return tok, secret, nil
}

// Token describes a stored token; the secret is never kept.
type Token struct {
	ID         int64
	Name       string
	Role       Role
	TenantID   int64
	TenantName string
	// ClusterName is the cluster of a sync token; empty otherwise.
	ClusterName string
	CreatedBy   string
	// CreatedByID is the token that created it; 0 for none (bootstrap,
	// or created before it was recorded).
	CreatedByID int64
	CreatedAt   time.Time
	ExpiresAt   *time.Time
	RevokedAt   *time.Time
	LastUsedAt  *time.Time
}

const tokenColumns = `k.id, k.name, k.role, coalesce(k.tenant_id, 0), coalesce(t.name, ''),
	coalesce((SELECT c.name FROM clusters c WHERE c.id = k.cluster_id), ''), k.created_by,
	coalesce(k.created_by_id, 0), k.created_at, k.expires_at, k.revoked_at, k.last_used_at`

func scanToken(row pgx.CollectableRow) (Token, error) {
	var t Token
	var role string
	err := row.Scan(&t.ID, &t.Name, &role, &t.TenantID, &t.TenantName, &t.ClusterName, &t.CreatedBy,
		&t.CreatedByID, &t.CreatedAt, &t.ExpiresAt, &t.RevokedAt, &t.LastUsedAt)
	t.Role = Role(role)
	return t, err
}

// ErrNotFound means no token with that id exists in the caller's scope:
// absent and another tenant's look the same.
var ErrNotFound = errors.New("admin token not found")

// List returns the tenant's tokens, revoked and expired ones included,
// oldest first. tenantID 0 lists every token, operator tokens included; only
// operator calls may pass 0.
func (s *Store) List(ctx context.Context, tenantID int64) ([]Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tokenColumns+`
		FROM admin_tokens k LEFT JOIN tenants t ON t.id = k.tenant_id
		WHERE ($1 = 0 OR k.tenant_id = $1) ORDER BY k.id`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list admin tokens: %w", err)
	}
	toks, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return nil, fmt.Errorf("list admin tokens: %w", err)
	}
	return toks, nil
}

// Revoke revokes the tenant's token id and returns it; from then on it no
// longer authenticates. Revoking a revoked token returns it unchanged.
// tenantID 0 reaches any token, operator tokens included; only operator
// calls may pass 0. A token outside the scope is ErrNotFound.
func (s *Store) Revoke(ctx context.Context, tenantID, id int64) (Token, error) {
	rows, err := s.pool.Query(ctx, `
		WITH k AS (
			UPDATE admin_tokens SET revoked_at = coalesce(revoked_at, now())
			WHERE id = $2 AND ($1 = 0 OR tenant_id = $1) RETURNING *)
		SELECT `+tokenColumns+` FROM k LEFT JOIN tenants t ON t.id = k.tenant_id`, tenantID, id)
	if err != nil {
		return Token{}, fmt.Errorf("revoke admin token: %w", err)
	}
	tok, err := pgx.CollectExactlyOneRow(rows, scanToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, ErrNotFound
	}
	if err != nil {
		return Token{}, fmt.Errorf("revoke admin token: %w", err)
	}
	return tok, nil
}

// RevokeTree revokes the token id, in the tenant's scope as Revoke, and
// every token it minted, directly or through the tokens it minted, and
// returns them all, id first. Revoke alone leaves the minted tokens valid:
// a token handed to automation outlives the person's token that made it.
// RevokeTree is for a token that leaked, whose holder may have minted more.
func (s *Store) RevokeTree(ctx context.Context, tenantID, id int64) ([]Token, error) {
	rows, err := s.pool.Query(ctx, `
		WITH RECURSIVE tree AS (
			SELECT id FROM admin_tokens WHERE id = $2 AND ($1 = 0 OR tenant_id = $1)
			UNION
			SELECT c.id FROM admin_tokens c JOIN tree ON c.created_by_id = tree.id
			WHERE $1 = 0 OR c.tenant_id = $1
		), k AS (
			UPDATE admin_tokens SET revoked_at = coalesce(revoked_at, now())
			WHERE id IN (SELECT id FROM tree) RETURNING *)
		SELECT `+tokenColumns+` FROM k LEFT JOIN tenants t ON t.id = k.tenant_id
		ORDER BY k.id = $2 DESC, k.id`, tenantID, id)
	if err != nil {
		return nil, fmt.Errorf("revoke admin tokens: %w", err)
	}
	toks, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return nil, fmt.Errorf("revoke admin tokens: %w", err)
	}
	if len(toks) == 0 {
		return nil, ErrNotFound
	}
	return toks, nil
}
