import { readSqlFile } from '../../core/database/sql-file.js';

/** The store's plpgsql functions; each one's whole definition is sql/<name>.sql, which migrations apply. */
export const STORE_FUNCTIONS = [
  'claim_delivery_attempts',
  'end_pending_deliveries',
  'host_next_due',
  'oldest_pending_due',
  'overdue_hosts',
  'pick_host_deliveries',
  'record_delivery_attempts',
] as const;

/** A function's CREATE OR REPLACE statement, exactly as `pg_get_functiondef` prints it once created. */
export const functionDefinition = (name: (typeof STORE_FUNCTIONS)[number]): string =>
  readSqlFile(new URL(`./sql/${name}.sql`, import.meta.url));
