// Package tenancy stores tenants, their clusters and the credentials with which
// a cluster's apiservers authenticate to the webhook, issues those credentials
// and authenticates webhook requests.
//
// Four credential types exist. Three are carried by an apiserver's
// kubeconfig: a bearer token (only its SHA-256 is stored), a client
// certificate issued by the gateway's client CA (stored by fingerprint) and
// basic auth (the password is stored with argon2id). The fourth, url, is for
// managed control planes that cannot load a kubeconfig for webhooks: a
// secret carried in the webhook URL's path (only its SHA-256 is stored). A
// cluster may hold several live credentials at once, so rotation needs no
// downtime.
//
// Store is the Postgres side: every method takes the tenant ID first, and a
// method that reads across tenants says All in its name. Authenticator is the
// hot path: it holds every live credential in memory, so a request never
// waits on Postgres, and it learns about changes through LISTEN/NOTIFY on
// Channel with a periodic full resync as a safety net.
//
// Errors are *fault.Error. A name that is taken is fault.AlreadyExists; an
// authentication failure carries a Reason (why the credential was refused)
// that is for logs and metrics only, because telling a caller that a
// credential exists but was revoked would help an attacker.
package tenancy

import "time"

// Channel is the NOTIFY channel on which the store announces changes to
// tenants, clusters and credentials. Payloads are "credential:<id>",
// "cluster:<id>", "tenant:<id>" (that object was revoked or deleted) or
// "changed" (something was added or altered; reload).
const Channel = "tenancy_changed"

// CredentialType names how a cluster authenticates.
type CredentialType string

// The credential types.
const (
	CredentialToken       CredentialType = "token"
	CredentialCertificate CredentialType = "certificate"
	CredentialBasic       CredentialType = "basic"
	// CredentialURL is a secret in the webhook URL's path:
	// /t/{tenant}/k/{secret}/validate.
	CredentialURL CredentialType = "url"
)

// Valid reports whether t is one of the known types.
func (t CredentialType) Valid() bool {
	switch t {
	case CredentialToken, CredentialCertificate, CredentialBasic, CredentialURL:
		return true
	}
	return false
}

// Tenant is an organisation. Name is a DNS label and appears in webhook
// URLs (/t/<name>/validate).
type Tenant struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	DisplayName string    `json:"displayName"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// Cluster is one apiserver fleet of a tenant. Labels let bindings select
// some of a tenant's clusters; they follow Kubernetes label syntax.
type Cluster struct {
	ID        int64             `json:"id"`
	TenantID  int64             `json:"tenantId"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
}

// Credential describes one credential of a cluster. It never holds a secret.
type Credential struct {
	ID          int64          `json:"id"`
	TenantID    int64          `json:"tenantId"`
	ClusterID   int64          `json:"clusterId"`
	Type        CredentialType `json:"type"`
	Description string         `json:"description,omitempty"`
	// Username is set for basic auth. It is random and globally unique.
	Username string `json:"username,omitempty"`
	// Fingerprint is the hex SHA-256 of a certificate's DER.
	Fingerprint string `json:"fingerprint,omitempty"`
	// CertificatePEM is the issued certificate (public).
	CertificatePEM []byte     `json:"certificatePEM,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	ExpiresAt      *time.Time `json:"expiresAt,omitempty"`
	RevokedAt      *time.Time `json:"revokedAt,omitempty"`
	LastUsedAt     *time.Time `json:"lastUsedAt,omitempty"`
}

// Active reports whether the credential is neither revoked nor expired at now.
func (c Credential) Active(now time.Time) bool {
	return c.RevokedAt == nil && (c.ExpiresAt == nil || now.Before(*c.ExpiresAt))
}

// Issued is a new credential together with its secret. The secret is
// returned once, when the credential is created, and is never stored.
type Issued struct {
	Credential
	// Token is the bearer token (type token).
	Token string
	// Password goes with Credential.Username (type basic).
	Password string
	// URLSecret is the path segment of the webhook URL (type url).
	URLSecret string
	// CertificatePEM is in Credential; KeyPEM is the private key of a
	// certificate the gateway generated (empty when it signed a CSR).
	KeyPEM []byte
}

// Identity is what Authenticate learns about the caller.
type Identity struct {
	TenantID    int64
	TenantName  string
	ClusterID   int64
	ClusterName string
	// ClusterLabels is shared with the cache: read it, never modify it.
	ClusterLabels  map[string]string
	CredentialID   int64
	CredentialType CredentialType
}
