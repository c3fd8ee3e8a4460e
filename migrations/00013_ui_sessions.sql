-- +goose Up
-- The web UI's sessions, shared by every replica (docs/ui.md). A row is
-- found by the SHA-256 of the random id in the browser's cookie: neither
-- that id nor the admin token's secret is stored, so a copy of this table
-- signs no one in. A session names its admin token, which is checked on
-- every request, so revoking the token ends its sessions on every replica
-- at once; a deleted token (with its tenant) takes its sessions along.
-- role and tenant_id are the token's at sign-in; a token that no longer
-- matches them does not carry the session.
-- No tenant_id first in the key: an operator's session has no tenant, the
-- table holds one small row per signed-in browser, and it is never
-- distributed.
CREATE TABLE ui_sessions (
    id_hash         bytea       PRIMARY KEY CHECK (length(id_hash) = 32),
    token_id        bigint      NOT NULL REFERENCES admin_tokens (id) ON DELETE CASCADE,
    role            text        NOT NULL,
    tenant_id       bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- expires_at is absolute; idle_expires_at moves on with use.
    expires_at      timestamptz NOT NULL,
    idle_expires_at timestamptz NOT NULL,
    -- flash is a one-time message for the next page.
    flash           text        NOT NULL DEFAULT '',
    -- issued is the last credential issued in the session, sealed
    -- (AES-GCM) with a key derived from the session id, which only the
    -- browser holds.
    issued          bytea
);
CREATE INDEX ui_sessions_token ON ui_sessions (token_id);
CREATE INDEX ui_sessions_expiry ON ui_sessions (least(expires_at, idle_expires_at));

-- +goose Down
DROP TABLE ui_sessions;
