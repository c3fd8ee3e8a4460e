package artifacts

import (
	"errors"
	"path"
)

// URLSecretPath is the path of a tenant's endpoint ("validate" or "mutate")
// under the gateway URL: /t/<tenant>/<endpoint>, or with a url credential's
// secret /t/<tenant>/k/<secret>/<endpoint>. A webhook's clientConfig.url may
// hold a path but no user info and no query, so the path is where a secret
// can go. The gateway routes both shapes.
func URLSecretPath(tenant, secret, endpoint string) string {
	if secret == "" {
		return path.Join("/t", tenant, endpoint)
	}
	return path.Join("/t", tenant, "k", secret, endpoint)
}

// checkURLSecret accepts "" (no secret) or one path segment that needs no
// escaping: letters, digits, '-' and '_', at least 22 characters (128 bits
// of base64url).
func checkURLSecret(s string) error {
	if s == "" {
		return nil
	}
	if len(s) < 22 {
		return errors.New("the URL secret is too short")
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return errors.New("the URL secret must be one path segment of letters, digits, '-' and '_'")
		}
	}
	return nil
}
