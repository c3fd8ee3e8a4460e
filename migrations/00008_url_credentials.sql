-- +goose Up
-- Credentials of type url, for clusters whose managed control plane cannot
-- load an AdmissionConfiguration: the secret is a segment of the webhook
-- URL's path (/t/{tenant}/k/{secret}/validate). Only its SHA-256 is stored,
-- as for tokens, in a column of its own so that a URL secret can never be
-- presented as a bearer token nor a token in a URL.
ALTER TABLE credentials
    DROP CONSTRAINT credentials_type_check,
    ADD CONSTRAINT credentials_type_check CHECK (type IN ('token', 'certificate', 'basic', 'url')),
    ADD COLUMN url_secret_hash bytea UNIQUE CHECK (length(url_secret_hash) = 32),
    ADD CONSTRAINT credentials_url_check CHECK ((type = 'url') = (url_secret_hash IS NOT NULL));

-- +goose Down
DELETE FROM credentials WHERE type = 'url';
ALTER TABLE credentials
    DROP CONSTRAINT credentials_url_check,
    DROP COLUMN url_secret_hash,
    DROP CONSTRAINT credentials_type_check,
    ADD CONSTRAINT credentials_type_check CHECK (type IN ('token', 'certificate', 'basic'));
