import type { CalculatorEntity } from './calculator.entity.js';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** The 21 fields of spec 2.4, in its order. */
export const serializeCalculator = (c: CalculatorEntity) => ({
  id: c.id,
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString(),
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
  lastImpressionAt: iso(c.lastImpressionAt),
  submissionsCount: c.submissionsCount,
  lastSubmissionAt: iso(c.lastSubmissionAt),
  newElementCount: c.newElementCount,
});

export type CalculatorResponse = ReturnType<typeof serializeCalculator>;
