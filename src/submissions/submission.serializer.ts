import type { SubmissionEntity } from './submission.entity.js';

/** The Submission of DESIGN 4/5, as the API returns it and as webhook payloads carry it. */
export interface Submission {
  id: string;
  createdAt: string;
  updatedAt: string;
  calculatorId: string;
  finished: boolean;
  data: Record<string, unknown>;
  meta: Record<string, unknown>;
}

export const serializeSubmission = (s: Omit<SubmissionEntity, 'workspaceId'>): Submission => ({
  id: s.id,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
  calculatorId: s.calculatorId,
  finished: s.finished,
  data: s.data,
  meta: s.meta,
});
