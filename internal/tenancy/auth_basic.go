package tenancy

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// basicAuth checks a Basic credential. argon2id costs tens of milliseconds,
// so a password once verified is remembered (as an HMAC under basicKey) on
// its entry, and a wrong one for NegativeCacheTTL: a retrying apiserver pays
// for one verification, not one per request.
func (a *Authenticator) basicAuth(s *snapshot, cred string) (Identity, error) {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return Identity{}, unauthenticated("malformed basic credentials")
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return Identity{}, unauthenticated("malformed basic credentials")
	}
	e := s.basic[user]
	if e == nil {
		return Identity{}, unauthenticated("unknown user")
	}
	mac := hmac.New(sha256.New, a.basicKey[:])
	mac.Write([]byte(user))
	mac.Write([]byte{0})
	mac.Write([]byte(pass))
	var sum [32]byte
	mac.Sum(sum[:0])
	if ok := e.basicOK.Load(); ok != nil && subtle.ConstantTimeCompare(ok[:], sum[:]) == 1 {
		return a.live(e)
	}
	if _, bad := a.basicBad.Get(sum); bad {
		return Identity{}, unauthenticated("wrong password (cached)")
	}
	// Slow path: argon2id, at most a few at a time.
	a.basicSlow <- struct{}{}
	match, err := verifyPassword(e.phc, pass)
	<-a.basicSlow
	if err != nil || !match {
		a.basicBad.Add(sum, struct{}{})
		return Identity{}, unauthenticated("wrong password")
	}
	e.basicOK.Store(&sum)
	return a.live(e)
}
