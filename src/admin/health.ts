// GET /health: 200 "OK" while the database answers a trivial query, 503 when it fails or does not
// answer in time. Load balancers and orchestrators poll it, so it needs no token.

import { type Kysely, sql } from 'kysely';
import type { RouteDef } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';

/** Resolves when the dependency answers; rejects otherwise. */
export type HealthProbe = () => Promise<void>;

/** A probe that asks the database for `SELECT 1`. */
export function databaseProbe(db: Kysely<unknown>): HealthProbe {
  return async () => {
    await sql`SELECT 1`.execute(db);
  };
}

const DEFAULT_TIMEOUT_MS = 5000;

async function withTimeout(probe: HealthProbe, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([probe().then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(deps: { probe: HealthProbe; timeoutMs?: number }): RouteDef[] {
  const timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return [
    {
      method: 'GET',
      api: 'root',
      path: '/health',
      auth: 'none',
      handler: async () => {
        if (!(await withTimeout(deps.probe, timeoutMs))) {
          throw new HearthError(503, 'M_UNKNOWN', 'Database unavailable');
        }
        return { body: 'OK', headers: { 'content-type': 'text/plain; charset=utf-8' } };
      },
    },
  ];
}
