// Package tenancy stores tenants, their clusters and the credentials with which
// a cluster's apiservers authenticate to the webhook, issues those credentials
// and authenticates webhook requests.
//
// Three credential types exist, all of them as an apiserver's kubeconfig can
// carry them: a bearer token (only its SHA-256 is stored), a client
// certificate issued by the gateway's client CA (stored by fingerprint) and
// basic auth (the password is stored with argon2id). A cluster may hold
// several live credentials at once, so rotation needs no downtime.
//
// Store is the Postgres side: every method takes the tenant ID first, and a
// method that reads across tenants says All in its name. Authenticator is the
// hot path: it holds every live credential in memory, so a request never
// waits on Postgres, and it learns about changes through LISTEN/NOTIFY on
// Channel with a periodic full resync as a safety net.
package tenancy

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

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
)

// Valid reports whether t is one of the known types.
func (t CredentialType) Valid() bool {
	switch t {
	case CredentialToken, CredentialCertificate, CredentialBasic:
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

// Code classifies an Error.
type Code string

// Error codes. HTTPStatus maps them.
const (
	CodeInvalid         Code = "invalid"         // 422: bad input
	CodeNotFound        Code = "not_found"       // 404: absent, or another tenant's
	CodeConflict        Code = "conflict"        // 409: a name is taken
	CodeUnauthenticated Code = "unauthenticated" // 401
	CodeForbidden       Code = "forbidden"       // 403
	CodeUnavailable     Code = "unavailable"     // 503: credentials not loaded yet
	CodeInternal        Code = "internal"        // 500
)

// Error is the package's one error type. Message is safe to show to the
// caller; Reason (authentication only) says why, for logs and metrics, and
// must never be sent to the client, because it could tell an attacker that a
// credential exists but was revoked.
type Error struct {
	Code    Code
	Message string
	Reason  string
	Err     error
}

func (e *Error) Error() string {
	s := e.Message
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// HTTPStatus is the HTTP status for the error's code.
func (e *Error) HTTPStatus() int {
	switch e.Code {
	case CodeInvalid:
		return http.StatusUnprocessableEntity
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict:
		return http.StatusConflict
	case CodeUnauthenticated:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// ErrorCode returns the Code of err, or CodeInternal when err is not an *Error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// HTTPStatus returns the HTTP status for err (500 when it is not an *Error).
func HTTPStatus(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.HTTPStatus()
	}
	return http.StatusInternalServerError
}

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
