-- +goose Up
-- A read-only role for Grafana's PostgreSQL datasource
-- (docs/observability.md): it may read decisions and nothing else, not the
-- credentials, tokens or policies. A login role for Grafana is granted it
-- (GRANT portcullis_dashboards TO grafana). Roles belong to the whole
-- PostgreSQL cluster, so one may exist already; it is created only when the
-- migrating user may create roles: on a managed database whose user may
-- not, an administrator runs the CREATE ROLE once and migrates again.
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'portcullis_dashboards') THEN
        IF NOT (SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user) THEN
            RAISE NOTICE 'role portcullis_dashboards not created: % may not create roles', current_user;
            RETURN;
        END IF;
        CREATE ROLE portcullis_dashboards NOLOGIN;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO portcullis_dashboards', current_schema());
    -- Reads through the partitioned parent need no grant on the partitions.
    GRANT SELECT ON decisions TO portcullis_dashboards;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- The role stays: other databases of the cluster may use it.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'portcullis_dashboards') THEN
        REVOKE SELECT ON decisions FROM portcullis_dashboards;
    END IF;
END
$$;
-- +goose StatementEnd
