package tenancy

import (
	"context"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// CredentialOptions are the optional settings of a new credential.
type CredentialOptions struct {
	Description string
	// ExpiresAt, when set, must be in the future. A certificate's NotAfter
	// is ExpiresAt, or DefaultCertificateValidity from now when unset.
	ExpiresAt *time.Time
}

const credentialCols = `id, tenant_id, cluster_id, type, description, username, fingerprint, certificate,
	created_at, expires_at, revoked_at, last_used_at`

func scanCredential(row pgx.Row) (Credential, error) {
	var c Credential
	var typ string
	var username *string
	var fp, cert []byte
	err := row.Scan(&c.ID, &c.TenantID, &c.ClusterID, &typ, &c.Description, &username, &fp, &cert,
		&c.CreatedAt, &c.ExpiresAt, &c.RevokedAt, &c.LastUsedAt)
	if err != nil {
		return c, err
	}
	c.Type = CredentialType(typ)
	if username != nil {
		c.Username = *username
	}
	if fp != nil {
		c.Fingerprint = hex.EncodeToString(fp)
	}
	if cert != nil {
		c.CertificatePEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert})
	}
	return c, nil
}

// newCredential is the secret material of a credential about to be inserted.
type newCredential struct {
	typ          CredentialType
	tokenHash    []byte
	fingerprint  []byte
	certificate  []byte
	username     *string
	passwordHash *string
	urlHash      []byte
	expiresAt    *time.Time
	description  string
}

func (s *Store) checkExpiry(opts CredentialOptions) error {
	if opts.ExpiresAt != nil && !opts.ExpiresAt.After(s.now()) {
		return invalid(nil, "expiresAt must be in the future")
	}
	return nil
}

// insertCredential inserts nc for the tenant's cluster and announces it.
func (s *Store) insertCredential(ctx context.Context, tx pgx.Tx, tenantID, clusterID int64, nc newCredential) (Credential, error) {
	c, err := scanCredential(tx.QueryRow(ctx,
		`INSERT INTO credentials (tenant_id, cluster_id, type, description, token_hash, fingerprint, certificate,
		                          username, password_hash, url_secret_hash, expires_at)
		 SELECT tenant_id, id, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM clusters WHERE tenant_id = $1 AND id = $2
		 RETURNING `+credentialCols,
		tenantID, clusterID, string(nc.typ), nc.description, nc.tokenHash, nc.fingerprint, nc.certificate,
		nc.username, nc.passwordHash, nc.urlHash, nc.expiresAt))
	if errors.Is(err, pgx.ErrNoRows) {
		return Credential{}, notFound("cluster")
	}
	if err != nil {
		return Credential{}, fmt.Errorf("create credential: %w", err)
	}
	if err := pgnotify.Notify(ctx, tx, Channel, "changed"); err != nil {
		return Credential{}, err
	}
	return c, nil
}

// issueTx runs create in a transaction of its own. The lower-case create
// functions take the transaction so that RotateCredential can issue and
// retire in one.
func (s *Store) issueTx(ctx context.Context, create func(tx pgx.Tx) (Issued, error)) (Issued, error) {
	var out Issued
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = create(tx)
		return err
	})
	if err != nil {
		return Issued{}, err
	}
	return out, nil
}

// CreateToken creates a bearer-token credential for the tenant's cluster.
// The token is in the result, and only there.
func (s *Store) CreateToken(ctx context.Context, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	if err := s.checkExpiry(opts); err != nil {
		return Issued{}, err
	}
	return s.issueTx(ctx, func(tx pgx.Tx) (Issued, error) { return s.createToken(ctx, tx, tenantID, clusterID, opts) })
}

func (s *Store) createToken(ctx context.Context, tx pgx.Tx, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	tok, hash := newToken()
	c, err := s.insertCredential(ctx, tx, tenantID, clusterID, newCredential{
		typ: CredentialToken, tokenHash: hash[:], expiresAt: opts.ExpiresAt, description: opts.Description,
	})
	return Issued{Credential: c, Token: tok}, err
}

// CreateURL creates a URL credential for the tenant's cluster: a secret
// that the cluster's webhook configurations carry in their URLs' path. The
// secret is in the result, and only there.
func (s *Store) CreateURL(ctx context.Context, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	if err := s.checkExpiry(opts); err != nil {
		return Issued{}, err
	}
	return s.issueTx(ctx, func(tx pgx.Tx) (Issued, error) { return s.createURL(ctx, tx, tenantID, clusterID, opts) })
}

func (s *Store) createURL(ctx context.Context, tx pgx.Tx, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	secret, hash := newURLSecret()
	c, err := s.insertCredential(ctx, tx, tenantID, clusterID, newCredential{
		typ: CredentialURL, urlHash: hash[:], expiresAt: opts.ExpiresAt, description: opts.Description,
	})
	return Issued{Credential: c, URLSecret: secret}, err
}

// CreateBasic creates a basic-auth credential for the tenant's cluster, with
// a random username and password. The password is in the result, and only
// there.
func (s *Store) CreateBasic(ctx context.Context, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	if err := s.checkExpiry(opts); err != nil {
		return Issued{}, err
	}
	return s.issueTx(ctx, func(tx pgx.Tx) (Issued, error) { return s.createBasic(ctx, tx, tenantID, clusterID, opts) })
}

func (s *Store) createBasic(ctx context.Context, tx pgx.Tx, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	user, pass := newUsername(), newPassword()
	phc := hashPassword(pass)
	c, err := s.insertCredential(ctx, tx, tenantID, clusterID, newCredential{
		typ: CredentialBasic, username: &user, passwordHash: &phc,
		expiresAt: opts.ExpiresAt, description: opts.Description,
	})
	return Issued{Credential: c, Password: pass}, err
}

// FindCredential returns one of the tenant's credentials.
func (s *Store) FindCredential(ctx context.Context, tenantID, credentialID int64) (Credential, error) {
	c, err := scanCredential(s.pool.QueryRow(ctx,
		`SELECT `+credentialCols+` FROM credentials WHERE tenant_id = $1 AND id = $2`, tenantID, credentialID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Credential{}, notFound("credential")
	}
	if err != nil {
		return Credential{}, fmt.Errorf("find credential: %w", err)
	}
	return c, nil
}

// ListCredentials returns the credentials of the tenant's cluster, revoked
// and expired ones included, oldest first.
func (s *Store) ListCredentials(ctx context.Context, tenantID, clusterID int64) ([]Credential, error) {
	var out []Credential
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM clusters WHERE tenant_id = $1 AND id = $2)`,
			tenantID, clusterID).Scan(&exists); err != nil {
			return fmt.Errorf("list credentials: %w", err)
		}
		if !exists {
			return notFound("cluster")
		}
		rows, err := tx.Query(ctx, `SELECT `+credentialCols+` FROM credentials
			WHERE tenant_id = $1 AND cluster_id = $2 ORDER BY id`, tenantID, clusterID)
		if err != nil {
			return fmt.Errorf("list credentials: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Credential, error) { return scanCredential(r) })
		if err != nil {
			return fmt.Errorf("list credentials: %w", err)
		}
		return nil
	})
	return out, err
}

// RevokeCredential revokes one of the tenant's credentials and tells every
// replica, which refuse it from then on. Revoking a revoked credential is a
// no-op that returns it unchanged.
func (s *Store) RevokeCredential(ctx context.Context, tenantID, credentialID int64) (Credential, error) {
	var c Credential
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		c, err = scanCredential(tx.QueryRow(ctx,
			`UPDATE credentials SET revoked_at = coalesce(revoked_at, now())
			 WHERE tenant_id = $1 AND id = $2 RETURNING `+credentialCols, tenantID, credentialID))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("credential")
		}
		if err != nil {
			return fmt.Errorf("revoke credential: %w", err)
		}
		return pgnotify.Notify(ctx, tx, Channel, "credential:"+strconv.FormatInt(credentialID, 10))
	})
	return c, err
}
