import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { CalculatorEntity } from '../calculators/calculator.entity.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';

@Entity('webhooks')
@Index('webhooks_workspace_active_idx', ['workspaceId', 'createdAt', 'id'], { where: 'removed_at IS NULL' })
export class WebhookEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => WorkspaceEntity, { name: 'webhooks_workspace_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @Column({ type: 'varchar', length: 255, default: '' })
  name: string;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  @Column({ type: 'varchar', length: 32, default: 'user' })
  source: string;

  /** Standard Webhooks signing secret (`whsec_...`); only ever shown by GET /webhooks/{id}/secret. */
  @Column({ type: 'varchar', length: 128 })
  secret: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'removed_at', type: 'timestamptz', precision: 3, nullable: true })
  removedAt: Date | null;
}

@Entity('webhook_calculators')
@Index('webhook_calculators_calculator_idx', ['calculatorId', 'webhookId'])
export class WebhookCalculatorEntity {
  @ForeignKey(() => WebhookEntity, { name: 'webhook_calculators_webhook_id_fkey', onDelete: 'CASCADE' })
  @PrimaryColumn({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @ForeignKey(() => CalculatorEntity, { name: 'webhook_calculators_calculator_id_fkey', onDelete: 'CASCADE' })
  @PrimaryColumn({ name: 'calculator_id', type: 'varchar', length: 32 })
  calculatorId: string;
}

@Entity('webhook_triggers')
export class WebhookTriggerEntity {
  @ForeignKey(() => WebhookEntity, { name: 'webhook_triggers_webhook_id_fkey', onDelete: 'CASCADE' })
  @PrimaryColumn({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @PrimaryColumn({ type: 'varchar', length: 32 })
  type: string;
}
