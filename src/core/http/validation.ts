import { ValidationPipe, type ArgumentMetadata, type ValidationError } from '@nestjs/common';
import { ApiError, type ErrorDetail } from './api-error.js';

function flatten(errors: ValidationError[], parent = ''): ErrorDetail[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

// Keys no DTO has, which class-transformer skips and Nest strips without a word, so whitelisting never sees them.
const HIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype', ...Object.getOwnPropertyNames(Object.prototype)]);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Validates a body against its DTO, then hands the handler the body as parsed: class-transformer's
 * copy drops nested keys such as `constructor` or `toString`, which are data in a submission's answers.
 */
class BodyValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'body' || !isPlainObject(value)) return super.transform(value, metadata);
    const hidden = Object.keys(value).find((key) => HIDDEN_KEYS.has(key));
    if (hidden) throw ApiError.invalidField(hidden, `property ${hidden} should not exist`);
    const asSent = structuredClone(value);
    await super.transform(value, metadata);
    return asSent;
  }
}

/** class-validator failures become the API's 400 body, one detail per field and rule. */
export function createValidationPipe(): ValidationPipe {
  return new BodyValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const details = flatten(errors);
      const message = details.map((d) => `${d.field}: ${d.message}`).join('; ');
      return ApiError.badRequest(message || 'Invalid request body', details);
    },
  });
}
