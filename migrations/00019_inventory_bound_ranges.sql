-- +goose Up
-- The per-cluster inventory bounds of 00018 hold exactly the ranges the
-- admin API accepts (internal/limits, ranges.go), as 00017 did for the
-- other limits: 1 to 1,000,000 namespaces and 1 to 100,000 CRDs. Rows
-- outside them are brought to the nearest bound first.
UPDATE tenant_limits SET max_namespaces_per_cluster = least(max_namespaces_per_cluster, 1000000),
    max_crds_per_cluster = least(max_crds_per_cluster, 100000);
ALTER TABLE tenant_limits
    DROP CONSTRAINT IF EXISTS tenant_limits_max_namespaces_per_cluster_check,
    DROP CONSTRAINT IF EXISTS tenant_limits_max_crds_per_cluster_check,
    ADD CONSTRAINT tenant_limits_max_namespaces_per_cluster_range CHECK (max_namespaces_per_cluster BETWEEN 1 AND 1000000),
    ADD CONSTRAINT tenant_limits_max_crds_per_cluster_range CHECK (max_crds_per_cluster BETWEEN 1 AND 100000);

-- +goose Down
ALTER TABLE tenant_limits
    DROP CONSTRAINT tenant_limits_max_namespaces_per_cluster_range,
    DROP CONSTRAINT tenant_limits_max_crds_per_cluster_range,
    ADD CONSTRAINT tenant_limits_max_namespaces_per_cluster_check CHECK (max_namespaces_per_cluster > 0),
    ADD CONSTRAINT tenant_limits_max_crds_per_cluster_check CHECK (max_crds_per_cluster > 0);
