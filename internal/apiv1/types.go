// Package apiv1 holds the wire types of the admin REST API (/api/v1). The
// server and the admin CLI share them, so that the CLI stays a thin client
// that cannot drift from the server. It depends on nothing but the standard
// library and encoding/json, on purpose: the CLI must not pull in the
// server's database and CEL dependencies through it.
package apiv1

import (
	"encoding/json"
	"time"
)

// List is every list answer. Continue, when not empty, is the cursor of
// the next page: pass it back as ?continue=.
type List[T any] struct {
	Items    []T    `json:"items"`
	Continue string `json:"continue,omitempty"`
}

// Paging query parameters of every list endpoint.
const (
	QueryLimit    = "limit"
	QueryContinue = "continue"
	DefaultLimit  = 100
	MaxLimit      = 1000
	// QueryActiveOnly=true leaves revoked and expired tokens or
	// credentials out of their lists.
	QueryActiveOnly = "activeOnly"
)

// WhoAmI is GET /api/v1/whoami.
type WhoAmI struct {
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Tenant    string     `json:"tenant,omitempty"`
	TokenID   int64      `json:"tokenId"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// Tenant is an organisation.
type Tenant struct {
	Name        string    `json:"name"`
	DisplayName string    `json:"displayName,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// TenantCreate is POST /api/v1/tenants.
type TenantCreate struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
}

// Cluster is one apiserver fleet of a tenant.
type Cluster struct {
	Name      string            `json:"name"`
	Tenant    string            `json:"tenant"`
	Labels    map[string]string `json:"labels,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
}

// ClusterCreate is POST /api/v1/tenants/{tenant}/clusters. With
// Credential set, the first credential is issued in the same call and the
// answer is a ClusterCreated.
type ClusterCreate struct {
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels,omitempty"`
	Credential *CredentialCreate `json:"credential,omitempty"`
}

// ClusterCreated answers a ClusterCreate.
type ClusterCreated struct {
	Cluster    Cluster           `json:"cluster"`
	Credential *CredentialIssued `json:"credential,omitempty"`
}

// ClusterUpdate is PATCH /api/v1/tenants/{tenant}/clusters/{cluster}: the
// labels replace the cluster's labels.
type ClusterUpdate struct {
	Labels map[string]string `json:"labels"`
}

// Credential types.
const (
	AuthToken       = "token"
	AuthCertificate = "certificate"
	AuthBasic       = "basic"
	// AuthURL is a secret in the webhook URL's path, for managed control
	// planes that cannot load an AdmissionConfiguration.
	AuthURL = "url"
)

// Credential describes one credential of a cluster; it never holds a secret.
type Credential struct {
	ID             int64      `json:"id"`
	Type           string     `json:"type"`
	Description    string     `json:"description,omitempty"`
	Username       string     `json:"username,omitempty"`
	Fingerprint    string     `json:"fingerprint,omitempty"`
	CertificatePEM string     `json:"certificatePEM,omitempty"`
	Active         bool       `json:"active"`
	CreatedAt      time.Time  `json:"createdAt"`
	ExpiresAt      *time.Time `json:"expiresAt,omitempty"`
	RevokedAt      *time.Time `json:"revokedAt,omitempty"`
	LastUsedAt     *time.Time `json:"lastUsedAt,omitempty"`
}

// CredentialCreate is POST .../clusters/{cluster}/credentials.
type CredentialCreate struct {
	// Type is token (the default), certificate, basic or url.
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	// ExpiresIn is a Go duration ("720h"); empty means no expiry.
	ExpiresIn string `json:"expiresIn,omitempty"`
	// CSR is a PEM certificate signing request (type certificate): the
	// gateway signs it instead of generating a key.
	CSR string `json:"csr,omitempty"`
	// WebhookURL is the gateway's webhook address as the cluster's
	// apiservers reach it, for the generated artifacts; the server's own
	// webhook URL when empty.
	WebhookURL string `json:"webhookURL,omitempty"`
}

// CredentialIssued answers a credential create or rotate: the secret is
// here and nowhere else, ever.
type CredentialIssued struct {
	Credential     Credential `json:"credential"`
	Token          string     `json:"token,omitempty"`
	Username       string     `json:"username,omitempty"`
	Password       string     `json:"password,omitempty"`
	CertificatePEM string     `json:"certificatePEM,omitempty"`
	KeyPEM         string     `json:"keyPEM,omitempty"`
	// URLSecret is the path segment of a url credential's webhook URLs.
	URLSecret string `json:"urlSecret,omitempty"`
	// Artifacts carry the secret too (in the kubeconfig, or for a url
	// credential in the webhooks' URLs).
	Artifacts Artifacts `json:"artifacts"`
}

// CredentialRotate is POST .../credentials/{id}/rotate: a new credential of
// the same type is issued, and the old one expires after Grace (a Go
// duration; "0s" revokes it at once; default 24h), so that apiservers can
// be moved over without downtime.
type CredentialRotate struct {
	Grace      string `json:"grace,omitempty"`
	ExpiresIn  string `json:"expiresIn,omitempty"`
	WebhookURL string `json:"webhookURL,omitempty"`
}

// Artifacts are what a cluster's apiservers need to call the gateway. The
// names are the files `admin cluster create --out DIR` writes.
type Artifacts struct {
	// Kubeconfig holds the credential's secret; it is returned only when a
	// credential is issued.
	// A certificate signed from a CSR has no kubeconfig: the gateway never
	// saw its key.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// AdmissionConfiguration is for the apiserver's
	// --admission-control-config-file. It points both webhook admission
	// plugins at the kubeconfig at KubeconfigPath; the admin may install the
	// kubeconfig elsewhere and change kubeConfigFile to match (the apiserver
	// needs an absolute path).
	AdmissionConfiguration string `json:"admissionConfiguration"`
	// Webhooks is the ValidatingWebhookConfiguration to apply to the cluster.
	Webhooks string `json:"webhooks"`
	// WebhooksHoldSecret says that Webhooks carries a url credential's
	// secret in its URLs: keep it as secret as a kubeconfig.
	WebhooksHoldSecret bool `json:"webhooksHoldSecret,omitempty"`
	// Warnings name the tenant's policies that match requests the webhooks
	// leave out by default (events, authentication and authorization
	// reviews, pods/binding, leases): those policies never see them.
	Warnings []string `json:"warnings,omitempty"`
}

// KubeconfigPath is where the generated AdmissionConfiguration expects the
// kubeconfig on the apiserver's hosts.
const KubeconfigPath = "/etc/kubernetes/portcullis/kubeconfig.yaml"

// Admin token roles.
const (
	RoleOperator = "operator"
	RoleAdmin    = "admin"
	RoleViewer   = "viewer"
	// RoleSync is a cluster's namespace sync (admin namespaces sync): it
	// may only push that cluster's inventory.
	RoleSync = "sync"
)

// Token describes an admin API token; it never holds the secret.
type Token struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	Tenant    string `json:"tenant,omitempty"`
	Cluster   string `json:"cluster,omitempty"` // of a sync token
	CreatedBy string `json:"createdBy,omitempty"`
	// CreatedByID is the id of the token that created it, when known.
	CreatedByID int64      `json:"createdById,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	RevokedAt   *time.Time `json:"revokedAt,omitempty"`
	LastUsedAt  *time.Time `json:"lastUsedAt,omitempty"`
	// RevokedWith, in the answer of a revocation with ?cascade=true, are
	// the ids of the tokens it had minted, directly or not, revoked with it.
	RevokedWith []int64 `json:"revokedWith,omitempty"`
}

// TokenCreate is POST /api/v1/tokens. Tenant is required for admin and
// viewer tokens and must be empty for operator tokens.
type TokenCreate struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Tenant    string `json:"tenant,omitempty"`
	Cluster   string `json:"cluster,omitempty"` // required for a sync token, and only for one
	ExpiresIn string `json:"expiresIn,omitempty"`
}

// TokenIssued answers a TokenCreate; Secret is shown once.
type TokenIssued struct {
	Token  Token  `json:"token"`
	Secret string `json:"secret"`
}

// Apply result actions, as kubectl prints them.
const (
	ActionCreated    = "created"
	ActionConfigured = "configured"
	ActionUnchanged  = "unchanged"
	ActionDeleted    = "deleted"
	ActionRolledBack = "rolled back"
)

// ApplyResult answers POST /api/v1/tenants/{tenant}/apply. An apply is all
// or nothing: if any document is refused, nothing is written and the answer
// is a 422 Status whose causes name the document (documents[i]) and field.
type ApplyResult struct {
	DryRun  bool        `json:"dryRun,omitempty"`
	Results []ApplyItem `json:"results"`
	// Version is the tenant's policy version after the apply.
	Version int64 `json:"version"`
}

// ApplyItem is the result for one document, in document order.
type ApplyItem struct {
	Document   int    `json:"document"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Action     string `json:"action"`
	// ResourceVersion is the object's version after the apply.
	ResourceVersion int64    `json:"resourceVersion"`
	Warnings        []string `json:"warnings,omitempty"`
}

// Object types of GET /api/v1/tenants/{tenant}/objects?type=.
const (
	TypePolicies = "policies"
	TypeBindings = "bindings"
	TypeParams   = "params"
)

// Version is one entry of an object's history.
type Version struct {
	Version    int64     `json:"version"`
	Operation  string    `json:"operation"`
	Author     string    `json:"author"`
	Time       time.Time `json:"time"`
	APIVersion string    `json:"apiVersion"`
	RollbackOf int64     `json:"rollbackOf,omitempty"`
	// Object is the object as written; absent for a deletion and in lists.
	Object json.RawMessage `json:"object,omitempty"`
}

// Diff answers GET .../diff?from=&to=: a unified diff of the two versions'
// YAML.
type Diff struct {
	From int64  `json:"from"`
	To   int64  `json:"to"`
	Diff string `json:"diff"`
}

// Rollback is POST .../rollback.
type Rollback struct {
	ToVersion int64 `json:"toVersion"`
	// ResourceVersion, when set, is a precondition on the current version.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// NamespaceImport answers PUT .../clusters/{cluster}/namespaces.
type NamespaceImport struct {
	Namespaces int `json:"namespaces"`
}

// NamespaceSync is POST .../clusters/{cluster}/namespaces/sync, one push of
// the cluster's namespace sync. With Full, Namespaces is the cluster's whole
// inventory (a list); otherwise Namespaces are added or updated and Deleted
// removed (watch events). An empty push is a heartbeat. Every push renews
// the sync's lease: while it runs, the gateway learns nothing from the
// cluster's traffic.
type NamespaceSync struct {
	Full       bool              `json:"full,omitempty"`
	Namespaces []json.RawMessage `json:"namespaces,omitempty"`
	Deleted    []string          `json:"deleted,omitempty"`
}

// NamespaceSyncResult answers a NamespaceSync.
type NamespaceSyncResult struct {
	PushedAt time.Time `json:"pushedAt"`
	// LeaseSeconds is how long the push keeps the sync counted as running.
	LeaseSeconds int `json:"leaseSeconds"`
}

// CRDImport answers PUT .../clusters/{cluster}/crds.
type CRDImport struct {
	CRDs int `json:"crds"`
}

// EvaluateRequest is POST .../clusters/{cluster}/evaluate.
type EvaluateRequest struct {
	// Review is the AdmissionReview (admission.k8s.io/v1 or v1beta1) as an
	// apiserver would send it.
	Review json.RawMessage `json:"review"`
	// Objects, when set, is a candidate set of policies, bindings and
	// params (the objects of an apply body) laid over the stored ones, as if
	// they had been applied. With Replace, they are evaluated alone.
	Objects []json.RawMessage `json:"objects,omitempty"`
	Replace bool              `json:"replace,omitempty"`
	// Mutate evaluates as the mutating webhook (/mutate) would: the
	// MutatingAdmissionPolicies, answering with a JSONPatch.
	Mutate bool `json:"mutate,omitempty"`
	// Chain evaluates as the apiserver's admission chain would: when a
	// MutatingAdmissionPolicy binding matches the request, the mutating
	// webhook, then the validating one on the mutated object; otherwise
	// the validating webhook alone. It excludes Mutate.
	Chain bool `json:"chain,omitempty"`
}

// EvaluateResponse answers an EvaluateRequest.
type EvaluateResponse struct {
	// Review is exactly the AdmissionReview the webhook would return.
	Review json.RawMessage `json:"review"`
	Trace  []BindingTrace  `json:"trace"`
	// SnapshotVersion is the tenant's policy version evaluated (before any
	// candidate objects).
	SnapshotVersion int64 `json:"snapshotVersion"`
	Candidate       bool  `json:"candidate,omitempty"`
	// Object is, with Mutate (or Chain, when the mutating webhook ran),
	// the object after the mutations, when they changed it:
	// request.object with the mutating answer's patch applied.
	Object json.RawMessage `json:"object,omitempty"`
	// Evaluated names the webhooks evaluated, in order: "validate" or
	// "mutate" alone, or, with Chain, "mutate" then "validate" (only
	// "mutate" when the mutating webhook denied the request, as the
	// apiserver then calls no validating webhook).
	Evaluated []string `json:"evaluated"`
	// Mutation is, with Chain, the mutating webhook's answer and trace
	// when it ran; Review and Trace are then the validating webhook's, on
	// the mutated object, and empty when the mutation denied.
	Mutation *EvaluateStep `json:"mutation,omitempty"`
}

// EvaluateStep is one webhook's answer in an evaluation of the admission
// chain.
type EvaluateStep struct {
	Review json.RawMessage `json:"review"`
	Trace  []BindingTrace  `json:"trace"`
}

// BindingTrace explains one (policy, binding, param) evaluation.
type BindingTrace struct {
	Policy  string `json:"policy"`
	Binding string `json:"binding,omitempty"`
	Param   string `json:"param,omitempty"`
	Matched bool   `json:"matched"`
	// Reason says why it did not match, or why evaluation stopped.
	Reason           string            `json:"reason,omitempty"`
	Outcome          string            `json:"outcome"`
	MatchConditions  []ExpressionTrace `json:"matchConditions,omitempty"`
	Validations      []ExpressionTrace `json:"validations,omitempty"`
	AuditAnnotations []ExpressionTrace `json:"auditAnnotations,omitempty"`
	// Mutations are a MutatingAdmissionPolicy's mutations, in the order
	// they were applied.
	Mutations []MutationTrace `json:"mutations,omitempty"`
	Cost      int64           `json:"cost"`
	// Reinvoked marks an evaluation of the mutating plugin's second pass,
	// which re-runs the reinvocationPolicy IfNeeded policies.
	Reinvoked bool `json:"reinvoked,omitempty"`
}

// MutationTrace is one applied mutation of a MutatingAdmissionPolicy.
type MutationTrace struct {
	// Index is the mutation's position in spec.mutations.
	Index      int    `json:"index"`
	PatchType  string `json:"patchType"`
	Expression string `json:"expression"`
	// Changed is false for a mutation that applied without changing the
	// object (it set what was there, or a JSON patch's test failed).
	Changed bool   `json:"changed"`
	Error   string `json:"error,omitempty"`
	// Cost is the CEL cost of the expression, 0 when it did not run.
	Cost int64 `json:"cost"`
}

// ExpressionTrace is one evaluated CEL expression.
type ExpressionTrace struct {
	Name       string `json:"name,omitempty"`
	Expression string `json:"expression"`
	Result     string `json:"result,omitempty"`
	Message    string `json:"message,omitempty"`
	Error      string `json:"error,omitempty"`
	Cost       int64  `json:"cost"`
}
