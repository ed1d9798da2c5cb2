import type { DataSourceOptions } from 'typeorm';
import { ApiKeyEntity } from '../../auth/api-key.entity.js';
import { CalculatorSubmissionCounterEntity } from '../../calculators/calculator-submission-counter.entity.js';
import { CalculatorEntity } from '../../calculators/calculator.entity.js';
import { DeliveryAttemptEntity, DeliveryEntity } from '../../delivery/delivery.entity.js';
import { RecoveryEntity } from '../../delivery/recovery/recovery.entity.js';
import { IdempotencyKeyEntity } from '../../idempotency/idempotency-key.entity.js';
import { SubmissionEntity } from '../../submissions/submission.entity.js';
import { WebhookCalculatorEntity, WebhookEntity, WebhookTriggerEntity } from '../../webhooks/webhook.entity.js';
import { WorkspaceEntity } from '../../workspaces/workspace.entity.js';
import type { AppConfig } from '../config/config.js';
import { Baseline1764800000000 } from './migrations/1764800000000-baseline.js';

export const ENTITIES = [
  WorkspaceEntity,
  ApiKeyEntity,
  CalculatorEntity,
  CalculatorSubmissionCounterEntity,
  WebhookEntity,
  WebhookCalculatorEntity,
  WebhookTriggerEntity,
  SubmissionEntity,
  DeliveryEntity,
  DeliveryAttemptEntity,
  RecoveryEntity,
  IdempotencyKeyEntity,
];

export const MIGRATIONS = [Baseline1764800000000];

/**
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
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    logging: false,
    poolSize,
    extra: { connectionTimeoutMillis: 5000, application_name: 'calc-webhooks', ...timeoutSettings },
  };
}
