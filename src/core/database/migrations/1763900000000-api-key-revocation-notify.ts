import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Announces every revoked, re-pointed or deleted API key on the `api_key_revoked` channel (payload:
 * the key's hash) when its transaction commits, whoever made the change (the CLI, an operator in
 * psql), so api processes drop it from their key cache at once.
 */
export class ApiKeyRevocationNotify1763900000000 implements MigrationInterface {
  name = 'ApiKeyRevocationNotify1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION notify_api_key_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('api_key_revoked', OLD.key_hash);
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER api_keys_notify_revoked
      AFTER UPDATE OF revoked_at, key_hash, workspace_id OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION notify_api_key_revoked()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER api_keys_notify_revoked ON api_keys`);
    await q.query(`DROP FUNCTION notify_api_key_revoked()`);
  }
}
