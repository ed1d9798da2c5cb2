import { getSchemaPath, type HeaderObject, type SchemaObject } from '@nestjs/swagger';
import type { ErrorCode } from '../core/http/api-error.js';

interface ErrorResponse {
  code: ErrorCode;
  /** Further codes answered with this status. */
  otherCodes?: ErrorCode[];
  schema: string;
  description: string;
  headers?: Record<string, HeaderObject>;
}

const retryAfter = (description: string): Record<string, HeaderObject> => ({
  'Retry-After': { description, schema: { type: 'integer', minimum: 0 } },
});

/** The error body of DESIGN 3 for each status the API answers with (see http-exception.filter.ts). */
export const ERROR_RESPONSES = {
  400: {
    code: 'bad_request',
    otherCodes: ['idempotency_key_reused'],
    schema: 'BadRequestError',
    description:
      'Invalid request; `details` names each field and rule that failed, when there are any. ' +
      '`idempotency_key_reused`: the Idempotency-Key was used for another request.',
  },
  401: {
    code: 'not_authenticated',
    schema: 'NotAuthenticatedError',
    description: 'Missing, unknown or revoked API key (or portal session: expired, or its link revoked).',
  },
  403: {
    code: 'forbidden',
    schema: 'ForbiddenError',
    description: 'A portal session asked for what it may not do: a write in a read-only session, or a portal link.',
  },
  404: { code: 'not_found', schema: 'NotFoundError', description: "Unknown id, or another workspace's." },
  405: {
    code: 'method_not_allowed',
    schema: 'MethodNotAllowedError',
    description: 'The path exists but does not take this method.',
    headers: { Allow: { description: 'The methods the path takes.', schema: { type: 'string' } } },
  },
  409: {
    code: 'idempotency_key_in_progress',
    schema: 'IdempotencyKeyInProgressError',
    description: 'A request with this Idempotency-Key is still running; retry with the same key.',
    headers: retryAfter('Seconds to wait before retrying.'),
  },
  413: { code: 'payload_too_large', schema: 'PayloadTooLargeError', description: 'The request body is too large.' },
  429: {
    code: 'rate_limited',
    schema: 'RateLimitedError',
    description: 'Too many requests.',
    headers: retryAfter('Seconds to wait before retrying.'),
  },
  500: {
    code: 'internal_server_error',
    schema: 'InternalServerError',
    description: 'Unexpected error; the message carries a request id to quote.',
  },
  503: {
    code: 'unavailable',
    schema: 'UnavailableError',
    description: 'The database cannot be reached right now.',
    headers: retryAfter('Seconds to wait before retrying.'),
  },
} satisfies Record<number, ErrorResponse>;

export type ErrorStatus = keyof typeof ERROR_RESPONSES;

/** Statuses any operation can answer with (added to each by the document builder). */
export const COMMON_ERROR_STATUSES: ErrorStatus[] = [401, 429, 500, 503];

const errorDetail: SchemaObject = {
  type: 'object',
  required: ['field', 'message'],
  properties: {
    field: { type: 'string', description: 'The request field (or header, or query parameter) at fault.' },
    message: { type: 'string' },
  },
};

/** One schema per error status, each pinning its `code`. */
export function errorSchemas(): Record<string, SchemaObject> {
  const schemas: Record<string, SchemaObject> = { ErrorDetail: errorDetail };
  for (const [status, response] of Object.entries(ERROR_RESPONSES)) {
    const { code, schema } = response;
    const otherCodes = 'otherCodes' in response ? response.otherCodes : [];
    const details: Record<string, SchemaObject> =
      Number(status) === 400 ? { details: { type: 'array', items: { $ref: getSchemaPath('ErrorDetail') } } } : {};
    schemas[schema] = {
      type: 'object',
      required: ['error'],
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: { type: 'string', enum: [code, ...otherCodes] },
            message: { type: 'string', minLength: 1 },
            ...details,
          },
        },
      },
    };
  }
  return schemas;
}

/** The response object of an error status, as the decorators and the document builder attach it. */
export function errorResponse(status: ErrorStatus) {
  const { schema, description, ...rest } = ERROR_RESPONSES[status];
  const headers = 'headers' in rest ? rest.headers : undefined;
  return {
    description,
    ...(headers ? { headers } : {}),
    content: { 'application/json': { schema: { $ref: getSchemaPath(schema) } } },
  };
}
