-- +goose Up
-- Tenant-scoped admin tokens and the admin audit log.

-- An operator token has no tenant; an admin or viewer token belongs to
-- exactly one and dies with it.
ALTER TABLE admin_tokens
    ADD COLUMN tenant_id  bigint REFERENCES tenants (id) ON DELETE CASCADE,
    ADD COLUMN created_by text NOT NULL DEFAULT '',
    ADD CONSTRAINT admin_tokens_scope CHECK ((role = 'operator') = (tenant_id IS NULL));
CREATE INDEX admin_tokens_tenant ON admin_tokens (tenant_id) WHERE tenant_id IS NOT NULL;

-- One row per mutating admin call. The tenant is kept by id and by name,
-- without a foreign key: the log must outlive a deleted tenant.
-- version_before and version_after are the object's versions around the
-- change (policy resourceVersions; NULL where an object has none).
CREATE TABLE admin_audit_log (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time           timestamptz NOT NULL DEFAULT now(),
    actor          text        NOT NULL,
    token_id       bigint,
    tenant_id      bigint,
    tenant         text        NOT NULL DEFAULT '',
    action         text        NOT NULL,
    kind           text        NOT NULL,
    namespace      text        NOT NULL DEFAULT '',
    name           text        NOT NULL DEFAULT '',
    version_before bigint,
    version_after  bigint,
    dry_run        boolean     NOT NULL DEFAULT false,
    detail         jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object')
);
CREATE INDEX admin_audit_log_tenant ON admin_audit_log (tenant_id, id DESC);
CREATE INDEX admin_audit_log_time ON admin_audit_log (time DESC);

-- +goose Down
DROP TABLE admin_audit_log;
ALTER TABLE admin_tokens DROP CONSTRAINT admin_tokens_scope, DROP COLUMN created_by, DROP COLUMN tenant_id;
