import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { CalculatorEntity } from '../calculators/calculator.entity.js';

@Entity('submissions')
// (calculator_id, created_at DESC, id DESC): the listing's keyset, newest first (its migration).
@Index('submissions_calculator_page_idx', { synchronize: false })
export class SubmissionEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  /** Its calculator's workspace; no foreign key of its own, as calculatorId's implies it. */
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @ForeignKey(() => CalculatorEntity, { name: 'submissions_calculator_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'calculator_id', type: 'varchar', length: 32 })
  calculatorId: string;

  @Column({ type: 'boolean', default: true })
  finished: boolean;

  @Column({ type: 'jsonb' })
  data: Record<string, unknown>;

  @Column({ type: 'jsonb', default: {} })
  meta: Record<string, unknown>;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  updatedAt: Date;
}
