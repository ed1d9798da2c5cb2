export type ErrorCode =
  | 'bad_request'
  | 'idempotency_key_reused'
  | 'idempotency_key_in_progress'
  | 'not_authenticated'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'rate_limited'
  | 'internal_server_error'
  | 'unavailable';

export interface ErrorDetail {
  field: string;
  message: string;
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: ErrorDetail[] };
}

/** An error the API reports to the client as it is; everything else becomes a 500. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  static badRequest(message: string, details?: ErrorDetail[]): ApiError {
    return new ApiError(400, 'bad_request', message, details);
  }

  static invalidField(field: string, message: string): ApiError {
    return new ApiError(400, 'bad_request', `${field}: ${message}`, [{ field, message }]);
  }

  static notFound(message = 'Resource not found'): ApiError {
    return new ApiError(404, 'not_found', message);
  }

  static notAuthenticated(message: string): ApiError {
    return new ApiError(401, 'not_authenticated', message);
  }

  static forbidden(message: string): ApiError {
    return new ApiError(403, 'forbidden', message);
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}
