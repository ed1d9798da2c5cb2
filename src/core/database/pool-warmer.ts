import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { connectionOf } from './prepared.js';

// An UPDATE of each partitioned table, planned (never run): it reads every partition's and index's
// catalog entries into the backend's caches. ctid IS NULL prunes no partition and matches no row.
const WARM_STATEMENTS = `
  SELECT format('EXPLAIN UPDATE %I SET %I = %I WHERE ctid IS NULL', c.relname, a.attname, a.attname) AS sql
  FROM pg_partitioned_table p
  JOIN pg_class c ON c.oid = p.partrelid AND NOT c.relispartition
  JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
  JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]`;

/**
 * Opens every connection of the pool at start-up, which then keeps them (a fixed-size pool, idle ones never
 * closed: data-source.ts), and has each read the partitioned tables' catalogs. A burst that finds
 * connections closed pays for opening them and for each new backend's first plan over the partitions
 * (about 10 ms of Postgres each) just when it can least afford it (a burst of DELETEs, say). The api's and
 * the worker's, not the CLI's: a command runs a few statements and exits.
 */
@Injectable()
export class PoolWarmer implements OnApplicationBootstrap {
  private readonly logger = new Logger('Database');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const opened = await Promise.allSettled(
      Array.from({ length: this.config.databasePoolSize }, () => connectionOf(this.dataSource)),
    );
    const connections = opened.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    try {
      const failed = opened.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
      const { rows } = await connections[0].client.query<{ sql: string }>(WARM_STATEMENTS);
      await Promise.all(
        connections.map(async ({ client }) => {
          for (const { sql } of rows) await client.query(sql);
        }),
      );
    } catch (error) {
      // The pool opens what it lacks on demand; a database that is down is the health check's to report.
      this.logger.warn(`Connection pool not opened ahead: ${(error as Error).message}`);
    } finally {
      for (const connection of connections) connection.release();
    }
  }
}
