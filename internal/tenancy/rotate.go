package tenancy

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// RotateCredential replaces one of the tenant's credentials, in one
// transaction: it issues a new credential of the same type for the same
// cluster, with the old one's description, and brings the old one's expiry
// forward to grace from now, or revokes it when grace is not positive. It
// never extends the old credential. A new certificate gets a
// key generated here, even if the old one was signed from a CSR. It
// returns the new credential with its secret and the old one as it is now.
func (s *Store) RotateCredential(ctx context.Context, tenantID, credentialID int64, grace time.Duration, opts CredentialOptions) (Issued, Credential, error) {
	if err := s.checkExpiry(opts); err != nil {
		return Issued{}, Credential{}, err
	}
	var (
		out    Issued
		old    Credential
		keyPEM []byte
	)
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		old, err = scanCredential(tx.QueryRow(ctx, `SELECT `+credentialCols+` FROM credentials
			WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, credentialID))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("credential")
		}
		if err != nil {
			return fmt.Errorf("rotate credential: %w", err)
		}
		opts.Description = old.Description
		switch old.Type {
		case CredentialToken:
			out, err = s.createToken(ctx, tx, tenantID, old.ClusterID, opts)
		case CredentialBasic:
			out, err = s.createBasic(ctx, tx, tenantID, old.ClusterID, opts)
		case CredentialURL:
			out, err = s.createURL(ctx, tx, tenantID, old.ClusterID, opts)
		case CredentialCertificate:
			if err := s.checkCertificate(opts); err != nil {
				return err
			}
			var k *ecdsa.PrivateKey
			if k, keyPEM, err = newClientKey(); err != nil {
				return err
			}
			out, err = s.certificateTx(ctx, tx, tenantID, old.ClusterID, k.Public(), opts)
		default:
			return fmt.Errorf("rotate credential: unknown type %q", old.Type)
		}
		if err != nil {
			return err
		}
		// The database's clock decides, as it does when the credentials
		// are loaded.
		old, err = scanCredential(tx.QueryRow(ctx, `UPDATE credentials SET
				revoked_at = CASE WHEN $3::bigint <= 0 THEN coalesce(revoked_at, now()) ELSE revoked_at END,
				expires_at = CASE WHEN $3::bigint <= 0 THEN expires_at
					ELSE LEAST(coalesce(expires_at, now() + $3::bigint * interval '1 microsecond'),
					           now() + $3::bigint * interval '1 microsecond') END
			WHERE tenant_id = $1 AND id = $2 RETURNING `+credentialCols, tenantID, credentialID, grace.Microseconds()))
		if err != nil {
			return fmt.Errorf("rotate credential: %w", err)
		}
		if grace <= 0 {
			// A revocation: replicas drop the credential on arrival.
			return pgnotify.Notify(ctx, tx, Channel, "credential:"+strconv.FormatInt(credentialID, 10))
		}
		// Not "credential:<id>", which would make replicas refuse the old
		// credential at once, before its grace period ends.
		return nil
	})
	if err != nil {
		return Issued{}, Credential{}, err
	}
	out.KeyPEM = keyPEM
	return out, old, nil
}
