-- +goose Up
-- Tenants, their clusters and the credentials with which a cluster's
-- apiservers authenticate to the webhook. Every row below tenants carries
-- tenant_id, and the composite foreign keys make it impossible for a row to
-- point at another tenant's cluster.
CREATE TABLE tenants (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text        NOT NULL UNIQUE
                 CHECK (length(name) <= 63 AND name ~ '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'),
    display_name text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE clusters (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name       text        NOT NULL
               CHECK (length(name) <= 63 AND name ~ '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'),
    labels     jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name),
    UNIQUE (tenant_id, id)
);

-- One row per credential. Exactly one of the three secret columns groups is
-- set, by type:
--   token:       token_hash  = SHA-256 of the bearer token (the token is shown once)
--   certificate: fingerprint = SHA-256 of the certificate's DER; certificate holds the DER
--   basic:       username (global, random) and password_hash (argon2id, PHC string)
-- Lookups by secret are global (the apiserver does not say its tenant before
-- it authenticates), hence the global unique indexes.
CREATE TABLE credentials (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id     bigint      NOT NULL,
    cluster_id    bigint      NOT NULL,
    type          text        NOT NULL CHECK (type IN ('token', 'certificate', 'basic')),
    description   text        NOT NULL DEFAULT '',
    token_hash    bytea       UNIQUE CHECK (length(token_hash) = 32),
    fingerprint   bytea       UNIQUE CHECK (length(fingerprint) = 32),
    certificate   bytea,
    username      text        UNIQUE,
    password_hash text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz,
    FOREIGN KEY (tenant_id, cluster_id) REFERENCES clusters (tenant_id, id) ON DELETE CASCADE,
    CHECK ((type = 'token') = (token_hash IS NOT NULL)),
    CHECK ((type = 'certificate') = (fingerprint IS NOT NULL AND certificate IS NOT NULL)),
    CHECK ((type = 'basic') = (username IS NOT NULL AND password_hash IS NOT NULL))
);
CREATE INDEX credentials_tenant_cluster ON credentials (tenant_id, cluster_id);

-- +goose Down
DROP TABLE credentials;
DROP TABLE clusters;
DROP TABLE tenants;
