import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { WebhookEntity } from './webhook.entity.js';

/**
 * What a webhook's filter let through and held back, split like calculator_submission_counters: a
 * submission adds to the row of the calculator shard it holds (SUBMISSION_WITH_OUTBOX), so submissions
 * under way never write one row. A filter's counts are the sum of its version's rows.
 */
@Entity('webhook_filter_counters')
export class WebhookFilterCounterEntity {
  @ForeignKey(() => WebhookEntity, { name: 'webhook_filter_counters_webhook_id_fkey', onDelete: 'CASCADE' })
  @PrimaryColumn({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @PrimaryColumn({ name: 'filter_version', type: 'integer' })
  filterVersion: number;

  @PrimaryColumn({ name: 'calculator_id', type: 'varchar', length: 32 })
  calculatorId: string;

  @PrimaryColumn({ type: 'smallint' })
  shard: number;

  /** bigint: pg hands it over as a string. */
  @Column({ type: 'bigint', default: 0 })
  passed: string;

  @Column({ name: 'held_back', type: 'bigint', default: 0 })
  heldBack: string;
}
