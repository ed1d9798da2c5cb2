import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('submissions')
export class SubmissionEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @Column({ name: 'calculator_id', type: 'varchar', length: 32 })
  calculatorId: string;

  @Column({ type: 'boolean' })
  finished: boolean;

  @Column({ type: 'jsonb' })
  data: Record<string, unknown>;

  @Column({ type: 'jsonb' })
  meta: Record<string, unknown>;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
