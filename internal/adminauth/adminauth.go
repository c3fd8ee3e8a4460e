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
// scoped to one tenant.
const (
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
	RoleViewer   Role = "viewer"
)

// Principal is the holder of a valid token.
type Principal struct {
	TokenID   int64
	Name      string
	Role      Role
	ExpiresAt *time.Time
}

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
	token := NewToken()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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
	var p Principal
	var role string
	// The lookup is by hash: an index probe on a SHA-256 leaks nothing
	// useful about the secret through timing.
	err := s.pool.QueryRow(ctx, `
		SELECT id, name, role, expires_at FROM admin_tokens
		WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
		Hash(token)).Scan(&p.TokenID, &p.Name, &role, &p.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up admin token: %w", err)
	}
	p.Role = Role(role)
	return p, nil
}
