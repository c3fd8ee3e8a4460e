-- +goose Up
-- The Grafana tenant dashboard selects decisions by tenant_id and cluster
-- name now (its tenant variable's value is the id), which the index
-- decisions_tenant_cluster_id_time (tenant_id, cluster, time DESC, id DESC)
-- serves; the admin API and the UI never selected by the tenant's name.
-- The index on the names goes: one index fewer to write per decision, and
-- on Citus no dashboard query asks every node any more.
--
-- An index of a partitioned table cannot be dropped CONCURRENTLY: the drop
-- takes an ACCESS EXCLUSIVE lock on decisions for as long as it takes to
-- remove the partitions' index files, which is short (no rows are read).
DROP INDEX decisions_tenant_cluster_time;

-- +goose Down
CREATE INDEX decisions_tenant_cluster_time ON decisions (tenant, cluster, time DESC);
