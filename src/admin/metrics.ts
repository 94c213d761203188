// GET /metrics: the server's metrics in Prometheus text format, mounted only when
// `global.metrics.enabled`. With basic-auth credentials configured, a scrape without them gets 401.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { HttpRequest, HttpResponse, RouteDef } from '../http/route.js';

export interface MetricsRouteDeps {
  /** The exposition: its content type and text. */
  readonly render: () => Promise<{ contentType: string; body: string }>;
  /** Both set: the credentials a scrape must send. */
  readonly basicAuth?: { readonly username: string; readonly password: string };
}

const REALM = 'Basic realm="metrics"';

/** Digests of equal length, so comparing them takes the same time wherever they differ. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function authorized(req: HttpRequest, expected: Buffer): boolean {
  const header = req.headers.authorization;
  if (typeof header !== 'string' || !/^basic /i.test(header)) return false;
  const sent = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  return timingSafeEqual(digest(sent), expected);
}

export function metricsRoutes(deps: MetricsRouteDeps): RouteDef[] {
  const expected = deps.basicAuth === undefined ? undefined : digest(`${deps.basicAuth.username}:${deps.basicAuth.password}`);
  return [
    {
      method: 'GET',
      api: 'root',
      path: '/metrics',
      auth: 'none',
      handler: async (req): Promise<HttpResponse> => {
        if (expected !== undefined && !authorized(req, expected)) {
          return { status: 401, body: { errcode: 'M_UNAUTHORIZED', error: 'Metrics need credentials' }, headers: { 'www-authenticate': REALM } };
        }
        const { contentType, body } = await deps.render();
        return { body, headers: { 'content-type': contentType } };
      },
    },
  ];
}
