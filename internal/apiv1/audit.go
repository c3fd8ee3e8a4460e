package apiv1

import "time"

// AuditEntry is one mutating call of the admin API, as GET
// /api/v1/audit and /api/v1/tenants/{tenant}/audit list them.
type AuditEntry struct {
	ID   int64     `json:"id"`
	Time time.Time `json:"time"`
	// Actor identifies who made the call: the token's id and role
	// ("token:42/admin"). ActorName is the token's name, a label that
	// anyone who mints a token may choose: never an identity.
	Actor     string `json:"actor"`
	ActorName string `json:"actorName,omitempty"`
	TokenID   int64  `json:"tokenId,omitempty"`
	// Tenant is the tenant's name; empty for gateway-wide objects such as
	// operator tokens.
	Tenant    string `json:"tenant,omitempty"`
	Action    string `json:"action"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// VersionBefore and VersionAfter are the object's versions around the
	// change, where it has versions (policy objects).
	VersionBefore *int64         `json:"versionBefore,omitempty"`
	VersionAfter  *int64         `json:"versionAfter,omitempty"`
	DryRun        bool           `json:"dryRun,omitempty"`
	Detail        map[string]any `json:"detail,omitempty"`
}
