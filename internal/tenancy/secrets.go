package tenancy

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// TokenPrefix starts every bearer token, so that a leaked one can be found by
// grepping (for example with `grep -rE 'pcat_[a-z2-7]{52}'`).
const TokenPrefix = "pcat_"

// UsernamePrefix starts every generated basic-auth username.
const UsernamePrefix = "pcu_"

// URLSecretPrefix starts every URL secret, so that a leaked one can be
// found by grepping as tokens are.
const URLSecretPrefix = "pcuk_"

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// newToken returns a bearer token with 256 random bits and its SHA-256.
func newToken() (string, [32]byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	tok := TokenPrefix + strings.ToLower(b32.EncodeToString(b[:]))
	return tok, sha256.Sum256([]byte(tok))
}

// newURLSecret returns a URL secret with 256 random bits and its SHA-256:
// lower-case letters, digits and one underscore, one URL path segment that
// needs no escaping.
func newURLSecret() (string, [32]byte) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	s := URLSecretPrefix + strings.ToLower(b32.EncodeToString(b[:]))
	return s, sha256.Sum256([]byte(s))
}

// newUsername returns a random, globally unique basic-auth username. It is
// random rather than derived from the tenant's name so that it says nothing
// about which tenants exist.
func newUsername() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return UsernamePrefix + strings.ToLower(b32.EncodeToString(b[:]))
}

// newPassword returns a password with 256 random bits.
func newPassword() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// argon2id parameters: OWASP's recommendation (19 MiB, 2 passes, 1 lane).
// Verification costs tens of milliseconds; Authenticator caches successes
// and bounds how many run at once.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// hashPassword returns a PHC string: $argon2id$v=19$m=..,t=..,p=..$salt$hash.
func hashPassword(password string) string {
	var salt [16]byte
	_, _ = rand.Read(salt[:])
	key := argon2.IDKey([]byte(password), salt[:], argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt[:]), base64.RawStdEncoding.EncodeToString(key))
}

var errBadHash = errors.New("malformed password hash")

// verifyPassword checks password against a PHC string from hashPassword,
// in constant time.
func verifyPassword(phc, password string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || t == 0 || p == 0 {
		return false, errBadHash
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
