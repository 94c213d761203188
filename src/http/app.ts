// The HTTP application: mounts route definitions under every prefix they answer, reads bodies,
// applies rate limits, adds CORS headers, and gives every failure the spec's error shape.

import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { parseJsonObjectBody } from './body.js';
import { ClientAddresses } from './client-address.js';
import { answerClientError } from './client-error.js';
import { CORS_HEADERS } from './cors.js';
import { type Charge, RateLimitError, type RateLimiter } from './rate-limit.js';
import { errorReply } from './errors.js';
import { askedUnderR0, canonicalUrl, CLIENT_V3_ROOT, routerPaths } from './prefixes.js';
import { allowRequestNotes, childLoggerFactory, notesOf, noteUser, RequestLogController } from './request-log.js';
import { refuseNulInParameters } from './nul.js';
import { HearthError } from '../protocol/errors.js';
import { encodeJson } from '../protocol/json-text.js';
import type { Authenticator, HttpMethod, HttpRequest, Requester, RouteAuth, RouteDef, ServerAuthenticator } from './route.js';

export interface HttpAppOptions {
  /** Largest JSON body accepted by default, in bytes. */
  jsonBodyLimit?: number;
  /** Fastify's logger option: false in tests, a pino config or instance in production. */
  logger?: boolean | object;
  /** Resolves access tokens; without one, every route that needs a token answers M_UNKNOWN_TOKEN. */
  authenticate?: Authenticator;
  /** Checks other servers' request signatures; without one, every 'server' route answers 401. */
  authenticateServer?: ServerAuthenticator;
  /** Applies the limits routes name (`RouteDef.rateLimit`); none: no limit. */
  rateLimiter?: RateLimiter;
  /**
   * Addresses and CIDR ranges of reverse proxies whose X-Forwarded-For names the client; none:
   * the header is ignored and the client is the peer.
   */
  trustedProxies?: readonly string[];
  /**
   * Told of every reply once sent: the route answering (undefined when none matched), the method,
   * the status and the seconds since the request arrived. None: no hook runs.
   */
  observe?: (route: Pick<RouteDef, 'api' | 'path'> | undefined, method: string, status: number, seconds: number) => void;
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
  if (mode === 'none' || mode === 'server') return undefined;
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

/** The origin of a request signed by another server; 401 M_UNAUTHORIZED when it is not. */
async function authorizeServer(
  route: RouteDef,
  req: FastifyRequest,
  content: unknown,
  authenticate: ServerAuthenticator | undefined,
): Promise<string> {
  // A server may send one header per signing key; Node keeps only the first in `headers`.
  const authorization: string[] = [];
  const raw = req.raw.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'authorization') authorization.push(raw[i + 1]!);
  if (authorization.length === 0) throw new HearthError(401, 'M_UNAUTHORIZED', 'Missing X-Chat or X-Matrix authorization');
  if (authenticate === undefined) throw new HearthError(401, 'M_UNAUTHORIZED', 'This server does not accept requests from other servers');
  // The URI as the other server sent and signed it, not as rewritten for the router.
  return authenticate({ method: route.method, uri: req.originalUrl, authorization, content });
}

const METHODS: readonly HttpMethod[] = ['GET', 'PUT', 'POST', 'DELETE'];

/** The Allow header of a path serving `methods`: HEAD wherever GET is, OPTIONS (the CORS preflight) everywhere. */
function allowHeader(methods: ReadonlySet<HttpMethod>): string {
  const served: string[] = METHODS.filter((m) => methods.has(m));
  if (methods.has('GET')) served.splice(1, 0, 'HEAD');
  served.push('OPTIONS');
  return served.join(', ');
}

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
  origin?: string;
  readonly #reply: FastifyReply;

  constructor(route: RouteDef, req: FastifyRequest, reply: FastifyReply, addresses: ClientAddresses) {
    this.#reply = reply;
    this.method = route.method;
    this.params = req.params as Record<string, string>;
    this.query = req.query as Record<string, string | string[] | undefined>;
    this.headers = req.headers;
    const token = bearerToken(req);
    this.accessToken = token instanceof HearthError ? undefined : token;
    this.accessTokenError = token instanceof HearthError ? token : undefined;
    this.remoteAddress = addresses.resolve(req.raw.socket?.remoteAddress, req.headers['x-forwarded-for']);
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
  // A request without a body (no Content-Length, no chunks) is not parsed: its stream is empty.
  if (mode === 'stream') return req.body ?? req.raw;
  return mode === 'raw' ? req.body : undefined;
}

const JSON_TYPE = 'application/json';

/**
 * A JSON reply, typed `application/json` exactly: Fastify would add `; charset=utf-8` to a JSON
 * type however it is given, except on bytes (JSON is UTF-8 by definition, RFC 8259). Served events
 * write most of their own bytes from a cache (protocol/json-text.ts).
 */
function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).header('content-type', JSON_TYPE).send(encodeJson(body) ?? Buffer.from('null'));
}

/** Whether a handler's body is sent as it is (bytes, text, a stream) rather than as JSON. */
function isRawBody(body: unknown): boolean {
  return body === undefined || typeof body === 'string' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown } | null)?.pipe === 'function';
}

/** Records an error reply's errcode and message for the request's log line. */
function noteError(req: FastifyRequest, body: unknown, err?: unknown): void {
  const notes = notesOf(req);
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof fields['errcode'] === 'string') notes.errcode = fields['errcode'];
  if (typeof fields['error'] === 'string') notes.error = fields['error'];
  if (err instanceof RateLimitError) notes.limit = err.limit;
  if (err !== undefined && !(err instanceof HearthError)) notes.err = err;
}

function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown): void {
  const { status, body } = errorReply(err);
  noteError(req, body, err);
  // Clients may wait this long before retrying (RFC 9110 Retry-After, in whole seconds).
  const retryAfterMs = body['retry_after_ms'];
  if (typeof retryAfterMs === 'number') void reply.header('retry-after', String(Math.ceil(retryAfterMs / 1000)));
  void sendJson(reply.headers(CORS_HEADERS), status, body);
}

const UNRECOGNIZED = { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' } as const;
const NO_HOST = { errcode: 'M_UNKNOWN', error: 'Missing Host header' } as const;

export function buildHttpApp(routes: readonly RouteDef[], options: HttpAppOptions = {}): FastifyInstance {
  const jsonBodyLimit = options.jsonBodyLimit ?? DEFAULT_JSON_BODY_LIMIT;
  const addresses = new ClientAddresses(options.trustedProxies);
  const limiter = options.rateLimiter;
  const app = Fastify({
    logger: options.logger ?? false,
    // Failures are logged at info and error, successes at debug: a line per request costs as much as a send.
    logController: new RequestLogController(addresses),
    childLoggerFactory,
    bodyLimit: jsonBodyLimit,
    // Matrix paths carry ids with ':' and '!' and may end with an empty state key.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 2048 },
    // Routes are mounted under the spec's names; `/_matrix/...` and the like are routed as those.
    rewriteUrl: (req) => canonicalUrl(req.url ?? '/'),
    // Errors the router meets before any hook runs (a malformed percent-encoding, an overlong
    // parameter) get the spec's error shape and CORS headers too.
    frameworkErrors: (err, req, reply) => sendError(req, reply, err),
    // Requests the HTTP parser rejects (when Fastify's own server listens, as in tests).
    clientErrorHandler(err, socket) {
      answerClientError(err, socket, (this as FastifyInstance).log);
    },
  });
  allowRequestNotes(app);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (req, reply, done) => {
    void reply.headers(CORS_HEADERS);
    // HTTP/1.1 requires Host (RFC 9112 3.2); Node's own check would answer an empty 400.
    if (req.headers.host === undefined && req.raw.httpVersionMajor === 1 && req.raw.httpVersionMinor === 1) {
      noteError(req, NO_HOST);
      void sendJson(reply.header('connection', 'close'), 400, NO_HOST);
      return;
    }
    if (req.method === 'OPTIONS') {
      void sendJson(reply, 200, {});
      return;
    }
    done();
  });

  const methodsByPath = new Map<string, Set<HttpMethod>>();
  /** Under a client v3 URL: the methods whose routes list r0 too, so answer r0 requests (rewritten to v3). */
  const r0MethodsByPath = new Map<string, Set<HttpMethod>>();
  /** An r0 request that reached a v3 URL no route of its method lists r0 for: what the router would have said of the r0 URL. */
  const refuseUnderR0 = (req: FastifyRequest, reply: FastifyReply, url: string) => {
    noteError(req, UNRECOGNIZED);
    const methods = r0MethodsByPath.get(url);
    if (methods === undefined || methods.size === 0) return sendJson(reply, 404, UNRECOGNIZED);
    return sendJson(reply.header('allow', allowHeader(methods)), 405, UNRECOGNIZED);
  };
  /** The route each mounted URL belongs to, for `observe`; the first mounted wins (methods share a path). */
  const routeByUrl = new Map<string, RouteDef>();
  // Routes that read their body as a stream live in a context of their own, whose parser hands
  // the request stream over unread.
  const streamed: (() => void)[] = [];
  let streamContext: FastifyInstance | undefined;
  app.register(async (child) => {
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    streamContext = child;
    for (const mount of streamed) mount();
  });
  for (const route of routes) {
    const fromServer = routeAuth(route) === 'server';
    const streaming = route.body === 'stream';
    for (const url of routerPaths(route)) {
      let methods = methodsByPath.get(url);
      if (!methods) methodsByPath.set(url, (methods = new Set()));
      if (!routeByUrl.has(url)) routeByUrl.set(url, route);
      methods.add(route.method);
      const underV3 = url.startsWith(CLIENT_V3_ROOT);
      const refusesR0 = underV3 && route.versions?.includes('r0') !== true;
      if (underV3) {
        let r0 = r0MethodsByPath.get(url);
        if (!r0) r0MethodsByPath.set(url, (r0 = new Set()));
        if (!refusesR0) r0.add(route.method);
      }
      const handler = async (req: FastifyRequest, reply: FastifyReply) => {
        if (refusesR0 && askedUnderR0(req.originalUrl)) return refuseUnderR0(req, reply, url);
        const request = new IncomingRequest(route, req, reply, addresses);
        if (fromServer) {
          request.body = readBody(route, req);
          request.origin = await authorizeServer(route, req, request.body, options.authenticateServer);
          noteUser(req, request.origin);
        }
        const requester = await authorize(route, request, options.authenticate);
        if (requester !== undefined) {
          noteUser(req, requester.userId);
          request.requester = requester;
        }
        refuseNulInParameters(request.params, request.query);
        if (!fromServer) request.body = readBody(route, req);
        let charges: readonly Charge[] | undefined;
        if (limiter !== undefined && route.rateLimit !== undefined) {
          charges = limiter.charge(route.rateLimit, { requester, address: request.remoteAddress, body: request.body });
        }
        let status = 500;
        try {
          const res = await route.handler(request);
          status = res.status ?? 200;
          if (res.headers) void reply.headers(res.headers);
          if (status >= 400) noteError(req, res.body);
          if (isRawBody(res.body) || (res.headers !== undefined && 'content-type' in res.headers)) {
            return reply.code(status).send(res.body);
          }
          return sendJson(reply, status, res.body);
        } catch (err) {
          status = errorReply(err).status;
          throw err;
        } finally {
          if (charges !== undefined) limiter!.settle(charges, status);
        }
      };
      const streamingHandler = async (req: FastifyRequest, reply: FastifyReply) => {
        try {
          return await handler(req, reply);
        } catch (err) {
          // A body left unread is not read to its end (a refused upload may be large): the connection goes.
          if (!req.raw.readableEnded) void reply.header('connection', 'close');
          throw err;
        }
      };
      const mount = (target: FastifyInstance) =>
        target.route({ method: route.method, url, bodyLimit: route.bodyLimit ?? jsonBodyLimit, handler: streaming ? streamingHandler : handler });
      if (streaming) streamed.push(() => mount(streamContext!));
      else mount(app);
    }
  }

  // A known path asked with a method it does not serve: 405, not 404, with the methods it does
  // serve in Allow (RFC 9110 requires it on a 405).
  for (const [url, methods] of methodsByPath) {
    const others: string[] = METHODS.filter((m) => !methods.has(m) && !(m === 'GET' && methods.has('GET')));
    // HEAD is answered wherever GET is; PATCH is served nowhere.
    if (!methods.has('GET')) others.push('HEAD');
    others.push('PATCH');
    const allow = allowHeader(methods);
    const underV3 = r0MethodsByPath.has(url);
    app.route({
      method: others,
      url,
      handler: async (req, reply) => {
        if (underV3 && askedUnderR0(req.originalUrl)) return refuseUnderR0(req, reply, url);
        noteError(req, UNRECOGNIZED);
        return sendJson(reply.header('allow', allow), 405, UNRECOGNIZED);
      },
    });
  }

  const observe = options.observe;
  if (observe !== undefined) {
    // A callback hook, run after the reply is on its way: it adds nothing to the request's latency.
    app.addHook('onResponse', (req, reply, done) => {
      const url = req.routeOptions.url;
      observe(url === undefined ? undefined : routeByUrl.get(url), req.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }

  app.setNotFoundHandler(async (req, reply) => {
    noteError(req, UNRECOGNIZED);
    return sendJson(reply, 404, UNRECOGNIZED);
  });
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err));
  return app;
}
