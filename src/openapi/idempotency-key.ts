import type { OpenAPIObject } from '@nestjs/swagger';
import { errorResponse } from './error-responses.js';

const PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: [
    'Makes the write safe to retry. The first answer (status and body) is kept 24 hours per workspace and key;',
    'a repeat with the same key, method, path and JSON body gets it again, with the header',
    '`idempotent-replayed: true`, and changes nothing. The same key with another method, path or body: 400',
    '`idempotency_key_reused`. A repeat while the first is still running waits for it (up to 10 s, then 409).',
    '5xx answers are not kept: retry with the same key.',
  ].join(' '),
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[ -~]+$' },
} as const;

/** Every POST and PATCH takes an Idempotency-Key (DESIGN 7.6; IdempotencyInterceptor), so may answer its 400 and 409. */
export function addIdempotencyKey(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const operation of [pathItem.post, pathItem.patch]) {
      if (!operation) continue;
      operation.parameters = [...(operation.parameters ?? []), PARAMETER];
      operation.responses[400] ??= errorResponse(400);
      operation.responses[409] ??= errorResponse(409);
    }
  }
}
