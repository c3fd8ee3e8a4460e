package api

import (
	"crypto/sha256"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/authmiss"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/uisession"
)

// authenticateBearer checks a bearer token under s.UnknownTokens: a token
// found unknown in the last minute is refused without a lookup, and an
// address that presented too many unknown tokens gets 429 for a token this
// replica has not seen valid (package authmiss), so that a flood of wrong
// tokens costs the database a bounded number of reads. A token without
// the pcadm_ prefix costs no lookup and is not counted.
func (s *Server) authenticateBearer(c *call, token string) (adminauth.Principal, error) {
	if !strings.HasPrefix(token, adminauth.Prefix) {
		return s.Tokens.Authenticate(c.ctx(), token)
	}
	key := sha256.Sum256([]byte(token))
	addr := clientHost(c.r.RemoteAddr)
	switch v, wait := s.UnknownTokens.Check(addr, key); {
	case v == authmiss.Unknown:
		return adminauth.Principal{}, adminauth.ErrUnauthenticated
	case v == authmiss.Limited && !uisession.SignIn(c.ctx()):
		secs := max(1, int(math.Ceil(wait.Seconds())))
		c.w.Header().Set("Retry-After", strconv.Itoa(secs))
		return adminauth.Principal{}, fault.Errorf(fault.TooManyRequests,
			"too many requests with unknown admin tokens from your address; retry in %d s", secs)
	}
	p, err := s.Tokens.Authenticate(c.ctx(), token)
	switch {
	case errors.Is(err, adminauth.ErrUnauthenticated):
		s.UnknownTokens.Miss(addr, key)
	case err == nil:
		s.UnknownTokens.Hit(key)
	}
	return p, err
}

func clientHost(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}
