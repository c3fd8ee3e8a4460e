-- +goose Up
-- The policy store: each tenant's ValidatingAdmissionPolicies,
-- MutatingAdmissionPolicies, their bindings and params, every version of
-- each, and each cluster's namespace inventory.

-- One row per tenant that has ever written a policy object. version is the
-- tenant's policy version: it grows by one with every write (create, update,
-- delete, rollback), so a compiled snapshot is named by (tenant, version).
-- Writes of one tenant serialise on this row. last_served_at records, at a
-- coarse grain, when a gateway replica last served the tenant, for warm-up.
CREATE TABLE policy_heads (
    tenant_id      bigint      PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    version        bigint      NOT NULL DEFAULT 0 CHECK (version >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    last_served_at timestamptz
);
CREATE INDEX policy_heads_last_served ON policy_heads (last_served_at DESC) WHERE last_served_at IS NOT NULL;

-- The current state of every object, live or deleted (deleted = the last
-- version is a tombstone). Identity is (group, kind, namespace, name), as in
-- the apiserver; api_version is the one last written. object is the full
-- stored object, server metadata included; for a deleted object it is the
-- last live state.
CREATE TABLE policy_objects (
    tenant_id   bigint      NOT NULL REFERENCES policy_heads (tenant_id) ON DELETE CASCADE,
    api_group   text        NOT NULL,
    kind        text        NOT NULL CHECK (kind <> ''),
    namespace   text        NOT NULL DEFAULT '',
    name        text        NOT NULL CHECK (name <> ''),
    api_version text        NOT NULL,
    uid         uuid        NOT NULL,
    version     bigint      NOT NULL, -- the object's resourceVersion: the tenant version of its last write
    generation  bigint      NOT NULL,
    deleted     boolean     NOT NULL DEFAULT false,
    object      jsonb       NOT NULL CHECK (jsonb_typeof(object) = 'object'),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, api_group, kind, namespace, name)
);
CREATE INDEX policy_objects_live ON policy_objects (tenant_id) WHERE NOT deleted;

-- Every version ever written, immutable. A tombstone has object NULL.
CREATE TABLE policy_versions (
    tenant_id   bigint      NOT NULL REFERENCES policy_heads (tenant_id) ON DELETE CASCADE,
    version     bigint      NOT NULL,
    api_group   text        NOT NULL,
    kind        text        NOT NULL,
    namespace   text        NOT NULL,
    name        text        NOT NULL,
    api_version text        NOT NULL,
    operation   text        NOT NULL CHECK (operation IN ('create', 'update', 'delete', 'rollback')),
    object      jsonb,
    author      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    rollback_of bigint,
    PRIMARY KEY (tenant_id, version),
    CHECK ((operation = 'delete') = (object IS NULL)),
    CHECK ((operation = 'rollback') = (rollback_of IS NOT NULL))
);
CREATE INDEX policy_versions_object ON policy_versions (tenant_id, api_group, kind, namespace, name, version DESC);

-- +goose StatementBegin
CREATE FUNCTION policy_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'policy_versions rows are immutable';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER policy_versions_immutable BEFORE UPDATE ON policy_versions
    FOR EACH ROW EXECUTE FUNCTION policy_versions_immutable();

-- Each cluster's Namespace objects, as the apiserver sent them (without
-- managedFields). source says whether the row came from an inventory upload
-- (the source of truth) or was learned from an allowed request.
CREATE TABLE cluster_namespaces (
    tenant_id  bigint      NOT NULL,
    cluster_id bigint      NOT NULL,
    name       text        NOT NULL CHECK (name <> ''),
    object     jsonb       NOT NULL CHECK (jsonb_typeof(object) = 'object'),
    source     text        NOT NULL CHECK (source IN ('upload', 'learned')),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, cluster_id, name),
    FOREIGN KEY (tenant_id, cluster_id) REFERENCES clusters (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE cluster_namespaces;
DROP TRIGGER policy_versions_immutable ON policy_versions;
DROP FUNCTION policy_versions_immutable();
DROP TABLE policy_versions;
DROP TABLE policy_objects;
DROP TABLE policy_heads;
