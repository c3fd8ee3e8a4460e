-- +goose Up
-- tenant_id leads the key and the indexes of decisions, so that the table
-- can be distributed by tenant with Citus without a schema change
-- (docs/production.md, "Decisions at fleet scale"; the rule is checked on
-- every table by TestSchemaIsDistributableByTenant in internal/database).
-- Citus enforces a key shard by shard, so it must include the
-- distribution column; PostgreSQL requires the partition key (time) in it.
--
-- The key becomes (tenant_id, time, id). Ids are UUIDv7 and unique on
-- their own, so it refuses the same rows as (id, time) did, and replay's
-- ON CONFLICT DO NOTHING still inserts each decision once. Read backwards
-- it is the listing's order within a tenant (time DESC, id DESC, keyset
-- on (time, id)) and covers the stats' (tenant_id, time) ranges, so
-- decisions_tenant_time, an index on the same columns, goes: one index
-- fewer to write per decision.
--
-- The policy filters' GIN indexes lead with tenant_id too, which needs
-- btree_gin (a contrib extension, trusted since PostgreSQL 13: the
-- database's owner may create it; on a managed service it may have to be
-- allowed first, e.g. azure.extensions on Azure).
--
-- Cost: the key and the GIN indexes of every partition are rebuilt, under
-- an ACCESS EXCLUSIVE lock on decisions for the length of the migration
-- (docs/production.md gives the time measured per million rows). The
-- gateway's writes time out meanwhile and spill to disk, then replay;
-- reads of decisions wait. Run the upgrade at a quiet hour.
CREATE EXTENSION IF NOT EXISTS btree_gin;
ALTER TABLE decisions DROP CONSTRAINT decisions_pkey;
ALTER TABLE decisions ADD CONSTRAINT decisions_pkey PRIMARY KEY (tenant_id, time, id);
DROP INDEX decisions_tenant_time;
DROP INDEX decisions_policies;
DROP INDEX decisions_denied_by;
CREATE INDEX decisions_tenant_policies ON decisions USING gin (tenant_id, policies);
CREATE INDEX decisions_tenant_denied_by ON decisions USING gin (tenant_id, denied_by);

-- +goose Down
DROP INDEX decisions_tenant_denied_by;
DROP INDEX decisions_tenant_policies;
CREATE INDEX decisions_denied_by ON decisions USING gin (denied_by);
CREATE INDEX decisions_policies ON decisions USING gin (policies);
CREATE INDEX decisions_tenant_time ON decisions (tenant_id, time DESC, id DESC);
ALTER TABLE decisions DROP CONSTRAINT decisions_pkey;
ALTER TABLE decisions ADD CONSTRAINT decisions_pkey PRIMARY KEY (id, time);
-- btree_gin stays: other schemas of the database may use it.
