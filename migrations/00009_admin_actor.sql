-- +goose Up
-- Token names are free text and not unique, so a name cannot identify who
-- made a call: the audit log's actor becomes the token's id and role
-- ("token:42/admin") and the name moves to actor_name, a label. Rows
-- already stored are rewritten the same way; a token that no longer
-- exists (its tenant was deleted) keeps only its id.
ALTER TABLE admin_audit_log ADD COLUMN actor_name text NOT NULL DEFAULT '';
UPDATE admin_audit_log l SET actor_name = l.actor,
    actor = CASE WHEN l.token_id IS NULL THEN l.actor
                 ELSE 'token:' || l.token_id || coalesce('/' || (SELECT k.role FROM admin_tokens k WHERE k.id = l.token_id), '')
            END;
CREATE INDEX admin_audit_log_actor ON admin_audit_log (actor, id DESC);

-- The token whose call created a token, so that revoking a token can take
-- everything it minted with it (DELETE /api/v1/tokens/{id}?cascade=true).
-- Tokens created before this column, and by admin bootstrap, have none.
ALTER TABLE admin_tokens ADD COLUMN created_by_id bigint REFERENCES admin_tokens (id) ON DELETE SET NULL;
CREATE INDEX admin_tokens_created_by_id ON admin_tokens (created_by_id) WHERE created_by_id IS NOT NULL;

-- +goose Down
DROP INDEX admin_tokens_created_by_id;
ALTER TABLE admin_tokens DROP COLUMN created_by_id;
DROP INDEX admin_audit_log_actor;
UPDATE admin_audit_log SET actor = actor_name WHERE actor_name <> '';
ALTER TABLE admin_audit_log DROP COLUMN actor_name;
