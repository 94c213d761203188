// Request logging. Every reply with an error status is logged once when it is sent: 4xx at info,
// 5xx at error (with the error), each with the method, the URL (credentials masked), the status,
// the errcode and message, who asked (the user, or the client address when no user is known) and,
// for a 429, the limit that was hit. Successful requests are logged at debug only (when they
// arrive and when they are answered): at info two lines per request would cost about as much as
// handling a message send.

import { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { ClientAddresses } from './client-address.js';

type Bindings = Record<string, unknown>;

/** pino loggers answer isLevelEnabled; Fastify's stand-in when logging is off does not. */
function debugEnabled(log: FastifyBaseLogger): boolean {
  return (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('debug') === true;
}

/** Query parameters whose values are credentials: access and refresh tokens, login and registration tokens, secrets. */
const SECRET_PARAMS = /([?&](?:access_token|refresh_token|loginToken|login_token|token|client_secret|password|secret)=)[^&#]*/g;

/** The request's URL with credentials in the query masked, so logs never hold them. */
export function loggableUrl(url: string): string {
  return url.includes('=') ? url.replace(SECRET_PARAMS, '$1<redacted>') : url;
}

/** What a refused or failed request's log line reports, noted while it is served. */
export interface RequestNotes {
  errcode?: string;
  error?: string;
  /** For a 429: the limit that was hit. */
  limit?: string;
  /** For a 5xx: what was thrown. */
  err?: unknown;
}

const NOTES = 'hearthNotes';
const USER = 'hearthUser';

interface Noted {
  [NOTES]: RequestNotes | null;
  /** Who asked, once the access token is resolved. */
  [USER]: string | null;
}

/**
 * Lets requests carry notes and their user (properties declared to Fastify, so request objects
 * keep one shape). Notes are made only for failures; a success costs one property write.
 */
export function allowRequestNotes(app: FastifyInstance): void {
  app.decorateRequest(NOTES, null);
  app.decorateRequest(USER, null);
}

/** The notes of a request, made on first use. */
export function notesOf(request: FastifyRequest): RequestNotes {
  return ((request as unknown as Noted)[NOTES] ??= {});
}

export function noteUser(request: FastifyRequest, userId: string): void {
  (request as unknown as Noted)[USER] = userId;
}

export class RequestLogController extends LogController {
  constructor(private readonly addresses: ClientAddresses) {
    super();
  }

  override incomingRequest(request: FastifyRequest): void {
    if (!debugEnabled(request.log)) return;
    request.log.debug({ method: request.method, url: loggableUrl(request.originalUrl), remoteAddress: this.addressOf(request) }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const status = reply.statusCode;
    if (error) {
      reply.log.error({ method: request.method, url: loggableUrl(request.originalUrl), statusCode: status, err: error }, 'request errored');
      return;
    }
    if (status >= 400) {
      const noted = request as unknown as Noted;
      const notes = noted[NOTES] ?? {};
      const user = noted[USER];
      const line: Record<string, unknown> = {
        method: request.method,
        url: loggableUrl(request.originalUrl),
        statusCode: status,
        errcode: notes.errcode,
        error: notes.error,
      };
      if (user !== null && user !== undefined) line['user'] = user;
      else line['client'] = this.addressOf(request);
      if (notes.limit !== undefined) line['limit'] = notes.limit;
      line['responseTime'] = reply.elapsedTime;
      if (status >= 500) reply.log.error({ ...line, err: notes.err }, 'request failed');
      else reply.log.info(line, 'request refused');
      return;
    }
    if (!debugEnabled(reply.log)) return;
    reply.log.debug(
      { method: request.method, url: loggableUrl(request.originalUrl), statusCode: status, responseTime: reply.elapsedTime },
      'request completed',
    );
  }

  private addressOf(request: FastifyRequest): string {
    return this.addresses.resolve(request.raw.socket?.remoteAddress, request.headers['x-forwarded-for']);
  }
}

/**
 * Per-request child loggers (which carry the request id) only when requests are logged; below
 * debug the app's logger serves every request as it is, saving a logger object per request.
 */
export function childLoggerFactory(this: unknown, logger: FastifyBaseLogger, bindings: Bindings, options: object): FastifyBaseLogger {
  if (!debugEnabled(logger) && Object.keys(options).length === 0) return logger;
  return logger.child(bindings, options);
}
