// Account set-up for the benchmarks that speak HTTP to a server: registration and a checked call.

import type { Call, Reply } from './http-clients.js';

/** The body of a 200 reply; anything else throws, naming `what`. */
export async function ok(call: Promise<Reply>, what: string): Promise<Record<string, unknown>> {
  const r = await call;
  if (r.status !== 200) throw new Error(`${what}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export interface Sender {
  readonly userId: string;
  readonly token: string;
}

/** Registers `username` through the dummy auth flow (the benchmarks' servers have registration open). */
export async function register(call: Call, username: string): Promise<Sender> {
  const body = { username, password: 'bench-password', auth: { type: 'm.login.dummy' } };
  let r = await call('POST', '/_matrix/client/v3/register', undefined, body);
  if (r.status === 401 && typeof r.body['session'] === 'string') {
    r = await call('POST', '/_matrix/client/v3/register', undefined, { ...body, auth: { type: 'm.login.dummy', session: r.body['session'] } });
  }
  if (r.status !== 200) throw new Error(`register ${username}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return { userId: r.body['user_id'] as string, token: r.body['access_token'] as string };
}
