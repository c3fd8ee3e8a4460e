-- +goose Up
-- What the mutating webhook (/t/{tenant}/mutate) did with a request.
-- endpoint: which webhook answered. mutated: the answer carried a patch
-- (the object changed). mutated_by: the policies whose mutations applied,
-- each once (the plugin's meaning: a mutation that changed nothing counts).
-- patch: the RFC 6902 patch as sent, cut at 16 KiB (patch_truncated set),
-- so text and not jsonb: a cut patch is not JSON. Defaults fill the rows
-- already stored, which are all validating decisions; adding a column with
-- a constant default rewrites no partition.
ALTER TABLE decisions
    ADD COLUMN endpoint        text    NOT NULL DEFAULT 'validate' CHECK (endpoint IN ('validate', 'mutate')),
    ADD COLUMN mutated         boolean NOT NULL DEFAULT false,
    ADD COLUMN mutated_by      text[]  NOT NULL DEFAULT '{}',
    ADD COLUMN patch           text    NOT NULL DEFAULT '',
    ADD COLUMN patch_truncated boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE decisions
    DROP COLUMN endpoint,
    DROP COLUMN mutated,
    DROP COLUMN mutated_by,
    DROP COLUMN patch,
    DROP COLUMN patch_truncated;
