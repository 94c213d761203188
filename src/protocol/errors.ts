// The one error type of the project. Every layer throws it; the HTTP layer turns it into
// `{errcode, error, ...extra}` with `status`. Anything else thrown becomes a 500 M_UNKNOWN there.

export type ErrorExtra = Record<string, unknown>;

export class HearthError extends Error {
  constructor(
    readonly status: number,
    readonly errcode: string,
    message: string,
    readonly extra: ErrorExtra = {},
  ) {
    super(message);
    this.name = 'HearthError';
  }

  static badJson(message: string): HearthError {
    return new HearthError(400, 'M_BAD_JSON', message);
  }
  static notJson(message = 'Content not JSON.'): HearthError {
    return new HearthError(400, 'M_NOT_JSON', message);
  }
  static invalidParam(message: string): HearthError {
    return new HearthError(400, 'M_INVALID_PARAM', message);
  }
  static forbidden(message: string): HearthError {
    return new HearthError(403, 'M_FORBIDDEN', message);
  }
  static notFound(message: string): HearthError {
    return new HearthError(404, 'M_NOT_FOUND', message);
  }
  static tooLarge(message: string): HearthError {
    return new HearthError(413, 'M_TOO_LARGE', message);
  }
  static unknown(message: string): HearthError {
    return new HearthError(500, 'M_UNKNOWN', message);
  }
}
