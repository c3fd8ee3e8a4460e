-- +goose Up
-- One row per webhook request the gateway answered (internal/decisions).
-- Partitioned by day on time; the gateway creates partitions ahead of time
-- and drops the ones older than --decision-retention (decisions.Partitions).
-- There is no default partition on purpose: retention drops whole days,
-- and a default partition would collect rows no drop ever removes. A row
-- whose day has no partition makes its batch fail, and the recorder then
-- creates the partition and writes again. Partitions are created as plain
-- tables (LIKE decisions INCLUDING ALL) and then attached, and detached
-- CONCURRENTLY before they are dropped: neither takes more than SHARE
-- UPDATE EXCLUSIVE on decisions, so DDL never queues writes behind a reader.
--
-- There is no foreign key to tenants: partitions age out on their own, and
-- a deleted tenant's decisions go with them. The Grafana dashboards query
-- these column names directly: rename none without updating them.
CREATE TABLE decisions (
    id                     uuid             NOT NULL,
    time                   timestamptz      NOT NULL,
    tenant_id              bigint           NOT NULL,
    tenant                 text             NOT NULL,
    cluster_id             bigint           NOT NULL,
    cluster                text             NOT NULL,
    uid                    text             NOT NULL,
    operation              text             NOT NULL,
    api_group              text             NOT NULL,
    api_version            text             NOT NULL,
    resource               text             NOT NULL,
    subresource            text             NOT NULL,
    kind                   text             NOT NULL,
    namespace              text             NOT NULL,
    name                   text             NOT NULL,
    user_name              text             NOT NULL,
    user_groups            text[]           NOT NULL,
    dry_run                boolean          NOT NULL,
    verdict                text             NOT NULL
                           CHECK (verdict IN ('allowed', 'denied', 'warned', 'error', 'rejected')),
    http_status            int              NOT NULL,
    code                   int              NOT NULL,
    reason                 text             NOT NULL,
    message                text             NOT NULL,
    warnings               text[]           NOT NULL,
    audit_annotations      jsonb            NOT NULL CHECK (jsonb_typeof(audit_annotations) = 'object'),
    bindings               jsonb            NOT NULL CHECK (jsonb_typeof(bindings) = 'array'),
    -- policies: every policy with a matched binding; denied_by: the
    -- policies whose binding denied. Both feed filters and stats.
    policies               text[]           NOT NULL,
    denied_by              text[]           NOT NULL,
    failure_policy_applied boolean          NOT NULL,
    timed_out              boolean          NOT NULL,
    latency_ms             double precision NOT NULL,
    instance               text             NOT NULL,
    snapshot_version       bigint           NOT NULL,
    -- The partition key must be part of the key; ids are UUIDv7 and unique
    -- on their own, and replaying a spill file relies on this key to insert
    -- each decision once.
    PRIMARY KEY (id, time)
) PARTITION BY RANGE (time);

-- The listing (newest first, keyset on (time, id)) and the stats of one
-- tenant; the verdict filter and stats by verdict; policy filters and the
-- stats by denying policy.
CREATE INDEX decisions_tenant_time ON decisions (tenant_id, time DESC, id DESC);
-- The listing filtered by cluster (the API's cluster=), same keyset order.
CREATE INDEX decisions_tenant_cluster_id_time ON decisions (tenant_id, cluster, time DESC, id DESC);
CREATE INDEX decisions_tenant_verdict_time ON decisions (tenant_id, verdict, time DESC);
CREATE INDEX decisions_policies ON decisions USING gin (policies);
CREATE INDEX decisions_denied_by ON decisions USING gin (denied_by);
-- The Grafana tenant dashboard selects by tenant and cluster names (its
-- variables are names), never by id.
CREATE INDEX decisions_tenant_cluster_time ON decisions (tenant, cluster, time DESC);

-- +goose Down
DROP TABLE decisions;
