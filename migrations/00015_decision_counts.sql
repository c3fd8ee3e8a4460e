-- +goose Up
-- Decision counts per tenant, cluster and verdict, in minutes and in
-- hours, so that the decisions summary (the UI's chart and top denying
-- policies, GET .../decisions/stats) reads a few thousand rows instead of
-- every decision of its range: counting 1M decisions took 600 ms, the
-- UI's target is 100 ms (internal/ui/bench_test.go).
--
-- The decision writer (internal/decisions, counts.go) adds to them in the
-- transaction that writes the decisions, so they always equal counting
-- the decisions table (TestCountsEqualDecisions). policy '' counts
-- decisions; a policy's name counts the decisions of that verdict it
-- denied (denied_by). Buckets start at multiples of their width since the
-- Unix epoch (date_bin, independent of the session's time zone).
-- Retention deletes the counts of the days whose partitions it dropped
-- (decisions.Partitions). tenant_id leads every key, as in decisions.
CREATE TABLE decision_counts_minute (
    tenant_id bigint      NOT NULL,
    bucket    timestamptz NOT NULL,
    cluster   text        NOT NULL,
    verdict   text        NOT NULL,
    policy    text        NOT NULL,
    n         bigint      NOT NULL,
    PRIMARY KEY (tenant_id, bucket, cluster, verdict, policy)
);
CREATE TABLE decision_counts_hour (LIKE decision_counts_minute INCLUDING ALL);

INSERT INTO decision_counts_minute (tenant_id, bucket, cluster, verdict, policy, n)
SELECT tenant_id, date_bin('1 minute', time, 'epoch'), cluster, verdict, '', count(*)
FROM decisions GROUP BY 1, 2, 3, 4
UNION ALL
SELECT tenant_id, date_bin('1 minute', time, 'epoch'), cluster, verdict, p, count(*)
FROM decisions, unnest(denied_by) AS p GROUP BY 1, 2, 3, 4, 5;

INSERT INTO decision_counts_hour (tenant_id, bucket, cluster, verdict, policy, n)
SELECT tenant_id, date_bin('1 hour', bucket, 'epoch'), cluster, verdict, policy, sum(n)
FROM decision_counts_minute GROUP BY 1, 2, 3, 4, 5;

-- The dashboards' read-only role (00012) may read the counts too.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'portcullis_dashboards') THEN
        GRANT SELECT ON decision_counts_minute, decision_counts_hour TO portcullis_dashboards;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE decision_counts_hour;
DROP TABLE decision_counts_minute;
