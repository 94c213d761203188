// Request logging: one line when a request arrives and one when it is answered, at debug. At
// info (the production default) requests are not logged: two lines per request cost about as
// much as handling a message send. Failures are still logged: 5xx replies by the app's error
// handler, and a response that broke off at error level here.

import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';

type Bindings = Record<string, unknown>;

/** pino loggers answer isLevelEnabled; Fastify's stand-in when logging is off does not. */
function debugEnabled(log: FastifyBaseLogger): boolean {
  return (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('debug') === true;
}

/** The request's URL with access tokens in the query masked, so logs never hold credentials. */
export function loggableUrl(url: string): string {
  return url.includes('access_token=') ? url.replace(/([?&]access_token=)[^&#]*/g, '$1<redacted>') : url;
}

export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (!debugEnabled(request.log)) return;
    request.log.debug({ method: request.method, url: loggableUrl(request.url), remoteAddress: request.ip }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      reply.log.error({ method: request.method, url: loggableUrl(request.url), statusCode: reply.statusCode, err: error }, 'request errored');
      return;
    }
    if (!debugEnabled(reply.log)) return;
    reply.log.debug(
      { method: request.method, url: loggableUrl(request.url), statusCode: reply.statusCode, responseTime: reply.elapsedTime },
      'request completed',
    );
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
