package tenancy

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// basicAuth checks a Basic credential. argon2id costs tens of milliseconds,
// so a password once verified is remembered (as an HMAC under basicKey) on
// its entry, and a wrong one for NegativeCacheTTL: a retrying apiserver pays
// for one verification, not one per request. The verifications themselves
// run under a.slow, which bounds them per credential and per tenant and
// drops those whose callers have gone (see slowGate); an unknown username
// costs a verification too, so that timing does not tell it apart.
func (a *Authenticator) basicAuth(ctx context.Context, s *snapshot, cred string) (Identity, error) {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return Identity{}, unauthenticated("malformed basic credentials")
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return Identity{}, unauthenticated("malformed basic credentials")
	}
	e := s.basic[user]
	mac := hmac.New(sha256.New, a.basicKey[:])
	mac.Write([]byte(user))
	mac.Write([]byte{0})
	mac.Write([]byte(pass))
	var sum [32]byte
	mac.Sum(sum[:0])
	if e != nil {
		if ok := e.basicOK.Load(); ok != nil && subtle.ConstantTimeCompare(ok[:], sum[:]) == 1 {
			return a.live(e)
		}
	}
	if _, bad := a.basicBad.Get(sum); bad {
		if e == nil {
			return Identity{}, unauthenticated("unknown user")
		}
		return Identity{}, unauthenticated("wrong password (cached)")
	}
	c := slowCall{key: sum, tenantID: unknownTenant, username: user, phc: dummyPHC(), password: pass,
		done: func(bool) { a.basicBad.Add(sum, struct{}{}) }}
	if e != nil {
		c.tenantID, c.phc = e.id.TenantID, e.phc
		c.done = func(match bool) {
			if match {
				e.basicOK.Store(&sum)
			} else {
				a.basicBad.Add(sum, struct{}{})
			}
		}
	}
	match, err := a.slow.verify(ctx, c)
	switch {
	case err != nil:
		return Identity{}, err
	case e == nil:
		return Identity{}, unauthenticated("unknown user")
	case !match:
		return Identity{}, unauthenticated("wrong password")
	}
	return a.live(e)
}
