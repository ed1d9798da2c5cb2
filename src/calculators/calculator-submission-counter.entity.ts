import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { CalculatorEntity } from './calculator.entity.js';

/**
 * A calculator's submission counter, split in shards: each submission bumps one shard it can lock
 * without waiting (SUBMISSION_WITH_OUTBOX), so submissions to one calculator do not queue on one row.
 * A calculator's count is the sum of its shards and its last submission their latest (CALCULATORS_LIST).
 */
@Entity('calculator_submission_counters')
export class CalculatorSubmissionCounterEntity {
  @ForeignKey(() => CalculatorEntity, {
    name: 'calculator_submission_counters_calculator_id_fkey',
    onDelete: 'CASCADE',
  })
  @PrimaryColumn({ name: 'calculator_id', type: 'varchar', length: 32 })
  calculatorId: string;

  @PrimaryColumn({ type: 'smallint' })
  shard: number;

  /** bigint: pg hands it over as a string. */
  @Column({ type: 'bigint', default: 0 })
  count: string;

  @Column({ name: 'last_submission_at', type: 'timestamptz', precision: 3, nullable: true })
  lastSubmissionAt: Date | null;
}
