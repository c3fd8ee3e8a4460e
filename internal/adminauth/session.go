package adminauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/uisession"
)

// The web UI's sessions (table ui_sessions): Store implements
// uisession.Store. A session is only as good as its token, so every
// lookup checks the token as Authenticate does.

var _ uisession.Store = (*Store)(nil)

// validToken is the condition under which a token k carries a session s.
const validToken = `k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
	AND k.role IN ('operator', 'admin', 'viewer')`

// CreateSession stores a session for a valid token whose role and tenant
// are those of ss, and deletes every session expired at now, so that the
// table holds no more than the sessions of the last TTL without a
// background job.
func (s *Store) CreateSession(ctx context.Context, ss uisession.Session, now time.Time) error {
	var created bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM ui_sessions WHERE least(expires_at, idle_expires_at) <= $1`, now); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO ui_sessions (id_hash, token_id, role, tenant_id, expires_at, idle_expires_at)
			SELECT $1, k.id, k.role, k.tenant_id, $5, $6
			FROM admin_tokens k LEFT JOIN tenants t ON t.id = k.tenant_id
			WHERE k.id = $2 AND k.role = $3 AND coalesce(t.name, '') = $4 AND `+validToken,
			ss.IDHash, ss.TokenID, ss.Role, ss.Tenant, ss.ExpiresAt, ss.IdleExpiresAt)
		created = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return fmt.Errorf("create UI session: %w", err)
	}
	if !created {
		return uisession.ErrNotFound
	}
	return nil
}

// FindSession returns the session and its token's description. It is a
// plain read: an unknown id costs no write (issue 30, finding 10). A
// session that exists but is no longer valid is deleted; the idle expiry
// and the token's last_used_at are written at most once a minute, so that
// browsing does not write on every page.
func (s *Store) FindSession(ctx context.Context, idHash []byte, now, idleUntil time.Time) (uisession.Session, error) {
	ss := uisession.Session{IDHash: idHash}
	var tenant *string
	var valid, staleIdle, staleUse bool
	err := s.pool.QueryRow(ctx, `
		SELECT coalesce(k.id, 0), coalesce(k.name, ''), coalesce(k.role, ''), t.name, k.expires_at,
			s.expires_at, s.idle_expires_at, s.flash, s.issued,
			k.id IS NOT NULL AND s.expires_at > $2 AND s.idle_expires_at > $2 AND `+validToken+`,
			s.idle_expires_at < $3::timestamptz - interval '1 minute',
			k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute'
		FROM ui_sessions s
		LEFT JOIN admin_tokens k ON k.id = s.token_id AND k.role = s.role AND k.tenant_id IS NOT DISTINCT FROM s.tenant_id
		LEFT JOIN tenants t ON t.id = k.tenant_id
		WHERE s.id_hash = $1`,
		idHash, now, idleUntil).Scan(&ss.TokenID, &ss.Name, &ss.Role, &tenant, &ss.TokenExpiresAt,
		&ss.ExpiresAt, &ss.IdleExpiresAt, &ss.Flash, &ss.Issued, &valid, &staleIdle, &staleUse)
	if errors.Is(err, pgx.ErrNoRows) {
		return uisession.Session{}, uisession.ErrNotFound
	}
	if err != nil {
		return uisession.Session{}, fmt.Errorf("look up UI session: %w", err)
	}
	if !valid {
		// Expired, or its token is no longer valid: it goes now.
		if err := s.DeleteSession(ctx, idHash); err != nil {
			return uisession.Session{}, err
		}
		return uisession.Session{}, uisession.ErrNotFound
	}
	if staleIdle {
		if _, err := s.pool.Exec(ctx, `UPDATE ui_sessions SET idle_expires_at = $2 WHERE id_hash = $1 AND idle_expires_at < $2`,
			idHash, idleUntil); err != nil {
			return uisession.Session{}, fmt.Errorf("extend UI session: %w", err)
		}
		ss.IdleExpiresAt = idleUntil
	}
	if staleUse {
		if err := s.touchToken(ctx, ss.TokenID); err != nil {
			return uisession.Session{}, err
		}
	}
	if tenant != nil {
		ss.Tenant = *tenant
	}
	return ss, nil
}

// DeleteSession ends a session; an unknown one is no error.
func (s *Store) DeleteSession(ctx context.Context, idHash []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM ui_sessions WHERE id_hash = $1`, idHash); err != nil {
		return fmt.Errorf("delete UI session: %w", err)
	}
	return nil
}

func (s *Store) SetSessionFlash(ctx context.Context, idHash []byte, flash string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE ui_sessions SET flash = $2 WHERE id_hash = $1`, idHash, flash); err != nil {
		return fmt.Errorf("set UI session message: %w", err)
	}
	return nil
}

func (s *Store) ClearSessionFlash(ctx context.Context, idHash []byte, flash string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE ui_sessions SET flash = '' WHERE id_hash = $1 AND flash = $2`, idHash, flash); err != nil {
		return fmt.Errorf("clear UI session message: %w", err)
	}
	return nil
}

func (s *Store) SetSessionIssued(ctx context.Context, idHash []byte, sealed []byte) error {
	if _, err := s.pool.Exec(ctx, `UPDATE ui_sessions SET issued = $2 WHERE id_hash = $1`, idHash, sealed); err != nil {
		return fmt.Errorf("store UI session's credential: %w", err)
	}
	return nil
}
