// Turns anything thrown while serving a request into a client-safe reply. HearthError carries its
// own status and errcode; Fastify's own errors are mapped; anything else is a bare 500.

import { HearthError } from '../protocol/errors.js';

export interface ErrorReply {
  status: number;
  body: Record<string, unknown>;
}

interface FastifyLikeError {
  code?: unknown;
  statusCode?: unknown;
}

export function errorReply(err: unknown): ErrorReply {
  if (err instanceof HearthError) {
    return { status: err.status, body: { ...err.extra, errcode: err.errcode, error: err.message } };
  }
  const e = (typeof err === 'object' && err !== null ? err : {}) as FastifyLikeError;
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return reply(413, 'M_TOO_LARGE', 'Request body too large');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return reply(400, 'M_NOT_JSON', 'Content not JSON.');
    case 'FST_ERR_BAD_URL':
      return reply(400, 'M_UNRECOGNIZED', 'Malformed URL');
    default:
      break;
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return reply(e.statusCode, 'M_UNKNOWN', 'Bad request');
  }
  return reply(500, 'M_UNKNOWN', 'Internal server error');
}

function reply(status: number, errcode: string, error: string): ErrorReply {
  return { status, body: { errcode, error } };
}
