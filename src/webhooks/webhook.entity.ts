import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('webhooks')
export class WebhookEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  @Column({ type: 'varchar', length: 32 })
  source: string;

  /** Standard Webhooks signing secret (`whsec_...`); only ever shown by GET /webhooks/{id}/secret. */
  @Column({ type: 'varchar', length: 128 })
  secret: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @Column({ name: 'removed_at', type: 'timestamptz', precision: 3, nullable: true })
  removedAt: Date | null;
}

@Entity('webhook_calculators')
export class WebhookCalculatorEntity {
  @PrimaryColumn({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @PrimaryColumn({ name: 'calculator_id', type: 'varchar', length: 32 })
  calculatorId: string;
}

@Entity('webhook_triggers')
export class WebhookTriggerEntity {
  @PrimaryColumn({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @PrimaryColumn({ type: 'varchar', length: 32 })
  type: string;
}
