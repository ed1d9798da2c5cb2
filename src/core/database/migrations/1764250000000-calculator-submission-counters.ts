import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sharded submission counters (issue 10, a hot calculator): a submission bumps one shard of
 * calculator_submission_counters instead of its calculator's row, so submissions to one calculator no
 * longer queue on that row's lock. The existing counts move into shard 0.
 *
 * Rolling deploy: additive only. calculators.submissions_count and last_submission_at stay: a process of
 * the previous release still bumps them, and the trigger below adds each bump to shard 0, so the new
 * readers miss none. This release never reads or writes them; drop the trigger, its function and the two
 * columns in the next release, once no process of this one's predecessor runs.
 */
export class CalculatorSubmissionCounters1764250000000 implements MigrationInterface {
  name = 'CalculatorSubmissionCounters1764250000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE calculator_submission_counters (
        calculator_id varchar(32) NOT NULL
          CONSTRAINT calculator_submission_counters_calculator_id_fkey REFERENCES calculators(id) ON DELETE CASCADE,
        shard smallint NOT NULL,
        count bigint NOT NULL DEFAULT 0,
        last_submission_at timestamptz(3) NULL,
        PRIMARY KEY (calculator_id, shard)
      )`);
    // Same lock order as a submission (calculator row, then counter row), so it cannot deadlock with one.
    await q.query(`
      CREATE FUNCTION calculators_legacy_submission_bump() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO calculator_submission_counters AS k (calculator_id, shard, count, last_submission_at)
        VALUES (NEW.id, 0, NEW.submissions_count - OLD.submissions_count, NEW.last_submission_at)
        ON CONFLICT (calculator_id, shard) DO UPDATE
          SET count = k.count + EXCLUDED.count,
              last_submission_at = greatest(k.last_submission_at, EXCLUDED.last_submission_at);
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER calculators_legacy_submission_bump
        AFTER UPDATE OF submissions_count, last_submission_at ON calculators
        FOR EACH ROW
        WHEN (NEW.submissions_count IS DISTINCT FROM OLD.submissions_count
              OR NEW.last_submission_at IS DISTINCT FROM OLD.last_submission_at)
        EXECUTE FUNCTION calculators_legacy_submission_bump()`);
    // The trigger's lock on calculators holds off old bumps until commit: each is in the copy or the trigger's.
    await q.query(`
      INSERT INTO calculator_submission_counters (calculator_id, shard, count, last_submission_at)
      SELECT id, 0, submissions_count, last_submission_at FROM calculators
      WHERE submissions_count <> 0 OR last_submission_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION calculators_legacy_submission_bump() CASCADE`);
    await q.query(`
      UPDATE calculators c SET submissions_count = k.count, last_submission_at = k.last_submission_at
      FROM (SELECT calculator_id, sum(count)::int AS count, max(last_submission_at) AS last_submission_at
            FROM calculator_submission_counters GROUP BY calculator_id) k
      WHERE k.calculator_id = c.id`);
    await q.query(`DROP TABLE calculator_submission_counters`);
  }
}
