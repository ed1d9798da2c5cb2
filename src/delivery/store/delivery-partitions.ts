import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';

/*
 * The partitions of `deliveries` and `delivery_attempts` (DESIGN 9): both by the delivery's created_at,
 * with the same bounds and names, so a delivery and its attempts share a time slot and are dropped
 * together (DESIGN 7.7). DDL, which no ORM call makes.
 */

type PartitionedTable = 'deliveries' | 'delivery_attempts';

// Slots start at multiples of the interval from a Monday, so weekly partitions run Monday to Monday (UTC).
const ORIGIN_MS = Date.UTC(2001, 0, 1);
const slotStart = (at: number, intervalMs: number) =>
  ORIGIN_MS + Math.floor((at - ORIGIN_MS) / intervalMs) * intervalMs;

/** A partition's name: its table and where its range starts, e.g. deliveries_p20261123_0000. */
export const partitionName = (table: PartitionedTable, from: Date): string =>
  `${table}_p${from.toISOString().slice(0, 16).replace(/[-:]/g, '').replace('T', '_')}`;

/** Matches the names partitionName makes, attached or detached. */
export const PARTITION_NAME_PATTERN = '^(deliveries|delivery_attempts)_p[0-9]{8}_[0-9]{4}$';

export interface PartitionRange {
  name: string;
  from: Date;
  to: Date;
}

/** Whatever runs SQL: a QueryRunner, an EntityManager or the DataSource. */
export interface Sql {
  query(text: string, parameters?: unknown[]): Promise<unknown>;
}

/** The attached partitions of `deliveries`, oldest first; each has its twin in `delivery_attempts`. */
export async function deliveryPartitions(sql: Sql): Promise<PartitionRange[]> {
  return (await sql.query(`
    SELECT c.relname AS name, b.bound[1]::timestamptz AS "from", b.bound[2]::timestamptz AS "to"
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS b(bound)
    WHERE i.inhparent = 'deliveries'::regclass
    ORDER BY 2`)) as PartitionRange[];
}

/**
 * Creates the partitions missing for [from, to): one per interval slot, a slot cut short where a
 * partition exists already (one made with another interval, say). Returns the names created.
 */
export async function createDeliveryPartitions(
  sql: Sql,
  { from, to, intervalMs }: { from: Date; to: Date; intervalMs: number },
): Promise<string[]> {
  const existing = await deliveryPartitions(sql);
  const created: string[] = [];
  for (let start = slotStart(from.getTime(), intervalMs); start < to.getTime(); start += intervalMs) {
    for (const piece of uncovered(start, start + intervalMs, existing)) {
      await createPartitionPair(sql, new Date(piece.from), new Date(piece.to));
      created.push(partitionName('deliveries', new Date(piece.from)));
    }
  }
  return created;
}

/** The parts of [from, to) that no existing partition covers. */
function uncovered(from: number, to: number, existing: PartitionRange[]): { from: number; to: number }[] {
  const pieces: { from: number; to: number }[] = [];
  let at = from;
  for (const p of existing) {
    const [pFrom, pTo] = [p.from.getTime(), p.to.getTime()];
    if (pTo <= at || pFrom >= to) continue;
    if (pFrom > at) pieces.push({ from: at, to: pFrom });
    at = Math.max(at, pTo);
  }
  if (at < to) pieces.push({ from: at, to });
  return pieces;
}

async function createPartitionPair(sql: Sql, from: Date, to: Date): Promise<void> {
  const bounds = `FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`;
  // 30% of each page free, so a claim's lease update is HOT: no new entries in the indexes.
  await sql.query(
    `CREATE TABLE ${partitionName('deliveries', from)} PARTITION OF deliveries ${bounds} WITH (fillfactor = 70)`,
  );
  await sql.query(`CREATE TABLE ${partitionName('delivery_attempts', from)} PARTITION OF delivery_attempts ${bounds}`);
}

// DDL on a parent table waits for every statement on it and holds the next ones meanwhile: it gives up
// soon (before the deadlock detector would pick a victim) and is tried again on the next run.
const DDL_LOCK_TIMEOUT = '500ms';

/**
 * A partition may go once none of its deliveries is pending or ended within the retention: one index
 * lookup each (deliveries_pending_due_idx, deliveries_ended_idx).
 */
const stillNeeded = (table: string) => `
  SELECT EXISTS (SELECT FROM ${table} WHERE status = 'pending')
      OR EXISTS (SELECT FROM ${table} WHERE completed_at >= now() - make_interval(secs => $1::float / 1000))
      AS needed`;

/**
 * Keeps partitions ahead (create-delivery-partitions) and drops those retention lets go (expire, DESIGN 7.7):
 * a whole partition at a time, so retention deletes no row and leaves no dead tuple.
 */
@Injectable()
export class DeliveryPartitions {
  private readonly logger = new Logger('DeliveryPartitions');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Creates the partitions missing for [from, to) (now to DELIVERY_PARTITIONS_AHEAD from now by default). */
  ensure(from = new Date(), to = new Date(from.getTime() + this.config.deliveryPartitions.aheadMs)): Promise<string[]> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
      return createDeliveryPartitions(manager, { from, to, intervalMs: this.config.deliveryPartitions.intervalMs });
    });
  }

  /**
   * expire: drops each partition (with its attempts' twin) whose range ended more than `retentionMs` ago,
   * once none of its deliveries is pending or ended within `retentionMs`; returns the names dropped.
   */
  async dropExpired(retentionMs: number, signal?: AbortSignal): Promise<string[]> {
    const cutoff = Date.now() - retentionMs;
    for (const partition of await deliveryPartitions(this.dataSource)) {
      if (signal?.aborted || partition.to.getTime() > cutoff) break;
      await this.detachUnlessNeeded(partition.name, retentionMs);
    }
    return this.dropDetached();
  }

  /**
   * Detaches a partition and its twin in one transaction, checked again once detached (its rows can change
   * no more): a delivery made pending since the first look rolls it all back, so it keeps its partition.
   * Not DETACH CONCURRENTLY, which cannot run in a transaction, so could not make the check and the
   * detach one step; the plain one holds the parents for a catalog update, bounded by DDL_LOCK_TIMEOUT.
   */
  private async detachUnlessNeeded(name: string, retentionMs: number): Promise<void> {
    const [{ needed }] = (await this.dataSource.query(stillNeeded(name), [retentionMs])) as { needed: boolean }[];
    if (needed) return;
    const twin = name.replace(/^deliveries_/, 'delivery_attempts_');
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      await runner.query(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
      await runner.query(`ALTER TABLE deliveries DETACH PARTITION ${name}`);
      const [again] = (await runner.query(stillNeeded(name), [retentionMs])) as { needed: boolean }[];
      if (again.needed) {
        await runner.rollbackTransaction();
        return;
      }
      await runner.query(`ALTER TABLE delivery_attempts DETACH PARTITION ${twin}`);
      await runner.commitTransaction();
    } catch (error) {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      this.logger.warn(`Detaching ${name} failed, tried again on the next run: ${(error as Error).message}`);
    } finally {
      await runner.release();
    }
  }

  /**
   * Drops the detached partitions (also those a crashed run left): emptied first in a transaction of their
   * own, as a DROP locks the tables their foreign keys name (webhooks, submissions) until it commits.
   */
  private async dropDetached(): Promise<string[]> {
    const rows = (await this.dataSource.query(
      `SELECT relname AS name FROM pg_class
       WHERE relkind = 'r' AND NOT relispartition AND relnamespace = 'public'::regnamespace AND relname ~ $1
       ORDER BY relname`,
      [PARTITION_NAME_PATTERN],
    )) as { name: string }[];
    const dropped: string[] = [];
    for (const { name } of rows) {
      await this.dataSource.query(`TRUNCATE ${name}`);
      await this.dataSource.transaction(async (manager) => {
        await manager.query(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
        await manager.query(`DROP TABLE ${name}`);
      });
      dropped.push(name);
    }
    return dropped;
  }
}
