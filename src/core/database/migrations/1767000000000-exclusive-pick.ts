import type { MigrationInterface, QueryRunner } from 'typeorm';
import { readSqlFile, storeFunction } from '../sql-file.js';

const PREVIOUS_SIGNATURE =
  'pick_host_deliveries(varchar, integer, varchar[], integer[], integer, varchar[], integer, integer, varchar[], timestamptz[])';

/**
 * A drain's pick starts past the last delivery it started, by due time and id: the bound by due time alone
 * returned again the deliveries due in the same millisecond, under way here with their claims not landed
 * (a fifth of a pick's rows at ten hosts). The signature changes, so workers of the previous release stop
 * before this runs.
 */
export class ExclusivePick1767000000000 implements MigrationInterface {
  name = 'ExclusivePick1767000000000';

  async up(q: QueryRunner): Promise<void> {
    // A database made from scratch has the new function already (1766800000000 applies today's file).
    await q.query(`DROP FUNCTION IF EXISTS ${PREVIOUS_SIGNATURE}`);
    await q.query(storeFunction('pick_host_deliveries'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `DROP FUNCTION pick_host_deliveries(varchar, integer, varchar[], integer[], integer, varchar[], integer, integer, varchar[], timestamptz[], varchar[])`,
    );
    await q.query(readSqlFile(new URL('./sql/pick_host_deliveries.1766800000000.sql', import.meta.url)));
  }
}
