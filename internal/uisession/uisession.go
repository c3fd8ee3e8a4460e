// Package uisession is what the web UI (internal/ui) and the admin API
// share about a browser's session, so that neither imports the other and
// the UI never touches the database (internal/archtest holds both rules):
// the stored session, the store the gateway wires in (adminauth.Store's),
// and how an in-process API call names the session's token.
package uisession

import (
	"context"
	"errors"
	"time"
)

// Session is one signed-in browser as stored, shared by every replica.
type Session struct {
	// IDHash is the SHA-256 of the random session id in the browser's
	// cookie; the id itself is never stored.
	IDHash []byte
	// TokenID is the admin token the session acts as. Its secret is never
	// stored; the token is checked whenever the session is found.
	TokenID int64
	// Name, Role and Tenant describe the token: Tenant is empty for an
	// operator. CreateSession refuses a token that does not match them.
	Name, Role, Tenant string
	// TokenExpiresAt is the token's own expiry, if it has one.
	TokenExpiresAt *time.Time
	// ExpiresAt is absolute; IdleExpiresAt moves on with use.
	ExpiresAt, IdleExpiresAt time.Time
	// Flash is a one-time message for the next page.
	Flash string
	// Issued is the last credential issued in the session, sealed by the
	// UI with a key that only the session id gives.
	Issued []byte
}

// ErrNotFound covers unknown, expired and signed-out sessions and those
// whose token was revoked, expired or changed, alike.
var ErrNotFound = errors.New("no such session")

// Store keeps sessions. An interface because the UI may not import the
// database (adminauth.Store implements it).
type Store interface {
	// CreateSession stores s (IDHash, TokenID, Role, Tenant, ExpiresAt,
	// IdleExpiresAt) if its token is valid and matches; else ErrNotFound.
	// It also deletes the sessions expired at now.
	CreateSession(ctx context.Context, s Session, now time.Time) error
	// FindSession returns the session if it and its token are still valid
	// at now, and moves its idle expiry on to idleUntil. A session that is
	// not valid is deleted and is ErrNotFound.
	FindSession(ctx context.Context, idHash []byte, now, idleUntil time.Time) (Session, error)
	DeleteSession(ctx context.Context, idHash []byte) error
	SetSessionFlash(ctx context.Context, idHash []byte, flash string) error
	// ClearSessionFlash clears the flash if it is still flash.
	ClearSessionFlash(ctx context.Context, idHash []byte, flash string) error
	SetSessionIssued(ctx context.Context, idHash []byte, sealed []byte) error
}

type tokenKey struct{}

// WithToken marks an in-process admin API call as the UI's, acting as the
// admin token id of the session the UI found. Only code in this process
// can set a context value, so no network caller can claim one; the API
// still checks the token as it checks a bearer token.
func WithToken(ctx context.Context, tokenID int64) context.Context {
	return context.WithValue(ctx, tokenKey{}, tokenID)
}

// Token returns the token id WithToken set, if any.
func Token(ctx context.Context) (int64, bool) {
	id, ok := ctx.Value(tokenKey{}).(int64)
	return id, ok
}

type signInKey struct{}

// WithSignIn marks an in-process admin API call as the UI's check of a
// token presented at sign-in. The UI's own sign-in throttle bounds those,
// and a valid token must always sign in, so the API does not refuse them
// for its client address having presented unknown tokens (all the UI's
// calls come from one in-process address).
func WithSignIn(ctx context.Context) context.Context {
	return context.WithValue(ctx, signInKey{}, true)
}

// SignIn reports whether ctx is marked by WithSignIn.
func SignIn(ctx context.Context) bool {
	b, _ := ctx.Value(signInKey{}).(bool)
	return b
}
