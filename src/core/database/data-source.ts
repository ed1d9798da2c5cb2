import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/config.js';
import { InitialSchema1763740000000 } from './migrations/1763740000000-initial-schema.js';
import { ApiKeyRevocationNotify1763900000000 } from './migrations/1763900000000-api-key-revocation-notify.js';
import { BeginDeliveryAttempt1763910000000 } from './migrations/1763910000000-begin-delivery-attempt.js';
import { AttemptLease1764100000000 } from './migrations/1764100000000-attempt-lease.js';
import { OperateDeliveries1764200000000 } from './migrations/1764200000000-operate-deliveries.js';
import { ClaimSkipsDisabled1764210000000 } from './migrations/1764210000000-claim-skips-disabled.js';
import { CalculatorSubmissionCounters1764250000000 } from './migrations/1764250000000-calculator-submission-counters.js';
import { AttemptNaturalKey1764300000000 } from './migrations/1764300000000-attempt-natural-key.js';
import { DropImpliedWorkspaceKeys1764500000000 } from './migrations/1764500000000-drop-implied-workspace-keys.js';
import { SetBasedClaim1764400000000 } from './migrations/1764400000000-set-based-claim.js';
import { AttemptGenericPlans1764600000000 } from './migrations/1764600000000-attempt-generic-plans.js';
import { DeliveriesFillfactor1764700000000 } from './migrations/1764700000000-deliveries-fillfactor.js';

export const MIGRATIONS = [
  InitialSchema1763740000000,
  ApiKeyRevocationNotify1763900000000,
  BeginDeliveryAttempt1763910000000,
  AttemptLease1764100000000,
  OperateDeliveries1764200000000,
  ClaimSkipsDisabled1764210000000,
  CalculatorSubmissionCounters1764250000000,
  AttemptNaturalKey1764300000000,
  SetBasedClaim1764400000000,
  DropImpliedWorkspaceKeys1764500000000,
  AttemptGenericPlans1764600000000,
  DeliveriesFillfactor1764700000000,
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
    extra: { connectionTimeoutMillis: 5000, application_name: 'calc-webhooks', ...timeoutSettings },
  };
}
