import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { CalculatorEntity } from './calculator.entity.js';

/** A timestamp as an entity holds it, or already in the response format (formatted by Postgres). */
type Timestamp = Date | string;

const iso = (d: Timestamp): string => (typeof d === 'string' ? d : d.toISOString());
const isoOrNull = (d: Timestamp | null): string | null => (d === null ? null : iso(d));

const OBJECTS = { type: 'array', items: { type: 'object' } } as const;
const TIMESTAMP = { format: 'date-time', description: 'ISO 8601 UTC, with milliseconds' } as const;

@ApiSchema({ name: 'CalculatorLayouts' })
export class CalculatorLayouts {
  @ApiProperty(OBJECTS)
  lg: object[];

  @ApiProperty(OBJECTS)
  md: object[];

  @ApiProperty(OBJECTS)
  sm: object[];
}

/** Spec 2.4; nullable fields are `string` when set (the spec leaves their type open). */
@ApiSchema({ name: 'Calculator' })
export class CalculatorResponse {
  @ApiProperty()
  id: string;

  @ApiProperty(TIMESTAMP)
  createdAt: string;

  @ApiProperty(TIMESTAMP)
  updatedAt: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ type: 'string', nullable: true })
  slug: string | null;

  @ApiProperty()
  workspaceId: string;

  @ApiProperty()
  folderId: string;

  @ApiProperty({ example: 'draft', description: 'One value is known: `draft`' })
  status: string;

  @ApiProperty(OBJECTS)
  elements: object[];

  @ApiProperty({ type: CalculatorLayouts })
  layouts: CalculatorLayouts;

  @ApiProperty(OBJECTS)
  variables: object[];

  @ApiProperty({ type: 'object', additionalProperties: true })
  submitActions: object;

  @ApiProperty()
  themeId: string;

  @ApiProperty({ type: 'string', nullable: true })
  templateVisibility: string | null;

  @ApiProperty({ type: 'string', nullable: true })
  templateCalculatorId: string | null;

  @ApiProperty({ type: 'integer', minimum: 0, default: 0 })
  clonesCount: number;

  @ApiProperty({ type: 'integer', minimum: 0, default: 0 })
  impressionsCount: number;

  @ApiProperty({ type: 'string', nullable: true, ...TIMESTAMP })
  lastImpressionAt: string | null;

  @ApiProperty({ type: 'integer', minimum: 0, default: 0 })
  submissionsCount: number;

  @ApiProperty({ type: 'string', nullable: true, ...TIMESTAMP })
  lastSubmissionAt: string | null;

  @ApiProperty({ type: 'object', additionalProperties: true })
  newElementCount: object;
}

/** A calculator with its submission counters (the sum and latest of its shards: CALCULATORS_LIST). */
export type CountedCalculator = Omit<CalculatorEntity, 'createdAt' | 'updatedAt' | 'lastImpressionAt' | 'removedAt'> & {
  createdAt: Timestamp;
  updatedAt: Timestamp;
  lastImpressionAt: Timestamp | null;
  submissionsCount: number;
  lastSubmissionAt: Timestamp | null;
};

/** The 21 fields of spec 2.4, in its order. */
export const serializeCalculator = (c: CountedCalculator): CalculatorResponse => ({
  id: c.id,
  createdAt: iso(c.createdAt),
  updatedAt: iso(c.updatedAt),
  name: c.name,
  slug: c.slug,
  workspaceId: c.workspaceId,
  folderId: c.folderId,
  status: c.status,
  elements: c.elements,
  layouts: c.layouts,
  variables: c.variables,
  submitActions: c.submitActions,
  themeId: c.themeId,
  templateVisibility: c.templateVisibility,
  templateCalculatorId: c.templateCalculatorId,
  clonesCount: c.clonesCount,
  impressionsCount: c.impressionsCount,
  lastImpressionAt: isoOrNull(c.lastImpressionAt),
  submissionsCount: c.submissionsCount,
  lastSubmissionAt: isoOrNull(c.lastSubmissionAt),
  newElementCount: c.newElementCount,
});
