import { ValidationPipe, type ArgumentMetadata, type PipeTransform, type ValidationError } from '@nestjs/common';
import { ApiError, type ErrorDetail } from './api-error.js';

function flatten(errors: ValidationError[], parent = ''): ErrorDetail[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    // One message per field: the first rule it breaks (a missing array is not also empty and unknown).
    const own = Object.values(error.constraints ?? {})
      .slice(0, 1)
      .map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

// Keys no DTO has, which class-transformer skips and Nest strips without a word, so whitelisting never sees them.
const HIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype', ...Object.getOwnPropertyNames(Object.prototype)]);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const VERBATIM = Symbol('VERBATIM');

/**
 * A body field handed to the handler exactly as parsed (a submission's answers): class-transformer's
 * copy drops nested keys such as `constructor` or `toString`, which are data there.
 */
export function Verbatim(): PropertyDecorator {
  return (target, property) => {
    const fields: (string | symbol)[] = Reflect.getMetadata(VERBATIM, target.constructor) ?? [];
    Reflect.defineMetadata(VERBATIM, [...fields, property], target.constructor);
  };
}

const toBadRequest = (details: ErrorDetail[]): ApiError =>
  ApiError.badRequest(details.map((d) => `${d.field}: ${d.message}`).join('; ') || 'Invalid request body', details);

/**
 * A list's query DTO: unknown parameters are dropped, not refused (every list ignores them), and only
 * the first broken rule, in the DTO's field order, is reported, as the lists always have.
 */
const queryPipe = new ValidationPipe({
  whitelist: true,
  forbidUnknownValues: true,
  transform: true,
  stopAtFirstError: true,
  validationError: { target: false, value: false },
  exceptionFactory: (errors) => toBadRequest(flatten(errors).slice(0, 1)),
});

/**
 * Validates a body or a whole query against its DTO and hands the handler the DTO instance; body fields
 * marked @Verbatim keep the parsed value. One pipe for every body: a route's own pipe runs after the
 * global one and would only see the transformed copy, without the keys it dropped.
 */
class RequestValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // A copy: the base pipe strips prototype keys in place, and the request's query stays as it came.
    if (metadata.type === 'query' && metadata.data === undefined && isPlainObject(value)) {
      return queryPipe.transform({ ...value }, metadata);
    }
    if (metadata.type !== 'body' || !isPlainObject(value)) return super.transform(value, metadata);
    const hidden = Object.keys(value).find((key) => HIDDEN_KEYS.has(key));
    if (hidden) throw ApiError.invalidField(hidden, `property ${hidden} should not exist`);
    const verbatim: (string | symbol)[] = (metadata.metatype && Reflect.getMetadata(VERBATIM, metadata.metatype)) ?? [];
    // Copied first: the base pipe strips prototype keys from the value in place.
    const kept = verbatim
      .filter((f) => typeof f === 'string' && Object.hasOwn(value, f))
      .map((f) => [f, structuredClone(value[f as string])] as const);
    const dto = (await super.transform(value, metadata)) as Record<string | symbol, unknown>;
    for (const [field, raw] of kept) dto[field] = raw;
    return dto;
  }
}

/** class-validator failures become the API's 400 body, one detail per field and rule. */
export function createValidationPipe(): ValidationPipe {
  return new RequestValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => toBadRequest(flatten(errors)),
  });
}

/**
 * For an operation that takes no body (DESIGN 7: unknown fields are a 400): nothing, `{}` or no body
 * at all passes; any field is refused by name, as the DTO pipe refuses a field no DTO has.
 */
export class NoBodyPipe implements PipeTransform {
  transform(value: unknown): undefined {
    if (value === undefined || value === null) return undefined;
    if (!isPlainObject(value)) throw ApiError.invalidField('body', 'this operation takes no body, or an empty object');
    const [field] = Object.keys(value);
    if (field !== undefined) throw ApiError.invalidField(field, `property ${field} should not exist`);
    return undefined;
  }
}
