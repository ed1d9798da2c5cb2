import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';

@Entity('calculators')
@Index('calculators_workspace_list_idx', ['workspaceId', 'createdAt', 'id'], { where: 'removed_at IS NULL' })
export class CalculatorEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => WorkspaceEntity, { name: 'calculators_workspace_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @Column({ name: 'folder_id', type: 'varchar', length: 32 })
  folderId: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'text', nullable: true })
  slug: string | null;

  @Column({ type: 'varchar', length: 32, default: 'draft' })
  status: string;

  @Column({ type: 'jsonb', default: [] })
  elements: object[];

  @Column({ type: 'jsonb', default: { lg: [], md: [], sm: [] } })
  layouts: { lg: object[]; md: object[]; sm: object[] };

  @Column({ type: 'jsonb', default: [] })
  variables: object[];

  @Column({ name: 'submit_actions', type: 'jsonb', default: {} })
  submitActions: object;

  @Column({ name: 'theme_id', type: 'varchar', length: 64, default: 'default' })
  themeId: string;

  @Column({ name: 'template_visibility', type: 'text', nullable: true })
  templateVisibility: string | null;

  @Column({ name: 'template_calculator_id', type: 'varchar', length: 32, nullable: true })
  templateCalculatorId: string | null;

  @Column({ name: 'clones_count', type: 'integer', default: 0 })
  clonesCount: number;

  @Column({ name: 'impressions_count', type: 'integer', default: 0 })
  impressionsCount: number;

  @Column({ name: 'last_impression_at', type: 'timestamptz', precision: 3, nullable: true })
  lastImpressionAt: Date | null;

  /**
   * Columns this code never reads or writes (submissions count in CalculatorSubmissionCounterEntity);
   * mapped only so the entity matches the schema, where a trigger adds any bump of them to shard 0.
   */
  @Column({ name: 'submissions_count', type: 'integer', default: 0, select: false, insert: false, update: false })
  legacySubmissionsCount: number;

  @Column({
    name: 'last_submission_at',
    type: 'timestamptz',
    precision: 3,
    nullable: true,
    select: false,
    insert: false,
    update: false,
  })
  legacyLastSubmissionAt: Date | null;

  @Column({ name: 'new_element_count', type: 'jsonb', default: {} })
  newElementCount: object;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'removed_at', type: 'timestamptz', precision: 3, nullable: true })
  removedAt: Date | null;
}
