import { serializeSubmission } from '../submissions/submission.serializer.js';
import type { SubmissionEntity } from '../submissions/submission.entity.js';

/** The body POSTed to a webhook's url (DESIGN 5). */
export const buildPayload = (webhookId: string, submission: Omit<SubmissionEntity, 'workspaceId'>) => ({
  webhookId,
  event: 'newSubmission' as const,
  data: serializeSubmission(submission),
});

/**
 * The body a webhook's stored delivery was sent: of its submission, or of the sample a test delivery
 * (DESIGN 7.4) carries instead.
 */
export const storedPayload = (
  webhookId: string,
  submission: Omit<SubmissionEntity, 'workspaceId'> | null,
  testSubmission: Record<string, unknown> | null,
) =>
  submission
    ? buildPayload(webhookId, submission)
    : { webhookId, event: 'newSubmission' as const, data: testSubmission };
