import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An attempt is named by its delivery and number (the API never shows another id for it), so the worker
 * no longer makes a CUID2 per attempt (27 us of CPU each, the hash in JavaScript) and Postgres keeps one
 * index per attempt row instead of two (the random-id primary key went away). The key is the delivery,
 * the number and the start time: an attempt whose lease ran out while its request was out (a frozen
 * worker) is recorded beside the one that took its number over, as before.
 *
 * Rolling deploy: `id` stays, nullable: a worker of the previous release still fills it. Drop it in the
 * next release, once no process of this one's predecessor runs.
 */
export class AttemptNaturalKey1764300000000 implements MigrationInterface {
  name = 'AttemptNaturalKey1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey`);
    await q.query(`ALTER TABLE delivery_attempts ALTER COLUMN id DROP NOT NULL`);
    await q.query(`
      ALTER TABLE delivery_attempts
        ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (delivery_id, attempt_number, started_at)`);
    // The new key's first two columns serve what this index served (a delivery's attempts, in order).
    await q.query(`DROP INDEX delivery_attempts_delivery_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX delivery_attempts_delivery_idx ON delivery_attempts (delivery_id, attempt_number)`);
    await q.query(`ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey`);
    // Rows this release wrote have no id: the previous release's key needs one (never shown by the API).
    await q.query(`
      UPDATE delivery_attempts SET id = 'a' || substr(md5(delivery_id || ':' || attempt_number || ':' || started_at), 1, 23)
      WHERE id IS NULL`);
    await q.query(`ALTER TABLE delivery_attempts ALTER COLUMN id SET NOT NULL`);
    await q.query(`ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (id)`);
  }
}
