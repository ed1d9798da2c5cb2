import { applyDecorators, type Type } from '@nestjs/common';
import { ApiExtraModels, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { errorResponse, type ErrorStatus } from './error-responses.js';

/** Documents the JSON error bodies an operation answers with, besides COMMON_ERROR_STATUSES. */
export const ApiErrorResponses = (...statuses: ErrorStatus[]) =>
  applyDecorators(...statuses.map((status) => ApiResponse({ status, ...errorResponse(status) })));

/** The spec's one exception: a 400 on GET /webhooks is text/plain with an empty body. */
export const ApiEmptyTextBadRequest = () =>
  ApiResponse({
    status: 400,
    description: 'Invalid request; as the spec says, `text/plain` with an empty body.',
    content: { 'text/plain': { schema: { type: 'string', maxLength: 0 } } },
  });

/** A success body wrapped in `data`, as every spec operation but GET /me returns it. */
export const ApiDataResponse = (
  model: Type<unknown>,
  { status = 200, isArray = false, description }: { status?: number; isArray?: boolean; description: string },
) => {
  const item = { $ref: getSchemaPath(model) };
  return applyDecorators(
    ApiExtraModels(model),
    ApiResponse({
      status,
      description,
      schema: {
        type: 'object',
        required: ['data'],
        properties: { data: isArray ? { type: 'array', items: item } : item },
      },
    }),
  );
};

/** A 200 with a cursor page: `{ data: model[], nextCursor }`, `nextCursor` null on the last page. */
export const ApiCursorPage = (model: Type, description: string) =>
  applyDecorators(
    ApiExtraModels(model),
    ApiResponse({
      status: 200,
      description,
      schema: {
        type: 'object',
        required: ['data', 'nextCursor'],
        properties: {
          data: { type: 'array', items: { $ref: getSchemaPath(model) } },
          nextCursor: { type: 'string', nullable: true },
        },
      },
    }),
  );
