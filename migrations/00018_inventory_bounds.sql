-- +goose Up
-- Per-tenant overrides of how many namespaces (committed and provisional
-- together) and CRDs one cluster's inventory holds (issue 30). NULL keeps
-- the gateway's default (10,000 and 1,000).
ALTER TABLE tenant_limits
    ADD COLUMN max_namespaces_per_cluster integer CHECK (max_namespaces_per_cluster > 0),
    ADD COLUMN max_crds_per_cluster       integer CHECK (max_crds_per_cluster > 0);

-- +goose Down
ALTER TABLE tenant_limits DROP COLUMN max_crds_per_cluster, DROP COLUMN max_namespaces_per_cluster;
