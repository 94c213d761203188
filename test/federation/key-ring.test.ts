// The federation key ring over real HTTP, on SQLite and PostgreSQL: keys fetched from a real
// Hearth server (`/_chat/key/v2/server`) and from a notary (our notary routes on a real listener),
// stored and reused, refetched when stale, forged answers refused, and the order of sources.
// Every remote is reached through one small HTTP front that counts the requests each name gets
// and can stand for servers that answer crafted (forged) key responses.

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeBase64 } from '../../src/protocol/base64.js';
import { checkEventSignatures } from '../../src/protocol/event-signatures.js';
import { hashAndSignEvent, type PduDraft } from '../../src/protocol/hashes.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { generateSigningKey, signJson, verifyJsonSignature, type SigningKey } from '../../src/protocol/signing.js';
import { buildHttpApp } from '../../src/http/app.js';
import { FederationKeyRing, MAX_KEY_VALIDITY_MS, type FetchJson, type KeyPerspective } from '../../src/federation/key-ring.js';
import { notaryRoutes } from '../../src/federation/notary.js';
import { lookupIn, type KeyRequest } from '../../src/rooms/input/key-ring.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { selectServerKeys } from '../../src/storage/federation/server-keys.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { createSqliteDatabase, storageBackends, type TestDatabase } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
const ORIGIN = 'origin.test';
const NOTARY = 'notary.test';

// ---- the counting front: `http://127.0.0.1:<port>/<server name>/_chat/...` -------------------

interface Reply {
  status: number;
  json: unknown;
}
type Handler = (req: { method: string; path: string; body: unknown }) => Promise<Reply> | Reply;

const handlers = new Map<string, Handler>();
const hits = new Map<string, number>();
let front: Server;
let frontUrl = '';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A fetchJson over plain fetch: each server name to `base(name)`, paths under `/_chat`. */
function httpFetchJson(base: (serverName: string) => string | undefined): FetchJson {
  return async (serverName, request) => {
    const url = base(serverName);
    if (url === undefined) throw new Error(`no route to ${serverName}`);
    const res = await fetch(`${url}/_chat${request.path}`, {
      method: request.method,
      ...(request.body !== undefined ? { body: JSON.stringify(request.body), headers: { 'content-type': 'application/json' } } : {}),
    });
    if (!res.ok) throw new Error(`${serverName} answered ${res.status}`);
    return res.json();
  };
}

/** Forwards to a real server. */
const forwardTo = (baseUrl: string): Handler => async ({ method, path, body }) => {
  const res = await fetch(`${baseUrl}/_chat${path}`, {
    method,
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  return { status: res.status, json: await res.json() };
};

/** A server of our own making: its key, and key responses signed (or not) as a test likes. */
class CraftedServer {
  readonly key: SigningKey = generateSigningKey();
  constructor(readonly name: string) {}
  get publicKey(): string {
    return encodeBase64(this.key.publicKey);
  }
  /** A correctly self-signed response valid until `validUntilTs`, with `extra` merged in before signing. */
  response(validUntilTs: number, extra: JsonObject = {}, signer: SigningKey = this.key): JsonObject {
    const doc: JsonObject = {
      server_name: this.name,
      verify_keys: { [this.key.keyId]: { key: this.publicKey } },
      old_verify_keys: {},
      valid_until_ts: validUntilTs,
      ...extra,
    };
    return signJson(doc, this.name, signer);
  }
  serve(handler: Handler): this {
    handlers.set(this.name, handler);
    return this;
  }
}

let origin: TestServer;
let originKey: SigningKey;
let notaryDb: TestDatabase;
let notaryDatabase: Database<Schema>;
let notaryApp: ReturnType<typeof buildHttpApp>;
const notaryKey = generateSigningKey();
const perspective: KeyPerspective = {
  server_name: NOTARY,
  keys: [{ key_id: notaryKey.keyId, public_key: encodeBase64(notaryKey.publicKey) }],
};

before(async () => {
  front = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://front');
      const [, name = '', ...rest] = url.pathname.split('/');
      hits.set(name, (hits.get(name) ?? 0) + 1);
      const text = await readBody(req);
      const handler = handlers.get(name);
      const path = '/' + rest.join('/').replace(/^_chat\//, '') + url.search;
      const reply = handler === undefined ? { status: 404, json: {} } : await handler({ method: req.method ?? 'GET', path, body: text === '' ? undefined : JSON.parse(text) });
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.json));
    })().catch(() => res.writeHead(502).end('{}'));
  });
  frontUrl = await listen(front);

  origin = await startTestServer({ serverName: ORIGIN });
  originKey = origin.server.core.signingKey;
  handlers.set(ORIGIN, forwardTo(origin.baseUrl));

  // The notary: our notary routes on a listener of their own, with a key ring that reaches the
  // origin directly (its requests are not counted as ours).
  notaryDb = await createSqliteDatabase();
  notaryDatabase = openDatabase<Schema>({ connectionString: notaryDb.connectionString });
  await migrateToLatest(notaryDatabase.db as never, notaryDatabase.dialect);
  const notaryRing = new FederationKeyRing({
    db: notaryDatabase.db,
    serverName: NOTARY,
    signingKey: notaryKey,
    perspectives: [],
    preferDirectFetch: true,
    fetchJson: httpFetchJson((name) => (name === ORIGIN ? origin.baseUrl : `${frontUrl}/${name}`)),
  });
  notaryApp = buildHttpApp(notaryRoutes({ keyRing: notaryRing, serverName: NOTARY, signingKey: notaryKey }));
  const notaryUrl = await notaryApp.listen({ host: '127.0.0.1', port: 0 });
  handlers.set(NOTARY, forwardTo(notaryUrl));
});

after(async () => {
  await notaryApp?.close();
  await notaryDatabase?.close();
  await notaryDb?.drop();
  await origin?.close();
  await new Promise((resolve) => front?.close(resolve));
});

const hitsOf = (name: string) => hits.get(name) ?? 0;

for (const backend of await storageBackends()) {
  describe(`federation key ring on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let clock = Date.now();
    const ourKey = generateSigningKey();
    let names = 0;
    /** A server name no other test uses (storage and fetch times are per server). */
    const fresh = (what: string) => `${what}-${backend.name}-${++names}.test`;

    const ring = (options: { perspectives?: KeyPerspective[]; preferDirectFetch?: boolean } = {}) =>
      new FederationKeyRing({
        db: database.db,
        serverName: 'hs.test',
        signingKey: ourKey,
        perspectives: options.perspectives ?? [],
        preferDirectFetch: options.preferDirectFetch ?? false,
        fetchJson: httpFetchJson((name) => `${frontUrl}/${name}`),
        now: () => clock,
      });
    const ask = (r: FederationKeyRing, serverName: string, keyId: string, validAt = clock) =>
      r.verifyKeys([{ serverName, keyId, validAt } satisfies KeyRequest]).then((found) => found.get(serverName)?.get(keyId));

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 });
      await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('fetched directly from a real server, stored, then served from storage', async () => {
      clock = Date.now();
      const before = hitsOf(ORIGIN);
      const key = await ask(ring(), ORIGIN, originKey.keyId);
      assert.equal(key?.publicKey, encodeBase64(originKey.publicKey));
      assert.equal(hitsOf(ORIGIN), before + 1);
      // Hearth publishes its key for global.key_validity_period (7 days by default).
      assert.ok(key!.validUntilTs > clock + 6 * DAY && key!.validUntilTs <= clock + MAX_KEY_VALIDITY_MS, String(key!.validUntilTs));

      const [row] = await selectServerKeys(database.db, [ORIGIN]);
      const stored = JSON.parse(row!.keyJson) as JsonObject;
      assert.equal(stored.server_name, ORIGIN);
      assert.ok(verifyJsonSignature(stored, ORIGIN, originKey.keyId, originKey.publicKey), 'stored with the origin signature');

      // Again, and from a ring with an empty memory over the same database: no request.
      assert.equal((await ask(ring(), ORIGIN, originKey.keyId))?.publicKey, key!.publicKey);
      const again = ring();
      assert.deepEqual(await ask(again, ORIGIN, originKey.keyId), key);
      assert.equal(hitsOf(ORIGIN), before + 1);
    });

    test('our own keys come from our signing key, never fetched', async () => {
      const found = await ring().verifyKeys([{ serverName: 'hs.test', keyId: ourKey.keyId, validAt: clock }]);
      assert.deepEqual(found.get('hs.test')?.get(ourKey.keyId)?.publicKey, ourKey.publicKey);
      assert.equal(hitsOf('hs.test'), 0);
    });

    test('concurrent lookups of one server share one fetch', async () => {
      const remote = new CraftedServer(fresh('slow'));
      remote.serve(async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        return { status: 200, json: remote.response(clock + DAY) };
      });
      const r = ring();
      const keys = await Promise.all([ask(r, remote.name, remote.key.keyId), ask(r, remote.name, remote.key.keyId), ask(r, remote.name, 'ed25519:other')]);
      assert.deepEqual(keys.map((k) => k?.publicKey), [remote.publicKey, remote.publicKey, undefined]);
      assert.equal(hitsOf(remote.name), 1);
    });

    test('a failed fetch is not retried for a minute', async () => {
      const remote = new CraftedServer(fresh('down'));
      remote.serve(() => ({ status: 500, json: { errcode: 'M_UNKNOWN' } }));
      const r = ring();
      assert.equal(await ask(r, remote.name, remote.key.keyId), undefined);
      assert.equal(await ask(r, remote.name, remote.key.keyId), undefined);
      assert.equal(hitsOf(remote.name), 1);
      remote.serve(() => ({ status: 200, json: remote.response(clock + 2 * 60_000) }));
      clock += 61_000;
      assert.equal((await ask(r, remote.name, remote.key.keyId))?.publicKey, remote.publicKey);
      assert.equal(hitsOf(remote.name), 2);
    });

    test('a key valid until before validAt is fetched again; one that cannot be renewed is still returned', async () => {
      const remote = new CraftedServer(fresh('expiry'));
      const t0 = clock;
      remote.serve(() => ({ status: 200, json: remote.response(t0 + HOUR) }));
      const r = ring();
      assert.equal((await ask(r, remote.name, remote.key.keyId))?.validUntilTs, t0 + HOUR);
      // Still valid for an event of that time: no request.
      assert.equal((await ask(r, remote.name, remote.key.keyId, t0 + 30 * 60_000))?.validUntilTs, t0 + HOUR);
      assert.equal(hitsOf(remote.name), 1);

      clock = t0 + 2 * HOUR;
      remote.serve(() => ({ status: 200, json: remote.response(clock + HOUR) }));
      assert.equal((await ask(r, remote.name, remote.key.keyId))?.validUntilTs, t0 + 3 * HOUR);
      assert.equal(hitsOf(remote.name), 2);

      clock = t0 + 5 * HOUR;
      remote.serve(() => ({ status: 503, json: {} }));
      const stale = await ask(r, remote.name, remote.key.keyId);
      assert.equal(hitsOf(remote.name), 3);
      assert.deepEqual(stale, { publicKey: remote.publicKey, validUntilTs: t0 + 3 * HOUR });
    });

    test('valid_until_ts is capped at 7 days from the fetch', async () => {
      const remote = new CraftedServer(fresh('forever'));
      remote.serve(() => ({ status: 200, json: remote.response(clock + 365 * DAY) }));
      assert.equal((await ask(ring(), remote.name, remote.key.keyId))?.validUntilTs, clock + MAX_KEY_VALIDITY_MS);
    });

    test('forged responses are refused and not stored', async () => {
      const impostor = generateSigningKey();
      const cases: [string, (s: CraftedServer) => unknown][] = [
        ['wrong server_name', (s) => signJson({ ...s.response(clock + DAY), server_name: 'elsewhere.test', signatures: {} }, 'elsewhere.test', s.key)],
        ['signed by a key it does not list', (s) => s.response(clock + DAY, {}, impostor)],
        ['bad self-signature', (s) => ({ ...s.response(clock + DAY), valid_until_ts: clock + 2 * DAY })],
        ['no signature', (s) => ({ ...s.response(clock + DAY), signatures: {} })],
        ['a listed key signs badly beside a good one', (s) => {
          const doc = s.response(clock + DAY, { verify_keys: { [s.key.keyId]: { key: s.publicKey }, [impostor.keyId]: { key: encodeBase64(impostor.publicKey) } } });
          const sigs = doc.signatures as Record<string, Record<string, string>>;
          return { ...doc, signatures: { [s.name]: { ...sigs[s.name], [impostor.keyId]: sigs[s.name]![s.key.keyId]! } } };
        }],
        ['a malformed key', (s) => s.response(clock + DAY, { verify_keys: { [s.key.keyId]: { key: 'short' } } })],
        ['not JSON object', () => ['nope']],
      ];
      for (const [what, forge] of cases) {
        const remote = new CraftedServer(fresh('forged'));
        remote.serve(() => ({ status: 200, json: forge(remote) }));
        assert.equal(await ask(ring(), remote.name, remote.key.keyId), undefined, what);
        assert.equal(hitsOf(remote.name), 1, what);
        assert.deepEqual(await selectServerKeys(database.db, [remote.name, 'elsewhere.test']), [], what);
      }
    });

    test('a key from old_verify_keys signs only events before its expired_ts', async () => {
      const remote = new CraftedServer(fresh('rotated'));
      const oldKey = generateSigningKey();
      const expiredTs = clock - DAY;
      remote.serve(() => ({
        status: 200,
        json: remote.response(clock + DAY, { old_verify_keys: { [oldKey.keyId]: { key: encodeBase64(oldKey.publicKey), expired_ts: expiredTs } } }),
      }));
      const r = ring();
      const v10 = getRoomVersion('10')!;
      const event = (ts: number) =>
        hashAndSignEvent(
          { room_id: `!room:${remote.name}`, sender: `@u:${remote.name}`, type: 'm.room.message', content: { body: 'hi' }, origin_server_ts: ts, depth: 3, prev_events: [], auth_events: [] } as unknown as PduDraft,
          remote.name,
          oldKey,
          v10,
        );
      const before = event(expiredTs - HOUR);
      const afterExpiry = event(expiredTs + HOUR);
      const found = await r.verifyKeys([
        { serverName: remote.name, keyId: oldKey.keyId, validAt: before.origin_server_ts },
        { serverName: remote.name, keyId: oldKey.keyId, validAt: afterExpiry.origin_server_ts },
      ]);
      assert.deepEqual(found.get(remote.name)?.get(oldKey.keyId), { publicKey: encodeBase64(oldKey.publicKey), validUntilTs: expiredTs });
      assert.deepEqual(checkEventSignatures(before, v10, lookupIn(found)), { ok: true });
      assert.equal(checkEventSignatures(afterExpiry, v10, lookupIn(found)).ok, false);
      // The expiry is final: asking for a later time again fetches nothing, even after the interval.
      clock += 2 * 60_000;
      await r.verifyKeys([{ serverName: remote.name, keyId: oldKey.keyId, validAt: clock }]);
      assert.equal(hitsOf(remote.name), 1);
    });

    test('through a notary: both signatures checked, origin signatures stored', async () => {
      clock = Date.now();
      const hidden = new CraftedServer(fresh('hidden'));
      hidden.serve(() => ({ status: 200, json: hidden.response(Date.now() + DAY) }));
      const notaryHits = hitsOf(NOTARY);
      const key = await ask(ring({ perspectives: [perspective] }), hidden.name, hidden.key.keyId);
      assert.equal(key?.publicKey, hidden.publicKey);
      assert.equal(hitsOf(NOTARY), notaryHits + 1);
      // The one request the server got was the notary's.
      assert.equal(hitsOf(hidden.name), 1);
      const [row] = await selectServerKeys(database.db, [hidden.name]);
      assert.deepEqual(Object.keys((JSON.parse(row!.keyJson) as { signatures: object }).signatures), [hidden.name]);

      // The real server's key through the real notary (the notary fetches it from the origin).
      const viaNotary = await ring({ perspectives: [perspective] }).verifyKeys([{ serverName: ORIGIN, keyId: originKey.keyId, validAt: clock + 8 * DAY }]);
      assert.equal(viaNotary.get(ORIGIN)?.get(originKey.keyId)?.publicKey, encodeBase64(originKey.publicKey));
      assert.equal(hitsOf(NOTARY), notaryHits + 2);
    });

    test('prefer_direct_fetch: the server first, the notary when it fails; false: the notary first', async () => {
      let notaryHits = hitsOf(NOTARY);
      const a = new CraftedServer(fresh('pref'));
      a.serve(() => ({ status: 200, json: a.response(Date.now() + DAY) }));
      assert.equal((await ask(ring({ perspectives: [perspective], preferDirectFetch: true }), a.name, a.key.keyId))?.publicKey, a.publicKey);
      assert.equal(hitsOf(a.name), 1);
      assert.equal(hitsOf(NOTARY), notaryHits, 'the notary is not asked');

      // Answers once, then fails: only the notary, asked first, gets the answer.
      const b = new CraftedServer(fresh('pref'));
      let answered = 0;
      b.serve(() => (answered++ === 0 ? { status: 200, json: b.response(Date.now() + DAY) } : { status: 500, json: {} }));
      assert.equal((await ask(ring({ perspectives: [perspective] }), b.name, b.key.keyId))?.publicKey, b.publicKey);
      assert.equal(hitsOf(b.name), 1, 'not asked directly');
      assert.equal(hitsOf(NOTARY), ++notaryHits);

      // Known to no one: ours directly first, then the notary's.
      const c = new CraftedServer(fresh('pref'));
      const order: string[] = [];
      c.serve(() => {
        order.push(`direct #${hitsOf(NOTARY) - notaryHits}`);
        return { status: 500, json: {} };
      });
      assert.equal(await ask(ring({ perspectives: [perspective], preferDirectFetch: true }), c.name, c.key.keyId), undefined);
      assert.equal(hitsOf(NOTARY), ++notaryHits);
      // The first request came before the notary was asked; the second is the notary's own.
      assert.deepEqual(order, ['direct #0', 'direct #1']);
    });

    test('notary answers without a valid notary signature, or for servers not asked, are refused', async () => {
      const target = new CraftedServer(fresh('vouched'));
      const bystander = new CraftedServer(fresh('bystander'));
      target.serve(() => ({ status: 500, json: {} })); // only the notary can help
      const forging = new CraftedServer(fresh('forging-notary'));
      // Trusted with the real notary's key under its own name.
      const trusted = { ...perspective, server_name: forging.name };
      const otherKey = generateSigningKey(notaryKey.keyId.slice('ed25519:'.length));
      const cases: [string, () => unknown][] = [
        ['no notary signature', () => ({ server_keys: [target.response(clock + DAY)] })],
        ['signed by another server', () => ({ server_keys: [signJson(target.response(clock + DAY), NOTARY, notaryKey)] })],
        ['a wrong notary signature', () => ({ server_keys: [signJson(target.response(clock + DAY), forging.name, otherKey)] })],
        ['a notary signature on a forged self-signature', () => ({ server_keys: [signJson({ ...target.response(clock + DAY), valid_until_ts: clock + 3 * DAY }, forging.name, notaryKey)] })],
        ['not a list', () => ({ server_keys: { [target.name]: signJson(target.response(clock + DAY), forging.name, notaryKey) } })],
      ];
      for (const [what, answer] of cases) {
        forging.serve(() => ({ status: 200, json: answer() }));
        assert.equal(await ask(ring({ perspectives: [trusted] }), target.name, target.key.keyId), undefined, what);
        assert.deepEqual(await selectServerKeys(database.db, [target.name]), [], what);
      }
      // Correctly signed, with a server not asked about beside: that one is ignored.
      forging.serve(() => ({
        status: 200,
        json: { server_keys: [bystander, target].map((s) => signJson(s.response(clock + DAY), forging.name, notaryKey)) },
      }));
      assert.equal((await ask(ring({ perspectives: [trusted] }), target.name, target.key.keyId))?.publicKey, target.publicKey);
      assert.deepEqual(await selectServerKeys(database.db, [bystander.name]), []);
    });
  });
}
