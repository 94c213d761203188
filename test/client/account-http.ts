// An HTTP app serving the account routes over a real socket, called through the shared HttpClient.

import type { AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import { accountRoutes } from '../../src/client/account/index.js';
import type { AccountService } from '../../src/users/accounts.js';
import { HttpClient, type HttpReply } from '../support/http-client.js';

export type Reply = HttpReply;

export interface CallOptions {
  readonly token?: string;
  readonly body?: unknown;
  readonly prefix?: string;
}

export interface AccountServer {
  call(method: string, path: string, options?: CallOptions): Promise<Reply>;
  close(): Promise<void>;
}

export async function startAccountServer(accounts: AccountService): Promise<AccountServer> {
  const app = buildHttpApp(accountRoutes({ accounts }), { authenticate: accounts.authenticate });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const http = new HttpClient(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, { prefix: '/_chat/client/v3' });
  return {
    call: (method, path, options = {}) =>
      http.request(method, path, options.body, { token: options.token, prefix: options.prefix }),
    close: () => app.close(),
  };
}

/** Registers through the open-registration dummy flow; returns the 200 reply's body. */
export async function registerWithDummy(server: AccountServer, body: Record<string, unknown>): Promise<Record<string, any>> {
  const first = await server.call('POST', '/register', { body });
  if (first.status !== 401) throw new Error(`expected 401, got ${first.status} ${JSON.stringify(first.body)}`);
  const done = await server.call('POST', '/register', { body: { ...body, auth: { type: 'm.login.dummy', session: first.body['session'] } } });
  if (done.status !== 200) throw new Error(`expected 200, got ${done.status} ${JSON.stringify(done.body)}`);
  return done.body;
}
