// The HTTP application: mounts route definitions under every prefix they answer, reads bodies,
// adds CORS headers, and gives every failure the spec's error shape.

import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { parseJsonObjectBody } from './body.js';
import { answerClientError } from './client-error.js';
import { CORS_HEADERS } from './cors.js';
import type { RateLimiter } from './rate-limit.js';
import { errorReply } from './errors.js';
import { mountPaths } from './prefixes.js';
import { childLoggerFactory, RequestLogController } from './request-log.js';
import { refuseNulInParameters } from './nul.js';
import { HearthError } from '../protocol/errors.js';
import type { Authenticator, HttpMethod, HttpRequest, Requester, RouteAuth, RouteDef } from './route.js';

export interface HttpAppOptions {
  /** Largest JSON body accepted by default, in bytes. */
  jsonBodyLimit?: number;
  /** Fastify's logger option: false in tests, a pino config or instance in production. */
  logger?: boolean | object;
  /** Resolves access tokens; without one, every route that needs a token answers M_UNKNOWN_TOKEN. */
  authenticate?: Authenticator;
  /** Limits how fast each client may call rate-limited routes; none: no limit. */
  rateLimiter?: RateLimiter;
}

function isRateLimited(route: RouteDef): boolean {
  return route.rateLimited ?? (route.api === 'client' && (route.method === 'PUT' || route.method === 'POST'));
}

/** 429 M_LIMIT_EXCEEDED when the client has used its slots; per user, or per address without a token. */
function checkRateLimit(limiter: RateLimiter, req: HttpRequest, requester: Requester | undefined): void {
  if (requester !== undefined && limiter.isExempt(requester.userId)) return;
  const wait = limiter.take(requester?.userId ?? `ip:${req.remoteAddress}`);
  if (wait > 0) {
    throw new HearthError(429, 'M_LIMIT_EXCEEDED', 'Too many requests', { retry_after_ms: wait });
  }
}

function routeAuth(route: RouteDef): RouteAuth {
  if (route.auth !== undefined) return route.auth;
  if (route.api === 'admin') return 'admin';
  return route.api === 'client' || route.api === 'media' ? 'user' : 'none';
}

async function authorize(
  route: RouteDef,
  req: IncomingRequest,
  authenticate: Authenticator | undefined,
): Promise<Requester | undefined> {
  const mode = routeAuth(route);
  if (mode === 'none') return undefined;
  if (req.accessTokenError !== undefined) throw req.accessTokenError;
  if (req.accessToken === undefined) {
    if (mode === 'optional') return undefined;
    throw new HearthError(401, 'M_MISSING_TOKEN', 'Missing access token');
  }
  if (authenticate === undefined) throw new HearthError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
  const requester = await authenticate(req.accessToken, req);
  if (requester.isGuest && mode !== 'guest' && mode !== 'optional') {
    throw new HearthError(403, 'M_GUEST_ACCESS_FORBIDDEN', 'Guest access not allowed');
  }
  if (mode === 'admin' && !requester.isAdmin) throw HearthError.forbidden('You are not a server admin');
  return requester;
}

const METHODS: readonly HttpMethod[] = ['GET', 'PUT', 'POST', 'DELETE'];
const DEFAULT_JSON_BODY_LIMIT = 1024 * 1024;

/**
 * The access token from `Authorization: Bearer` or the `access_token` query parameter. Both at once
 * is refused, as Synapse does: which one was meant is unknowable (401 M_MISSING_TOKEN, thrown only
 * by routes that read a token).
 */
function bearerToken(req: FastifyRequest): string | HearthError | undefined {
  const header = req.headers.authorization;
  const q = (req.query as Record<string, unknown>)['access_token'];
  if (header !== undefined && q !== undefined) {
    return new HearthError(401, 'M_MISSING_TOKEN', 'Mixing Authorization headers and access_token query parameters');
  }
  if (typeof header === 'string' && header.startsWith('Bearer ')) return header.slice(7).trim();
  return typeof q === 'string' ? q : undefined;
}

/** A request as routes see it. */
class IncomingRequest implements HttpRequest {
  readonly method: HttpMethod;
  readonly params: Record<string, string>;
  readonly query: Record<string, string | string[] | undefined>;
  body: unknown = undefined;
  readonly headers: FastifyRequest['headers'];
  readonly accessToken: string | undefined;
  /** Why the token could not be read (set instead of `accessToken`). */
  readonly accessTokenError: HearthError | undefined;
  readonly remoteAddress: string;
  requester?: Requester;
  readonly #reply: FastifyReply;

  constructor(route: RouteDef, req: FastifyRequest, reply: FastifyReply) {
    this.#reply = reply;
    this.method = route.method;
    this.params = req.params as Record<string, string>;
    this.query = req.query as Record<string, string | string[] | undefined>;
    this.headers = req.headers;
    const token = bearerToken(req);
    this.accessToken = token instanceof HearthError ? undefined : token;
    this.accessTokenError = token instanceof HearthError ? token : undefined;
    this.remoteAddress = req.ip;
  }

  onClientGone(listener: () => void): () => void {
    const raw = this.#reply.raw;
    // The response closes without finishing when the connection goes before the reply is written.
    if (raw.closed) {
      if (!raw.writableFinished) listener();
      return () => {};
    }
    const onClose = () => {
      if (!raw.writableFinished) listener();
    };
    raw.once('close', onClose);
    return () => void raw.off('close', onClose);
  }
}

/** The body as the route reads it; parsed only after the caller is authorized. */
function readBody(route: RouteDef, req: FastifyRequest): unknown {
  const mode = route.body ?? (route.method === 'GET' || route.method === 'DELETE' ? 'none' : 'json');
  if (mode === 'json') return parseJsonObjectBody(req.body, { allowNulInStrings: route.allowNulInBodyStrings ?? false });
  return mode === 'raw' ? req.body : undefined;
}

function sendError(reply: FastifyReply, err: unknown, log: FastifyInstance['log']): void {
  const { status, body } = errorReply(err);
  if (status >= 500) log.error({ err }, 'request failed');
  void reply.code(status).headers(CORS_HEADERS).send(body);
}

export function buildHttpApp(routes: readonly RouteDef[], options: HttpAppOptions = {}): FastifyInstance {
  const jsonBodyLimit = options.jsonBodyLimit ?? DEFAULT_JSON_BODY_LIMIT;
  const app = Fastify({
    logger: options.logger ?? false,
    // Each request is logged at debug, not info: a line per request costs as much as a send.
    logController: new RequestLogController(),
    childLoggerFactory,
    bodyLimit: jsonBodyLimit,
    // Matrix paths carry ids with ':' and '!' and may end with an empty state key.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 2048 },
    // Errors the router meets before any hook runs (a malformed percent-encoding, an overlong
    // parameter) get the spec's error shape and CORS headers too.
    frameworkErrors: (err, _req, reply) => sendError(reply, err, reply.log),
    // Requests the HTTP parser rejects (when Fastify's own server listens, as in tests).
    clientErrorHandler: answerClientError,
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (req, reply, done) => {
    void reply.headers(CORS_HEADERS);
    if (req.method === 'OPTIONS') {
      void reply.code(200).send({});
      return;
    }
    done();
  });

  const methodsByPath = new Map<string, Set<HttpMethod>>();
  for (const route of routes) {
    for (const url of mountPaths(route)) {
      let methods = methodsByPath.get(url);
      if (!methods) methodsByPath.set(url, (methods = new Set()));
      methods.add(route.method);
      app.route({
        method: route.method,
        url,
        bodyLimit: route.bodyLimit ?? jsonBodyLimit,
        handler: async (req, reply) => {
          const request = new IncomingRequest(route, req, reply);
          const requester = await authorize(route, request, options.authenticate);
          if (options.rateLimiter !== undefined && isRateLimited(route)) {
            checkRateLimit(options.rateLimiter, request, requester);
          }
          refuseNulInParameters(request.params, request.query);
          request.body = readBody(route, req);
          if (requester !== undefined) request.requester = requester;
          const res = await route.handler(request);
          if (res.headers) void reply.headers(res.headers);
          return reply.code(res.status ?? 200).send(res.body);
        },
      });
    }
  }

  // A known path asked with a method it does not serve: 405, not 404, with the methods it does
  // serve in Allow (RFC 9110 requires it on a 405).
  for (const [url, methods] of methodsByPath) {
    const others: string[] = METHODS.filter((m) => !methods.has(m) && !(m === 'GET' && methods.has('GET')));
    // HEAD is answered wherever GET is; PATCH is served nowhere.
    if (!methods.has('GET')) others.push('HEAD');
    others.push('PATCH');
    const served: string[] = METHODS.filter((m) => methods.has(m));
    if (methods.has('GET')) served.splice(1, 0, 'HEAD');
    // OPTIONS (the CORS preflight) is answered on every path.
    served.push('OPTIONS');
    const allow = served.join(', ');
    app.route({
      method: others,
      url,
      handler: async (_req, reply) =>
        reply.code(405).header('allow', allow).send({ errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' }),
    });
  }

  app.setNotFoundHandler(async (_req, reply) =>
    reply.code(404).send({ errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' }),
  );
  app.setErrorHandler((err, _req, reply) => sendError(reply, err, app.log));
  return app;
}
