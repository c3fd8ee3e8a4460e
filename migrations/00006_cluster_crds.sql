-- +goose Up
-- Each cluster's CustomResourceDefinitions, as uploaded (admin crds import).
-- Committed state only: the webhook never learns CRDs from requests. The
-- whole object is kept; the evaluator reads only its conversion strategy and
-- versions, the server-side-apply merges of custom resources its schemas.
CREATE TABLE cluster_crds (
    tenant_id  bigint      NOT NULL,
    cluster_id bigint      NOT NULL,
    name       text        NOT NULL CHECK (name <> ''),
    object     jsonb       NOT NULL CHECK (jsonb_typeof(object) = 'object'),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, cluster_id, name),
    FOREIGN KEY (tenant_id, cluster_id) REFERENCES clusters (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE cluster_crds;
