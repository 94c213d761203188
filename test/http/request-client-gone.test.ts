// HttpRequest.onClientGone: the listener runs when the client closes the connection before the
// reply is sent, never for a request that got its reply, and not after it was removed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import type { HttpRequest, RouteDef } from '../../src/http/route.js';

interface Seen {
  gone: boolean;
  removedGone: boolean;
  /** Whether a listener added after the client went ran at once. */
  lateRanAtOnce?: boolean;
  req: HttpRequest;
}
const seen: Seen[] = [];

/** Waits until the client goes (or 5 s pass); a second listener, removed at once, must stay silent. */
function waitForClientGone(entry: Seen): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), 5000);
    const remove = entry.req.onClientGone!(() => void (entry.removedGone = true));
    remove();
    entry.req.onClientGone!(() => {
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
      const entry: Seen = { gone: false, removedGone: false, req };
      seen.push(entry);
      const gone = await waitForClientGone(entry);
      if (gone) {
        let late = false;
        req.onClientGone!(() => void (late = true));
        entry.lateRanAtOnce = late;
      }
      entry.gone = gone;
      return { body: { gone } };
    },
  },
  {
    method: 'GET',
    api: 'client',
    auth: 'none',
    versions: ['v3'],
    path: '/quick',
    handler: (req) => {
      const entry: Seen = { gone: false, removedGone: false, req };
      seen.push(entry);
      req.onClientGone!(() => void (entry.gone = true));
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

test('a request that got its reply never hears of the client going', async () => {
  seen.length = 0;
  const res = await fetch(`${base}/_matrix/client/v3/quick`);
  assert.equal(res.status, 200);
  await res.json();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.gone, false);
});

test('a client that goes away calls the listener, and not one that was removed', async () => {
  seen.length = 0;
  const controller = new AbortController();
  const res = fetch(`${base}/_matrix/client/v3/hang`, { signal: controller.signal }).catch((err: unknown) => err);
  while (seen.length === 0) await new Promise((r) => setTimeout(r, 2));
  assert.equal(seen[0]!.gone, false);
  controller.abort();
  assert.ok((await res) instanceof Error);
  const deadline = Date.now() + 2000;
  while (!seen[0]!.gone) {
    assert.ok(Date.now() < deadline, 'the handler never heard the client go');
    await new Promise((r) => setTimeout(r, 2));
  }
  assert.equal(seen[0]!.removedGone, false);
  assert.equal(seen[0]!.lateRanAtOnce, true, 'a listener added after the client went runs at once');
});
