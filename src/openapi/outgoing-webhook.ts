import type { OpenAPIObject, PathItemObject } from '@nestjs/swagger';
import { USER_AGENT } from '../delivery/engine/webhook-sender.js';

const header = (description: string, schema: Record<string, unknown>, example?: string) => ({
  required: true,
  description,
  schema,
  ...(example ? { example } : {}),
});

const SIGNATURE_ENTRY = 'v1,[A-Za-z0-9+/]+={0,2}';

const retryAfter = {
  'Retry-After': {
    description:
      'Seconds, or an HTTP date: the next attempt waits at least this long when it is longer than the ' +
      'scheduled delay (capped at 10 hours).',
    schema: { type: 'string' },
  },
};

interface OutgoingRequest {
  operationId: string;
  summary: string;
  description: string;
  /** The body's schema, a component's name. */
  schema: string;
  gone: string;
}

/** A request the service sends, signed and retried as DESIGN 5 says, and the answers it acts on. */
const outgoing = ({ operationId, summary, description, schema, gone }: OutgoingRequest): PathItemObject => ({
  post: {
    operationId,
    summary,
    description: [
      description,
      'Signed as [Standard Webhooks](https://www.standardwebhooks.com/) specify: verify the signature and the',
      'timestamp before trusting the body (see "Verifying deliveries" in docs/delivery.md). Retried on failure',
      '(8 attempts over about 27.5 hours by default) with the same `webhook-id`: use it to de-duplicate.',
    ].join('\n'),
    security: [],
    parameters: [
      {
        name: 'webhook-id',
        in: 'header',
        ...header('The delivery id, the same on every retry of this delivery.', { type: 'string' }),
      },
      {
        name: 'webhook-timestamp',
        in: 'header',
        ...header(
          'Unix time in seconds of this attempt; reject an attempt outside your tolerance (e.g. 5 minutes).',
          { type: 'string', pattern: '^[0-9]+$' },
          '1732450000',
        ),
      },
      {
        name: 'webhook-signature',
        in: 'header',
        ...header(
          '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed with the base64-decoded ' +
            'part of the secret after `whsec_`. During a secret rotation overlap two space-separated entries, ' +
            '`v1,<new key> v1,<previous key>`: accept the request when any entry matches a key you know.',
          { type: 'string', pattern: `^${SIGNATURE_ENTRY}( ${SIGNATURE_ENTRY})*$` },
          'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,3O0GSMyKqZjmd2hIwTVn/fU0e1FwYfFYVdaRfeXfGzk=',
        ),
      },
      {
        name: 'content-type',
        in: 'header',
        ...header('Always JSON.', { type: 'string', enum: ['application/json'] }),
      },
      {
        name: 'user-agent',
        in: 'header',
        ...header('Names the sender.', { type: 'string', enum: [USER_AGENT] }),
      },
    ],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
    },
    responses: {
      '2XX': { description: 'Accepted: the delivery succeeded (within the attempt timeout, 15 s by default).' },
      '410': { description: gone },
      '429': { description: 'Too many requests: retried later, honouring `Retry-After`.', headers: retryAfter },
      '503': { description: 'Unavailable: retried later, honouring `Retry-After`.', headers: retryAfter },
      default: {
        description:
          'Any other status, a network error, a timeout or a response over the size limit fails the attempt: ' +
          'retried on the schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, each +-20%).',
      },
    },
  },
});

/** The request the service sends to a webhook's url (DESIGN 5). */
const NEW_SUBMISSION = outgoing({
  operationId: 'newSubmission',
  summary: 'A submission was made to one of the webhook’s calculators',
  description: 'Sent by the service to the webhook’s `url` for every submission to a calculator it is bound to.',
  schema: 'DeliveryPayload',
  gone: 'Gone: the delivery ends as failed and the webhook is disabled (no further deliveries).',
});

/** What an operational webhook (POST /operational-webhooks) receives, by event (DESIGN 10). */
const OPERATIONAL_EVENTS: Record<string, Omit<OutgoingRequest, 'gone'>> = {
  'webhook.disabled': {
    operationId: 'webhookDisabled',
    summary: 'A webhook was disabled',
    description: 'By hand (POST /webhooks/{id}/disable), after a 410, or by the health rules; with the last error.',
    schema: 'WebhookDisabledEvent',
  },
  'webhook.enabled': {
    operationId: 'webhookEnabled',
    summary: 'A disabled webhook was enabled',
    description: 'POST /webhooks/{id}/enable on a disabled webhook.',
    schema: 'WebhookEnabledEvent',
  },
  'delivery.failed': {
    operationId: 'deliveryFailed',
    summary: 'A delivery ended failed',
    description:
      'Its retry schedule was exhausted, its receiver answered 410, or the SSRF guard refused it; with the ' +
      'last attempt and the body the webhook was sent.',
    schema: 'DeliveryFailedEvent',
  },
  'recovery.completed': {
    operationId: 'recoveryCompleted',
    summary: 'A recovery completed',
    description: 'Every delivery it matched was requeued (POST /webhooks/{id}/recover); with its counts.',
    schema: 'RecoveryCompletedEvent',
  },
};

/** The OpenAPI 3.1 `webhooks` section: the requests this API sends rather than answers. */
export function addOutgoingWebhooks(document: OpenAPIObject): void {
  const operational = Object.entries(OPERATIONAL_EVENTS).map(([type, request]) => [
    type,
    outgoing({
      ...request,
      description: `Sent to the workspace's operational webhooks subscribed to \`${type}\`. ${request.description}`,
      gone: 'Gone: the delivery ends as failed (an operational webhook is never disabled).',
    }),
  ]);
  document.webhooks = { newSubmission: NEW_SUBMISSION, ...Object.fromEntries(operational) };
}
