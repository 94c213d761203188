// Requests Node's HTTP parser rejects before any route sees them (a request line or headers over
// the 16 KiB limit, a malformed request, a request that took too long to arrive). Node would answer
// with a bare status line; clients get the spec's error shape and CORS headers instead, and the
// log gets the line every refused request gets.

import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { CORS_HEADERS } from './cors.js';
import { loggableUrl } from './request-log.js';

// Time the client gets to read the reply before the connection is cut.
const LINGER_MS = 2000;

interface ClientError {
  readonly code?: string;
}

/** Where refused requests are logged (the app's logger). */
export interface ClientErrorLog {
  info(fields: object, message: string): void;
}

/**
 * The reply to a request the parser rejected. A head over the limit is 431 with M_TOO_LARGE (the
 * spec's code for a request too large): Node's parser counts the request line and headers together
 * and does not say which overflowed, so an overlong URL cannot be told apart for a 414. Twisted
 * (Synapse) answers a bare 400 here; Node and Fastify answer 431, kept for the same reason.
 */
export function clientErrorReply(err: ClientError): { status: number; errcode: string; error: string } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, errcode: 'M_TOO_LARGE', error: 'Request URL or headers too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, errcode: 'M_UNKNOWN', error: 'Request not received in time' };
    default:
      return { status: 400, errcode: 'M_UNKNOWN', error: 'Malformed HTTP request' };
  }
}

/** The raw HTTP response for `err`, closing the connection. */
export function clientErrorResponse(err: ClientError): string {
  const { status, errcode, error } = clientErrorReply(err);
  const body = JSON.stringify({ errcode, error });
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
    ...CORS_HEADERS,
  };
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n${body}`;
}

interface InFlightResponse {
  _headerSent?: boolean;
  req?: { method?: string; url?: string };
}

/** A Node HTTP server's 'clientError' listener; refused requests are logged to `log` at info. */
export function answerClientError(err: ClientError, socket: Duplex, log?: ClientErrorLog): void {
  // A reset connection cannot be answered; nor can one whose reply has begun (as Node's own check).
  const inFlight = (socket as { _httpMessage?: InFlightResponse })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?._headerSent === true) {
    socket.destroy();
    return;
  }
  if (log !== undefined) {
    const { status, errcode, error } = clientErrorReply(err);
    // A request whose head was read (its body is late) is named; a head the parser refused cannot be.
    const req = inFlight?.req;
    log.info(
      {
        method: req?.method,
        url: req?.url === undefined ? undefined : loggableUrl(req.url),
        statusCode: status,
        errcode,
        error,
        client: (socket as { remoteAddress?: string }).remoteAddress,
        parserError: err.code,
      },
      'request refused',
    );
  }
  socket.end(clientErrorResponse(err));
  // The rest of the request is read and dropped: closing with it unread would send a reset, which
  // can discard the reply before the client reads it.
  socket.resume();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
