-- +goose Up
-- The columns of tenant_limits hold exactly the ranges the admin API
-- accepts (internal/limits, Range): a value the API takes is stored, and a
-- value it refuses cannot be written by anything else either. The first
-- checks only said "positive"; the API took any positive requests per
-- second, which the limiter cannot turn into a Retry-After when tiny.
-- Rows outside the new ranges are brought to the nearest bound first.
UPDATE tenant_limits SET requests_per_second = least(greatest(requests_per_second, 0.001), 1000000),
    concurrent_evaluations = least(concurrent_evaluations, 10000),
    cel_cost_per_request = least(cel_cost_per_request, 9007199254740991);
ALTER TABLE tenant_limits
    DROP CONSTRAINT IF EXISTS tenant_limits_concurrent_evaluations_check,
    DROP CONSTRAINT IF EXISTS tenant_limits_cel_cost_per_request_check,
    DROP CONSTRAINT IF EXISTS tenant_limits_requests_per_second_check,
    ADD CONSTRAINT tenant_limits_concurrent_evaluations_range CHECK (concurrent_evaluations BETWEEN 1 AND 10000),
    ADD CONSTRAINT tenant_limits_cel_cost_per_request_range CHECK (cel_cost_per_request BETWEEN 1 AND 9007199254740991),
    ADD CONSTRAINT tenant_limits_requests_per_second_range CHECK (requests_per_second BETWEEN 0.001 AND 1000000);

-- +goose Down
ALTER TABLE tenant_limits
    DROP CONSTRAINT tenant_limits_concurrent_evaluations_range,
    DROP CONSTRAINT tenant_limits_cel_cost_per_request_range,
    DROP CONSTRAINT tenant_limits_requests_per_second_range,
    ADD CONSTRAINT tenant_limits_concurrent_evaluations_check CHECK (concurrent_evaluations > 0),
    ADD CONSTRAINT tenant_limits_cel_cost_per_request_check CHECK (cel_cost_per_request > 0),
    ADD CONSTRAINT tenant_limits_requests_per_second_check CHECK (requests_per_second > 0);
