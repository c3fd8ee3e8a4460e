package tenancy

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Messages sent to clients. They are the same whatever the reason, and never
// depend on whether the tenant in the path exists.
const (
	msgUnauthenticated = "invalid or missing credentials"
	msgForbidden       = "the credential is not valid for this tenant"
	msgUnavailable     = "authentication data is not loaded yet"
)

func unauthenticated(reason string) *fault.Error {
	return &fault.Error{Code: fault.Unauthenticated, Message: msgUnauthenticated, Reason: reason}
}

// Authenticate identifies the apiserver that sent r and checks that it may
// act for the tenant named in the path: r.PathValue("tenant") when the
// router set it (net/http ServeMux patterns; chi v5.1+ sets it too), else
// the segment after "/t/" in r.URL.Path.
//
// The credential is the URL secret when the path has one
// (r.PathValue("secret"), else the segment after "/k/" in
// /t/{tenant}/k/{secret}/...), and then it decides alone; otherwise the
// Authorization header when there is one (Bearer token or Basic), otherwise
// the client certificate the TLS layer verified against the client CA.
//
// The error is a *fault.Error: 401
// (fault.Unauthenticated) when there is no valid credential, 403
// (fault.Forbidden) when the credential belongs to another tenant than the
// path's, 503 (fault.Unavailable) before the first load or when r's context
// ended while a basic-auth password waited for verification, 429
// (fault.TooManyRequests) when the verifications of the credential or its
// tenant are full (see slowGate). Its Message is the
// same whether or not the path's tenant exists; its Reason says why, for
// logs and metrics only (fault.Status never sends it).
func (a *Authenticator) Authenticate(r *http.Request) (Identity, error) {
	return a.AuthenticateTenant(r, PathTenant(r))
}

// PathTenant is the tenant a webhook request names: r.PathValue("tenant")
// when the router set it, else the segment after "/t/" in r.URL.Path;
// empty when there is none.
func PathTenant(r *http.Request) string {
	if t := r.PathValue("tenant"); t != "" {
		return t
	}
	return pathTenant(r.URL.Path)
}

// pathTenant returns the {tenant} of /t/{tenant}/...
func pathTenant(p string) string {
	rest, ok := strings.CutPrefix(p, "/t/")
	if !ok {
		return ""
	}
	tenant, _, _ := strings.Cut(rest, "/")
	return tenant
}

// urlSecret returns the {secret} of a request routed by a pattern that has
// one, or when r was not routed (no {tenant} either) of a path
// /t/{tenant}/k/{secret}/..., and whether there is one.
func urlSecret(r *http.Request) (string, bool) {
	if s := r.PathValue("secret"); s != "" {
		return s, true
	}
	if r.PathValue("tenant") != "" {
		return "", false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/t/")
	if !ok {
		return "", false
	}
	_, rest, _ = strings.Cut(rest, "/")
	rest, ok = strings.CutPrefix(rest, "k/")
	if !ok {
		return "", false
	}
	secret, _, ok := strings.Cut(rest, "/")
	return secret, ok && secret != ""
}

// AuthenticateTenant is Authenticate with the tenant's name given.
func (a *Authenticator) AuthenticateTenant(r *http.Request, tenant string) (Identity, error) {
	id, err := a.identify(r)
	if err != nil {
		return Identity{}, err
	}
	// Compared in constant time although tenant names are not secret.
	if subtle.ConstantTimeCompare([]byte(id.TenantName), []byte(tenant)) != 1 {
		return Identity{}, &fault.Error{Code: fault.Forbidden, Message: msgForbidden, Reason: "tenant mismatch"}
	}
	return id, nil
}

// identify finds the credential of r, whatever the path says.
func (a *Authenticator) identify(r *http.Request) (Identity, error) {
	s := a.snap.Load()
	if s == nil {
		return Identity{}, &fault.Error{Code: fault.Unavailable, Message: msgUnavailable}
	}
	if secret, ok := urlSecret(r); ok {
		h := hashString(secret)
		e := s.urls[h]
		if e == nil {
			return Identity{}, unauthenticated("unknown URL secret")
		}
		return a.accept(e, h)
	}
	if h := r.Header["Authorization"]; len(h) > 0 { // canonical key: no allocation
		if len(h) > 1 {
			return Identity{}, unauthenticated("several Authorization headers")
		}
		scheme, cred, ok := strings.Cut(h[0], " ")
		if !ok || cred == "" {
			return Identity{}, unauthenticated("malformed Authorization header")
		}
		switch {
		case strings.EqualFold(scheme, "Bearer"):
			return a.token(s, cred)
		case strings.EqualFold(scheme, "Basic"):
			return a.basicAuth(r.Context(), s, cred)
		}
		return Identity{}, unauthenticated("unsupported Authorization scheme")
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		// The TLS layer verified the chain and possession of the key; the
		// fingerprint says which of the certificates we issued it is.
		fp := sha256.Sum256(r.TLS.PeerCertificates[0].Raw)
		e := s.certs[fp]
		if e == nil {
			return Identity{}, unauthenticated("unknown certificate")
		}
		return a.accept(e, fp)
	}
	return Identity{}, unauthenticated("no credential")
}

func (a *Authenticator) token(s *snapshot, tok string) (Identity, error) {
	if !strings.HasPrefix(tok, TokenPrefix) {
		return Identity{}, unauthenticated("malformed token")
	}
	h := hashString(tok)
	e := s.tokens[h]
	if e == nil {
		return Identity{}, unauthenticated("unknown token")
	}
	return a.accept(e, h)
}

// accept checks a looked-up entry and records its use.
func (a *Authenticator) accept(e *entry, h [32]byte) (Identity, error) {
	// The map lookup already matched; compare again in constant time so that
	// correctness never rests on how the map compares keys.
	if subtle.ConstantTimeCompare(e.hash[:], h[:]) != 1 {
		return Identity{}, unauthenticated("unknown credential")
	}
	return a.live(e)
}

func (a *Authenticator) live(e *entry) (Identity, error) {
	if e.revoked.Load() {
		return Identity{}, unauthenticated("revoked")
	}
	now := a.now()
	if !e.expiresAt.IsZero() && !now.Before(e.expiresAt) {
		return Identity{}, unauthenticated("expired")
	}
	// Written at most every 100 ms per credential: replicas' cores do not
	// fight over one cache line on every request.
	if n := now.UnixNano(); n-e.usage.last.Load() > int64(100*time.Millisecond) {
		e.usage.last.Store(n)
	}
	return e.id, nil
}

// hashString is the SHA-256 of s without a heap copy for tokens of usual
// length.
func hashString(s string) [32]byte {
	var buf [128]byte
	if len(s) <= len(buf) {
		n := copy(buf[:], s)
		return sha256.Sum256(buf[:n])
	}
	return sha256.Sum256([]byte(s))
}
