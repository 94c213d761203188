// An HTTP app serving the account routes over a real socket, and a small client for it.

import type { AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import { accountRoutes } from '../../src/client/account/index.js';
import type { AccountService } from '../../src/users/accounts.js';

/** Replies are read as untyped JSON: the tests assert on their shape. */
export interface Reply {
  readonly status: number;
  readonly body: Record<string, any>;
}

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
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    async call(method, path, options = {}) {
      const headers: Record<string, string> = {};
      if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const url = path.startsWith('/_') ? base + path : `${base}${options.prefix ?? '/_chat/client/v3'}${path}`;
      const res = await fetch(url, {
        method,
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    },
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
