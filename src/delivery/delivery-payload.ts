import { serializeSubmission } from '../submissions/submission.serializer.js';
import type { SubmissionEntity } from '../submissions/submission.entity.js';

/** The body POSTed to a webhook's url (DESIGN 5). */
export const buildPayload = (webhookId: string, submission: Omit<SubmissionEntity, 'workspaceId'>) => ({
  webhookId,
  event: 'newSubmission' as const,
  data: serializeSubmission(submission),
});
