// The HTTP application: mounts route definitions under every prefix they answer, reads bodies,
// adds CORS headers, and gives every failure the spec's error shape.

import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { parseJsonObjectBody } from './body.js';
import { errorReply } from './errors.js';
import { mountPaths } from './prefixes.js';
import type { HttpMethod, HttpRequest, RouteDef } from './route.js';

export interface HttpAppOptions {
  /** Largest JSON body accepted by default, in bytes. */
  jsonBodyLimit?: number;
  /** Fastify's logger option: false in tests, a pino config or instance in production. */
  logger?: boolean | object;
}

const METHODS: readonly HttpMethod[] = ['GET', 'PUT', 'POST', 'DELETE'];
const DEFAULT_JSON_BODY_LIMIT = 1024 * 1024;

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, HEAD, POST, PUT, DELETE, OPTIONS',
  'access-control-allow-headers': 'X-Requested-With, Content-Type, Authorization, Date',
} as const;

function bearerToken(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  if (typeof header === 'string' && header.startsWith('Bearer ')) return header.slice(7).trim();
  const q = (req.query as Record<string, unknown>)['access_token'];
  return typeof q === 'string' ? q : undefined;
}

function toHttpRequest(route: RouteDef, req: FastifyRequest): HttpRequest {
  const mode = route.body ?? (route.method === 'GET' || route.method === 'DELETE' ? 'none' : 'json');
  return {
    method: route.method,
    params: req.params as Record<string, string>,
    query: req.query as Record<string, string | string[] | undefined>,
    body: mode === 'json' ? parseJsonObjectBody(req.body) : mode === 'raw' ? req.body : undefined,
    headers: req.headers,
    accessToken: bearerToken(req),
    remoteAddress: req.ip,
  };
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
    bodyLimit: jsonBodyLimit,
    // Matrix paths carry ids with ':' and '!' and may end with an empty state key.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 2048 },
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', async (req, reply) => {
    void reply.headers(CORS_HEADERS);
    if (req.method === 'OPTIONS') return reply.code(200).send({});
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
          const res = await route.handler(toHttpRequest(route, req));
          if (res.headers) void reply.headers(res.headers);
          return reply.code(res.status ?? 200).send(res.body);
        },
      });
    }
  }

  // A known path asked with a method it does not serve: 405, not 404.
  for (const [url, methods] of methodsByPath) {
    const others = METHODS.filter((m) => !methods.has(m) && !(m === 'GET' && methods.has('GET')));
    if (others.length === 0) continue;
    app.route({
      method: others,
      url,
      handler: async (_req, reply) =>
        reply.code(405).send({ errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' }),
    });
  }

  app.setNotFoundHandler(async (_req, reply) =>
    reply.code(404).send({ errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' }),
  );
  app.setErrorHandler((err, _req, reply) => sendError(reply, err, app.log));
  return app;
}
