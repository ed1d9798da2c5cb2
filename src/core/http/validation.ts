import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { ApiError, type ErrorDetail } from './api-error.js';

function flatten(errors: ValidationError[], parent = ''): ErrorDetail[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

/** class-validator failures become the API's 400 body, one detail per field and rule. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
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
