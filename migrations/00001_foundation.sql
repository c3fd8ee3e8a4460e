-- +goose Up
-- Tokens for the admin API. Only a SHA-256 of the secret is stored; the
-- secret itself is shown once, when it is created.
CREATE TABLE admin_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text        NOT NULL,
    role         text        NOT NULL CHECK (role IN ('operator', 'admin', 'viewer')),
    token_hash   bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz
);

-- +goose Down
DROP TABLE admin_tokens;
