import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * Postgres is the one schedule (DESIGN 5): each pending delivery names its host, and a host's due
 * deliveries are found by deliveries_host_due_idx; Redis keeps one wake per host instead of a job per
 * delivery. A delivery also keeps what made it due (a retry is `manual`) and its submission's trace
 * context, which its job used to carry.
 */
export class OneSchedule1766800000000 implements MigrationInterface {
  name = 'OneSchedule1766800000000';

  async up(q: QueryRunner): Promise<void> {
    // A url's host as the WHATWG URL parser's `host` gives it for the urls webhooks accept: lower case, no
    // user info, the scheme's default port left out.
    await q.query(`
      CREATE FUNCTION url_destination(url text) RETURNS varchar LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT CASE WHEN (m[1] = 'https' AND m[3] = ':443') OR (m[1] = 'http' AND m[3] = ':80') THEN m[2]
                    ELSE m[2] || COALESCE(m[3], '') END
        FROM regexp_match(lower(url), '^([a-z][a-z0-9+.-]*)://(?:[^@/?#]*@)?(\\[[^]]*\\]|[^:/?#]*)(:[0-9]+)?') AS m
      $$`);
    await q.query(`ALTER TABLE deliveries ADD COLUMN host varchar(300)`);
    await q.query(`ALTER TABLE deliveries ADD COLUMN next_trigger varchar(16) NOT NULL DEFAULT 'scheduled'`);
    await q.query(`ALTER TABLE deliveries ADD COLUMN trace jsonb`);
    await q.query(`
      UPDATE deliveries d SET host = url_destination(w.url) FROM webhooks w
      WHERE w.id = d.webhook_id AND d.status = 'pending'`);
    await q.query(`
      CREATE INDEX deliveries_host_due_idx ON deliveries (host, webhook_id, next_attempt_at) WHERE status = 'pending'`);
    await q.query(storeFunction('claim_delivery_attempts'));
    await q.query(storeFunction('record_delivery_attempts'));
    await q.query(storeFunction('pick_host_deliveries'));
    await q.query(storeFunction('host_next_due'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION host_next_due(varchar)`);
    await q.query(
      `DROP FUNCTION pick_host_deliveries(varchar, integer, varchar[], integer[], integer, varchar[], integer, integer)`,
    );
    await q.query(`DROP INDEX deliveries_host_due_idx`);
    await q.query(`ALTER TABLE deliveries DROP COLUMN trace, DROP COLUMN next_trigger, DROP COLUMN host`);
    await q.query(`DROP FUNCTION url_destination(text)`);
  }
}
