-- +goose Up
-- The namespace inventory holds committed state only (issue 21, section 1).
-- cluster_namespaces is what the apiserver stored, as far as the gateway
-- knows: an upload, the sync (admin namespaces sync), or the oldObject of a
-- later request on the namespace ('observed'). What an allowed CREATE or
-- UPDATE proposes goes to cluster_namespaces_provisional until a later
-- request's oldObject (or an upload, or the sync) confirms or corrects it:
-- another admission step may have rejected it after the gateway allowed it.
CREATE TABLE cluster_namespaces_provisional (
    tenant_id  bigint      NOT NULL,
    cluster_id bigint      NOT NULL,
    name       text        NOT NULL CHECK (name <> ''),
    object     jsonb       NOT NULL CHECK (jsonb_typeof(object) = 'object'),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, cluster_id, name),
    FOREIGN KEY (tenant_id, cluster_id) REFERENCES clusters (tenant_id, id) ON DELETE CASCADE
);

-- What was learned from allowed requests before was never confirmed: it is
-- provisional.
INSERT INTO cluster_namespaces_provisional (tenant_id, cluster_id, name, object, updated_at)
    SELECT tenant_id, cluster_id, name, object, updated_at FROM cluster_namespaces WHERE source = 'learned';
DELETE FROM cluster_namespaces WHERE source = 'learned';
ALTER TABLE cluster_namespaces DROP CONSTRAINT cluster_namespaces_source_check;
ALTER TABLE cluster_namespaces ADD CONSTRAINT cluster_namespaces_source_check
    CHECK (source IN ('upload', 'observed', 'sync'));

-- A running namespace sync pushes at least every heartbeat; while its last
-- push is recent, the gateway learns nothing from that cluster's traffic.
CREATE TABLE cluster_inventory_sync (
    tenant_id  bigint      NOT NULL,
    cluster_id bigint      NOT NULL,
    pushed_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, cluster_id),
    FOREIGN KEY (tenant_id, cluster_id) REFERENCES clusters (tenant_id, id) ON DELETE CASCADE
);

-- A sync token (role 'sync') belongs to one cluster of its tenant and may
-- only push that cluster's inventory; it dies with the cluster.
ALTER TABLE admin_tokens ADD COLUMN cluster_id bigint;
ALTER TABLE admin_tokens ADD CONSTRAINT admin_tokens_cluster
    FOREIGN KEY (tenant_id, cluster_id) REFERENCES clusters (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE admin_tokens DROP CONSTRAINT admin_tokens_role_check;
ALTER TABLE admin_tokens ADD CONSTRAINT admin_tokens_role_check CHECK (role IN ('operator', 'admin', 'viewer', 'sync'));
ALTER TABLE admin_tokens ADD CONSTRAINT admin_tokens_sync_cluster CHECK ((role = 'sync') = (cluster_id IS NOT NULL));

-- +goose Down
DELETE FROM admin_tokens WHERE role = 'sync';
ALTER TABLE admin_tokens DROP CONSTRAINT admin_tokens_sync_cluster;
ALTER TABLE admin_tokens DROP CONSTRAINT admin_tokens_role_check;
ALTER TABLE admin_tokens ADD CONSTRAINT admin_tokens_role_check CHECK (role IN ('operator', 'admin', 'viewer'));
ALTER TABLE admin_tokens DROP CONSTRAINT admin_tokens_cluster;
ALTER TABLE admin_tokens DROP COLUMN cluster_id;
DROP TABLE cluster_inventory_sync;
ALTER TABLE cluster_namespaces DROP CONSTRAINT cluster_namespaces_source_check;
UPDATE cluster_namespaces SET source = 'learned' WHERE source IN ('observed', 'sync');
ALTER TABLE cluster_namespaces ADD CONSTRAINT cluster_namespaces_source_check
    CHECK (source IN ('upload', 'learned'));
INSERT INTO cluster_namespaces (tenant_id, cluster_id, name, object, source, updated_at)
    SELECT tenant_id, cluster_id, name, object, 'learned', updated_at FROM cluster_namespaces_provisional
    ON CONFLICT DO NOTHING;
DROP TABLE cluster_namespaces_provisional;
