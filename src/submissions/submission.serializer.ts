import type { SubmissionEntity } from './submission.entity.js';

/** The Submission of DESIGN 4/5, as the API returns it and as webhook payloads carry it. */
export const serializeSubmission = (s: Omit<SubmissionEntity, 'workspaceId'>) => ({
  id: s.id,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
  calculatorId: s.calculatorId,
  finished: s.finished,
  data: s.data,
  meta: s.meta,
});

export type SubmissionResponse = ReturnType<typeof serializeSubmission>;
