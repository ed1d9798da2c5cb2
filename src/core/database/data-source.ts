import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/config.js';
import { Baseline1764800000000 } from './migrations/1764800000000-baseline.js';
import { AuditEvents1765000000000 } from './migrations/1765000000000-audit-events.js';
import { WebhookSettings1765100000000 } from './migrations/1765100000000-webhook-settings.js';
import { PortalLinks1765300000000 } from './migrations/1765300000000-portal-links.js';
import { PartitionDeliveries1766000000000 } from './migrations/1766000000000-partition-deliveries.js';
import { OperationalWebhooks1766100000000 } from './migrations/1766100000000-operational-webhooks.js';
import { DeliverySearch1766200000000 } from './migrations/1766200000000-delivery-search.js';
import { PortalLinkRetention1766300000000 } from './migrations/1766300000000-portal-link-retention.js';
import { ClaimWebhooksByKey1766400000000 } from './migrations/1766400000000-claim-webhooks-by-key.js';
import { StoreFewerStatements1766500000000 } from './migrations/1766500000000-store-fewer-statements.js';
import { SamplesAndFilters1766600000000 } from './migrations/1766600000000-samples-and-filters.js';
import { OneSchedule1766800000000 } from './migrations/1766800000000-one-schedule.js';
import { DurableLease1766900000000 } from './migrations/1766900000000-durable-lease.js';
import { ClaimDeliveriesByKey1767000000000 } from './migrations/1767000000000-claim-deliveries-by-key.js';
import { SweepHostsByIndex1767100000000 } from './migrations/1767100000000-sweep-hosts-by-index.js';
import { OldestPendingByIndex1767200000000 } from './migrations/1767200000000-oldest-pending-by-index.js';
import { EndPendingByHost1767300000000 } from './migrations/1767300000000-end-pending-by-host.js';

export const MIGRATIONS = [
  Baseline1764800000000,
  AuditEvents1765000000000,
  WebhookSettings1765100000000,
  PortalLinks1765300000000,
  PartitionDeliveries1766000000000,
  OperationalWebhooks1766100000000,
  DeliverySearch1766200000000,
  PortalLinkRetention1766300000000,
  ClaimWebhooksByKey1766400000000,
  StoreFewerStatements1766500000000,
  SamplesAndFilters1766600000000,
  OneSchedule1766800000000,
  DurableLease1766900000000,
  ClaimDeliveriesByKey1767000000000,
  SweepHostsByIndex1767100000000,
  OldestPendingByIndex1767200000000,
  EndPendingByHost1767300000000,
];

/**
 * No entities: each feature registers its own (TypeOrmModule.forFeature), which the app's DatabaseModule
 * loads with autoLoadEntities; the TypeORM CLI's data source finds them by file name.
 *
 * `timeouts`: every connection starts with them (startup parameters, so no extra round trip); a blocked
 * table then fails a request within seconds instead of holding it. Migrations run without them.
 */
export function dataSourceOptions(
  config: AppConfig,
  poolSize = 10,
  timeouts?: AppConfig['databaseTimeouts'],
): DataSourceOptions {
  const timeoutSettings = timeouts ? { statement_timeout: timeouts.statementMs, lock_timeout: timeouts.lockMs } : {};
  return {
    type: 'postgres',
    url: config.databaseUrl,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    logging: false,
    poolSize,
    // A fixed-size pool: idle connections stay open (PoolWarmer opens them all at start), so a burst never
    // waits for new ones.
    extra: {
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 0,
      application_name: 'calc-webhooks',
      ...timeoutSettings,
    },
  };
}
