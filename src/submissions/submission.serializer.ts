import type { SubmissionResponse } from './submission.response.js';
import type { SubmissionEntity } from './submission.entity.js';

/**
 * The Submission of DESIGN 4/5, as the API returns it and as webhook payloads carry it. The schema class is
 * imported as a type only (erased at runtime), so the worker building payloads does not load @nestjs/swagger.
 */
export const serializeSubmission = (s: Omit<SubmissionEntity, 'workspaceId'>): SubmissionResponse => ({
  id: s.id,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
  calculatorId: s.calculatorId,
  finished: s.finished,
  data: s.data,
  meta: s.meta,
});
