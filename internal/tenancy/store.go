package tenancy

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
)

// DefaultCertificateValidity is how long an issued client certificate lasts
// when the caller gives no expiry.
const DefaultCertificateValidity = 365 * 24 * time.Hour

// Store keeps tenants, clusters and credentials in Postgres. Every method
// takes the tenant ID first and only ever touches that tenant's rows; "not
// found" and "another tenant's" give the same fault.NotFound error. Methods
// that read across tenants say All in their name.
type Store struct {
	pool *pgxpool.Pool
	ca   *ClientCA
	now  func() time.Time
}

// NewStore returns a store on pool. ca issues client certificates; it may be
// nil, and then certificate credentials cannot be created.
func NewStore(pool *pgxpool.Pool, ca *ClientCA) *Store {
	return &Store{pool: pool, ca: ca, now: time.Now}
}

// IssuesCertificates reports whether the store has a client CA, without
// which certificate credentials cannot be created.
func (s *Store) IssuesCertificates() bool { return s.ca != nil }

// CredentialOptions are the optional settings of a new credential.
type CredentialOptions struct {
	Description string
	// ExpiresAt, when set, must be in the future. A certificate's NotAfter
	// is ExpiresAt, or DefaultCertificateValidity from now when unset.
	ExpiresAt *time.Time
}

func validateName(kind, name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return invalid(nil, "invalid %s name %q: %s", kind, name, strings.Join(errs, "; "))
	}
	return nil
}

func validateLabels(labels map[string]string) error {
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return invalid(nil, "invalid label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return invalid(nil, "invalid value for label %q: %s", k, strings.Join(errs, "; "))
		}
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func notFound(kind string) *fault.Error { return fault.Errorf(fault.NotFound, "%s not found", kind) }

// invalid is a 422 about a value the store refuses. Its one cause repeats
// the message and names no field, since the store does not know which field
// of a request the value came from; the admin API has always sent these
// errors with that cause.
func invalid(err error, format string, args ...any) *fault.Error {
	e := fault.Wrap(err, fault.Invalid, format, args...)
	e.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: e.Message}}
	return e
}

// withTx runs fn in a transaction and commits it. A NOTIFY sent inside fn is
// delivered at commit.
func (s *Store) withTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// ---- tenants ----

const tenantCols = `id, name, display_name, created_at, updated_at`

func scanTenant(row pgx.Row) (Tenant, error) {
	var t Tenant
	err := row.Scan(&t.ID, &t.Name, &t.DisplayName, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// CreateTenant creates a tenant. name must be a DNS label; it is unique.
func (s *Store) CreateTenant(ctx context.Context, name, displayName string) (Tenant, error) {
	if err := validateName("tenant", name); err != nil {
		return Tenant{}, err
	}
	t, err := scanTenant(s.pool.QueryRow(ctx,
		`INSERT INTO tenants (name, display_name) VALUES ($1, $2) RETURNING `+tenantCols, name, displayName))
	if isUniqueViolation(err) {
		return Tenant{}, fault.Errorf(fault.AlreadyExists, "tenant %q already exists", name)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("create tenant: %w", err)
	}
	return t, nil
}

// FindTenant returns the tenant with id.
func (s *Store) FindTenant(ctx context.Context, tenantID int64) (Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE id = $1`, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, notFound("tenant")
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("find tenant: %w", err)
	}
	return t, nil
}

// FindTenantByName resolves a tenant's name (as in a URL) to the tenant.
func (s *Store) FindTenantByName(ctx context.Context, name string) (Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, notFound("tenant")
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("find tenant: %w", err)
	}
	return t, nil
}

// ListAllTenants returns every tenant, ordered by name. It is for platform
// operators.
func (s *Store) ListAllTenants(ctx context.Context) ([]Tenant, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tenantCols+` FROM tenants ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Tenant, error) { return scanTenant(r) })
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return ts, nil
}

// UpdateTenantDisplayName changes a tenant's display name.
func (s *Store) UpdateTenantDisplayName(ctx context.Context, tenantID int64, displayName string) (Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx,
		`UPDATE tenants SET display_name = $2, updated_at = now() WHERE id = $1 RETURNING `+tenantCols,
		tenantID, displayName))
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, notFound("tenant")
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("update tenant: %w", err)
	}
	return t, nil
}

// DeleteTenant deletes a tenant with its clusters and credentials, and tells
// every replica to forget its credentials at once.
func (s *Store) DeleteTenant(ctx context.Context, tenantID int64) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM tenants WHERE id = $1`, tenantID)
		if err != nil {
			return fmt.Errorf("delete tenant: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return notFound("tenant")
		}
		return pgnotify.Notify(ctx, tx, Channel, "tenant:"+strconv.FormatInt(tenantID, 10))
	})
}

// ---- clusters ----

const clusterCols = `id, tenant_id, name, labels, created_at, updated_at`

func scanCluster(row pgx.Row) (Cluster, error) {
	var c Cluster
	var labels []byte
	if err := row.Scan(&c.ID, &c.TenantID, &c.Name, &labels, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return c, err
	}
	if err := json.Unmarshal(labels, &c.Labels); err != nil {
		return c, fmt.Errorf("cluster labels: %w", err)
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	return c, nil
}

func labelsJSON(labels map[string]string) []byte {
	if labels == nil {
		labels = map[string]string{}
	}
	b, _ := json.Marshal(labels)
	return b
}

// CreateCluster creates a cluster of the tenant. name is a DNS label, unique
// within the tenant; labels follow Kubernetes label syntax.
func (s *Store) CreateCluster(ctx context.Context, tenantID int64, name string, labels map[string]string) (Cluster, error) {
	if err := validateName("cluster", name); err != nil {
		return Cluster{}, err
	}
	if err := validateLabels(labels); err != nil {
		return Cluster{}, err
	}
	var c Cluster
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		c, err = scanCluster(tx.QueryRow(ctx,
			`INSERT INTO clusters (tenant_id, name, labels)
			 SELECT id, $2, $3 FROM tenants WHERE id = $1
			 RETURNING `+clusterCols, tenantID, name, labelsJSON(labels)))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("tenant")
		}
		if isUniqueViolation(err) {
			return fault.Errorf(fault.AlreadyExists, "cluster %q already exists", name)
		}
		if err != nil {
			return fmt.Errorf("create cluster: %w", err)
		}
		return nil
	})
	return c, err
}

// FindCluster returns the tenant's cluster with id.
func (s *Store) FindCluster(ctx context.Context, tenantID, clusterID int64) (Cluster, error) {
	c, err := scanCluster(s.pool.QueryRow(ctx,
		`SELECT `+clusterCols+` FROM clusters WHERE tenant_id = $1 AND id = $2`, tenantID, clusterID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Cluster{}, notFound("cluster")
	}
	if err != nil {
		return Cluster{}, fmt.Errorf("find cluster: %w", err)
	}
	return c, nil
}

// FindClusterByName returns the tenant's cluster called name.
func (s *Store) FindClusterByName(ctx context.Context, tenantID int64, name string) (Cluster, error) {
	c, err := scanCluster(s.pool.QueryRow(ctx,
		`SELECT `+clusterCols+` FROM clusters WHERE tenant_id = $1 AND name = $2`, tenantID, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return Cluster{}, notFound("cluster")
	}
	if err != nil {
		return Cluster{}, fmt.Errorf("find cluster: %w", err)
	}
	return c, nil
}

// ListClusters returns the tenant's clusters, ordered by name.
func (s *Store) ListClusters(ctx context.Context, tenantID int64) ([]Cluster, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT `+clusterCols+` FROM clusters WHERE tenant_id = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Cluster, error) { return scanCluster(r) })
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	return cs, nil
}

// SetClusterLabels replaces a cluster's labels.
func (s *Store) SetClusterLabels(ctx context.Context, tenantID, clusterID int64, labels map[string]string) (Cluster, error) {
	if err := validateLabels(labels); err != nil {
		return Cluster{}, err
	}
	var c Cluster
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		c, err = scanCluster(tx.QueryRow(ctx,
			`UPDATE clusters SET labels = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2
			 RETURNING `+clusterCols, tenantID, clusterID, labelsJSON(labels)))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("cluster")
		}
		if err != nil {
			return fmt.Errorf("set cluster labels: %w", err)
		}
		return pgnotify.Notify(ctx, tx, Channel, "changed")
	})
	return c, err
}

// DeleteCluster deletes a cluster and its credentials, and tells every
// replica to forget those credentials at once.
func (s *Store) DeleteCluster(ctx context.Context, tenantID, clusterID int64) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM clusters WHERE tenant_id = $1 AND id = $2`, tenantID, clusterID)
		if err != nil {
			return fmt.Errorf("delete cluster: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return notFound("cluster")
		}
		return pgnotify.Notify(ctx, tx, Channel, "cluster:"+strconv.FormatInt(clusterID, 10))
	})
}

// ---- credentials ----

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
		                          username, password_hash, expires_at)
		 SELECT tenant_id, id, $3, $4, $5, $6, $7, $8, $9, $10 FROM clusters WHERE tenant_id = $1 AND id = $2
		 RETURNING `+credentialCols,
		tenantID, clusterID, string(nc.typ), nc.description, nc.tokenHash, nc.fingerprint, nc.certificate,
		nc.username, nc.passwordHash, nc.expiresAt))
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

// CreateToken creates a bearer-token credential for the tenant's cluster.
// The token is in the result, and only there.
func (s *Store) CreateToken(ctx context.Context, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	if err := s.checkExpiry(opts); err != nil {
		return Issued{}, err
	}
	var out Issued
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = s.createToken(ctx, tx, tenantID, clusterID, opts)
		return err
	})
	if err != nil {
		return Issued{}, err
	}
	return out, nil
}

func (s *Store) createToken(ctx context.Context, tx pgx.Tx, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	tok, hash := newToken()
	c, err := s.insertCredential(ctx, tx, tenantID, clusterID, newCredential{
		typ: CredentialToken, tokenHash: hash[:], expiresAt: opts.ExpiresAt, description: opts.Description,
	})
	return Issued{Credential: c, Token: tok}, err
}

// CreateBasic creates a basic-auth credential for the tenant's cluster, with
// a random username and password. The password is in the result, and only
// there.
func (s *Store) CreateBasic(ctx context.Context, tenantID, clusterID int64, opts CredentialOptions) (Issued, error) {
	if err := s.checkExpiry(opts); err != nil {
		return Issued{}, err
	}
	var out Issued
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = s.createBasic(ctx, tx, tenantID, clusterID, opts)
		return err
	})
	if err != nil {
		return Issued{}, err
	}
	return out, nil
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
	var out Issued
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = s.certificateTx(ctx, tx, tenantID, clusterID, pub, opts)
		return err
	})
	if err != nil {
		return Issued{}, err
	}
	return out, nil
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

// ParseCertificatePEM is a helper for callers that hold a Credential's
// CertificatePEM and want the parsed certificate.
func ParseCertificatePEM(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
