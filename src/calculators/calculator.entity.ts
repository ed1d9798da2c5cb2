import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('calculators')
export class CalculatorEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @Column({ name: 'folder_id', type: 'varchar', length: 32 })
  folderId: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'text', nullable: true })
  slug: string | null;

  @Column({ type: 'varchar', length: 32 })
  status: string;

  @Column({ type: 'jsonb' })
  elements: object[];

  @Column({ type: 'jsonb' })
  layouts: { lg: object[]; md: object[]; sm: object[] };

  @Column({ type: 'jsonb' })
  variables: object[];

  @Column({ name: 'submit_actions', type: 'jsonb' })
  submitActions: object;

  @Column({ name: 'theme_id', type: 'varchar', length: 64 })
  themeId: string;

  @Column({ name: 'template_visibility', type: 'text', nullable: true })
  templateVisibility: string | null;

  @Column({ name: 'template_calculator_id', type: 'varchar', length: 32, nullable: true })
  templateCalculatorId: string | null;

  @Column({ name: 'clones_count', type: 'integer' })
  clonesCount: number;

  @Column({ name: 'impressions_count', type: 'integer' })
  impressionsCount: number;

  @Column({ name: 'last_impression_at', type: 'timestamptz', precision: 3, nullable: true })
  lastImpressionAt: Date | null;

  @Column({ name: 'submissions_count', type: 'integer' })
  submissionsCount: number;

  @Column({ name: 'last_submission_at', type: 'timestamptz', precision: 3, nullable: true })
  lastSubmissionAt: Date | null;

  @Column({ name: 'new_element_count', type: 'jsonb' })
  newElementCount: object;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @Column({ name: 'removed_at', type: 'timestamptz', precision: 3, nullable: true })
  removedAt: Date | null;
}
