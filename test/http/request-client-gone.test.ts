// HttpRequest.signal: aborted when the client closes the connection before the reply is sent,
// and never for a request that got its reply.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import type { HttpRequest, RouteDef } from '../../src/http/route.js';

const seen: { aborted: boolean; signal: AbortSignal | undefined }[] = [];

/** Waits until the request's signal aborts (or 5 s pass), then replies with what it saw. */
function waitForAbort(req: HttpRequest): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), 5000);
    req.signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

const routes: RouteDef[] = [
  {
    method: 'GET',
    api: 'client',
    auth: 'none',
    versions: ['v3'],
    path: '/hang',
    handler: async (req) => {
      const entry = { aborted: false, signal: req.signal };
      seen.push(entry);
      entry.aborted = await waitForAbort(req);
      return { body: { aborted: entry.aborted } };
    },
  },
  {
    method: 'GET',
    api: 'client',
    auth: 'none',
    versions: ['v3'],
    path: '/quick',
    handler: (req) => {
      seen.push({ aborted: false, signal: req.signal });
      return { body: {} };
    },
  },
];

const app = buildHttpApp(routes);
let base: string;
before(async () => {
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await app.close();
});

test('a request that got its reply is not aborted', async () => {
  seen.length = 0;
  const res = await fetch(`${base}/_matrix/client/v3/quick`);
  assert.equal(res.status, 200);
  await res.json();
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(seen[0]!.signal instanceof AbortSignal);
  assert.equal(seen[0]!.signal.aborted, false);
});

test('a client that goes away aborts the request signal', async () => {
  seen.length = 0;
  const controller = new AbortController();
  const res = fetch(`${base}/_matrix/client/v3/hang`, { signal: controller.signal }).catch((err: unknown) => err);
  while (seen.length === 0) await new Promise((r) => setTimeout(r, 2));
  assert.equal(seen[0]!.signal?.aborted, false);
  controller.abort();
  assert.ok((await res) instanceof Error);
  const deadline = Date.now() + 2000;
  while (!seen[0]!.aborted) {
    assert.ok(Date.now() < deadline, 'the handler never saw the abort');
    await new Promise((r) => setTimeout(r, 2));
  }
});
