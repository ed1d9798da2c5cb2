import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Submissions and deliveries no longer check their workspace_id against workspaces: a submission's
 * workspace is its calculator's (checked in the same statement, and submissions_calculator_id_fkey
 * stands), a delivery's is its webhook's (deliveries_webhook_id_fkey stands), and removing a workspace
 * still removes both through those keys' cascades. Each of these checks locked the workspace row
 * (FOR KEY SHARE) from every insert: four row locks per submission of three deliveries, all on one row,
 * shared by every concurrent submission of the workspace (a MultiXact each time two overlap).
 */
export class DropImpliedWorkspaceKeys1764500000000 implements MigrationInterface {
  name = 'DropImpliedWorkspaceKeys1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE deliveries DROP CONSTRAINT deliveries_workspace_id_fkey`);
    await q.query(`ALTER TABLE submissions DROP CONSTRAINT submissions_workspace_id_fkey`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE submissions ADD CONSTRAINT submissions_workspace_id_fkey
        FOREIGN KEY (workspace_id) REFERENCES workspaces(id) ON DELETE CASCADE`);
    await q.query(`
      ALTER TABLE deliveries ADD CONSTRAINT deliveries_workspace_id_fkey
        FOREIGN KEY (workspace_id) REFERENCES workspaces(id) ON DELETE CASCADE`);
  }
}
