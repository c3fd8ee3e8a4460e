-- +goose Up
-- Per-tenant overrides of the gateway's evaluation limits
-- (--tenant-concurrent-evaluations, --tenant-cel-cost-per-request,
-- --tenant-requests-per-second). NULL keeps the gateway's default.
CREATE TABLE tenant_limits (
    tenant_id              bigint           PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    concurrent_evaluations integer          CHECK (concurrent_evaluations > 0),
    cel_cost_per_request   bigint           CHECK (cel_cost_per_request > 0),
    requests_per_second    double precision CHECK (requests_per_second > 0),
    updated_at             timestamptz      NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE tenant_limits;
