package admission

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// validationFailureKey is the plugin's annotation for Audit-action
// violations.
const validationFailureKey = "validation.policy.admission.k8s.io/validation_failure"

// maxKeyLen is the longest audit annotation key the apiserver keeps from a
// webhook: it stores "<webhook name>/<key>" and drops a key that is not a
// qualified-name part of at most 63 characters.
const maxKeyLen = 63

// WebhookAuditKey maps a key of the VAP plugin to one the apiserver accepts
// from a webhook:
//
//	validation.policy.admission.k8s.io/validation_failure -> validation_failure
//	<policy>/<key> -> <policy>.<key>
//
// When "<policy>.<key>" is longer than 63 characters the policy name is cut
// and suffixed with the first 8 hex digits of its SHA-256, so that distinct
// long policy names stay distinct: "<cut>-<hash8>.<key>", exactly 63 long.
func WebhookAuditKey(key string) string {
	if key == validationFailureKey {
		return "validation_failure"
	}
	policy, k, ok := strings.Cut(key, "/")
	if !ok {
		return key
	}
	joined := policy + "." + k
	if len(joined) <= maxKeyLen {
		return joined
	}
	sum := sha256.Sum256([]byte(policy))
	hash := hex.EncodeToString(sum[:4])
	keep := maxKeyLen - len(k) - len(hash) - 2 // "-" and "."
	if keep < 1 {
		// The key alone is too long to leave room for any of the policy
		// name (keys are at most 63 characters). Keep the hash and as
		// much of the key as fits.
		return hash + "." + k[:maxKeyLen-len(hash)-1]
	}
	return policy[:keep] + "-" + hash + "." + k
}
