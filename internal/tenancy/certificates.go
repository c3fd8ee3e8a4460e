package tenancy

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultCertificateValidity is how long an issued client certificate lasts
// when the caller gives no expiry.
const DefaultCertificateValidity = 365 * 24 * time.Hour

// clusterNames returns the tenant's and cluster's names, or fault.NotFound.
func clusterNames(ctx context.Context, tx pgx.Tx, tenantID, clusterID int64) (tenant, cluster string, err error) {
	err = tx.QueryRow(ctx,
		`SELECT t.name, c.name FROM clusters c JOIN tenants t ON t.id = c.tenant_id
		 WHERE c.tenant_id = $1 AND c.id = $2`, tenantID, clusterID).Scan(&tenant, &cluster)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", notFound("cluster")
	}
	return tenant, cluster, err
}

// IssueCertificate generates an ECDSA P-256 key and a client certificate for
// the tenant's cluster, signed by the client CA. The key is in the result,
// and only there.
func (s *Store) IssueCertificate(ctx context.Context, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	key, keyPEM, err := newClientKey()
	if err != nil {
		return Issued{}, err
	}
	out, err := s.certificate(ctx, tenantID, clusterID, key.Public(), opts)
	if err != nil {
		return Issued{}, err
	}
	out.KeyPEM = keyPEM
	return out, nil
}

// SignCSR signs the public key of a PEM certificate signing request into a
// client certificate for the tenant's cluster. The CSR's subject is ignored:
// the certificate names the cluster as IssueCertificate's does.
func (s *Store) SignCSR(ctx context.Context, tenantID, clusterID int64, csrPEM []byte, opts CredentialOptions) (Issued, error) {
	csr, err := parseCSR(csrPEM)
	if err != nil {
		return Issued{}, err
	}
	return s.certificate(ctx, tenantID, clusterID, csr.PublicKey, opts)
}

func (s *Store) certificate(ctx context.Context, tenantID, clusterID int64, pub any, opts CredentialOptions) (Issued, error) {
	if err := s.checkCertificate(opts); err != nil {
		return Issued{}, err
	}
	return s.issueTx(ctx, func(tx pgx.Tx) (Issued, error) {
		return s.certificateTx(ctx, tx, tenantID, clusterID, pub, opts)
	})
}

func (s *Store) checkCertificate(opts CredentialOptions) error {
	if s.ca == nil {
		return invalid(nil, "this gateway has no client CA, so it cannot issue certificates")
	}
	return s.checkExpiry(opts)
}

func (s *Store) certificateTx(ctx context.Context, tx pgx.Tx, tenantID, clusterID int64, pub any, opts CredentialOptions) (Issued, error) {
	notAfter := s.now().Add(DefaultCertificateValidity)
	if opts.ExpiresAt != nil {
		notAfter = *opts.ExpiresAt
	}
	tenant, cluster, err := clusterNames(ctx, tx, tenantID, clusterID)
	if err != nil {
		return Issued{}, err
	}
	cert, err := s.ca.issue(pub, tenant, cluster, notAfter)
	if err != nil {
		return Issued{}, err
	}
	fp := Fingerprint(cert.Raw)
	// The credential expires with the certificate, truncated to what
	// Postgres stores.
	exp := cert.NotAfter
	c, err := s.insertCredential(ctx, tx, tenantID, clusterID, newCredential{
		typ: CredentialCertificate, fingerprint: fp[:], certificate: cert.Raw,
		expiresAt: &exp, description: opts.Description,
	})
	return Issued{Credential: c}, err
}

// ParseCertificatePEM is a helper for callers that hold a Credential's
// CertificatePEM and want the parsed certificate.
func ParseCertificatePEM(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
