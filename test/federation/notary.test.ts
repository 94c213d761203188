// The notary API over real HTTP, on SQLite and PostgreSQL: our notary routes on a real listener
// answer for a real Hearth server (fetched through a counting proxy that can also play dead) and
// for ourselves, each answer carrying the origin's signature intact and ours added; answers come
// from the cache while it reaches `minimum_valid_until_ts`, forged key responses are never served,
// and bad input gets 400s.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeBase64 } from '../../src/protocol/base64.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { generateSigningKey, signJson, verifyJsonSignature, type SigningKey } from '../../src/protocol/signing.js';
import { buildHttpApp } from '../../src/http/app.js';
import { FederationKeyRing, verifyKeyResponse, type FetchJson } from '../../src/federation/key-ring.js';
import { notaryRoutes } from '../../src/federation/notary.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { selectServerKeys } from '../../src/storage/federation/server-keys.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';

const DAY = 24 * 60 * 60 * 1000;
const ORIGIN = 'origin.test';
const FORGED = 'forged.test';
const NOTARY = 'notary.test';

let origin: TestServer;
let originKey: SigningKey;
/** Requests that reached the proxy in front of the origin, and whether it plays dead. */
let originHits = 0;
let originDown = false;
let proxy: Server;
let proxyUrl = '';
// A server answering a key response signed by a key it does not list.
const forgedKey = generateSigningKey();
let forged: Server;
let forgedUrl = '';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

before(async () => {
  origin = await startTestServer({ serverName: ORIGIN });
  originKey = origin.server.core.signingKey;
  proxy = createServer((req, res) => {
    originHits++;
    if (originDown) return void res.writeHead(502).end('{}');
    fetch(`${origin.baseUrl}${req.url ?? '/'}`)
      .then(async (r) => res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text()))
      .catch(() => res.writeHead(502).end('{}'));
  });
  proxyUrl = await listen(proxy);
  forged = createServer((_req, res) => {
    const doc = {
      server_name: FORGED,
      verify_keys: { 'ed25519:listed': { key: encodeBase64(generateSigningKey().publicKey) } },
      old_verify_keys: {},
      valid_until_ts: Date.now() + DAY,
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(signJson(doc, FORGED, forgedKey)));
  });
  forgedUrl = await listen(forged);
});

after(async () => {
  await origin?.close();
  await new Promise((resolve) => proxy?.close(resolve));
  await new Promise((resolve) => forged?.close(resolve));
});

const fetchJson: FetchJson = async (serverName, request) => {
  const base = serverName === ORIGIN ? proxyUrl : serverName === FORGED ? forgedUrl : undefined;
  if (base === undefined) throw new Error(`no route to ${serverName}`);
  const res = await fetch(`${base}/_chat${request.path}`, { method: request.method });
  if (!res.ok) throw new Error(`${serverName} answered ${res.status}`);
  return res.json();
};

for (const backend of await storageBackends()) {
  describe(`notary API on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let app: ReturnType<typeof buildHttpApp>;
    let url = '';
    let clock = Date.now();
    const notaryKey = generateSigningKey();
    const notaryKeys = { serverName: NOTARY, keys: new Map([[notaryKey.keyId, encodeBase64(notaryKey.publicKey)]]) };

    const get = async (path: string) => {
      const res = await fetch(`${url}${path}`);
      return { status: res.status, body: (await res.json()) as JsonObject };
    };
    const post = async (body: unknown, raw?: string) => {
      const res = await fetch(`${url}/_chat/key/v2/query`, {
        method: 'POST',
        body: raw ?? JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      return { status: res.status, body: (await res.json()) as JsonObject };
    };
    const keysOf = (body: JsonObject) => body.server_keys as JsonObject[];

    /** An answer for the origin: its own signature intact, ours added, verifiable as a notary answer. */
    function assertOriginAnswer(doc: JsonObject | undefined): void {
      assert.ok(doc, 'an answer');
      assert.equal(doc.server_name, ORIGIN);
      assert.deepEqual(doc.verify_keys, { [originKey.keyId]: { key: encodeBase64(originKey.publicKey) } });
      assert.ok(verifyJsonSignature(doc, ORIGIN, originKey.keyId, originKey.publicKey), 'origin signature intact');
      assert.ok(verifyJsonSignature(doc, NOTARY, notaryKey.keyId, notaryKey.publicKey), 'notary signature added');
      assert.ok(verifyKeyResponse(doc, ORIGIN, clock, notaryKeys).ok);
    }

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 });
      await migrateToLatest(database.db as never, database.dialect);
      const now = () => clock;
      const keyRing = new FederationKeyRing({
        db: database.db,
        serverName: NOTARY,
        signingKey: notaryKey,
        perspectives: [],
        preferDirectFetch: false,
        fetchJson,
        now,
      });
      app = buildHttpApp(notaryRoutes({ keyRing, serverName: NOTARY, signingKey: notaryKey, now }));
      url = await app.listen({ host: '127.0.0.1', port: 0 });
      originHits = 0;
      originDown = false;
    });
    after(async () => {
      await app.close();
      await database.close();
      await target.drop();
    });

    test('GET /key/v2/query/{serverName}: fetched once, then from the cache, under both prefixes', async () => {
      const first = await get(`/_chat/key/v2/query/${ORIGIN}`);
      assert.equal(first.status, 200);
      assert.equal(keysOf(first.body).length, 1);
      assertOriginAnswer(keysOf(first.body)[0]);
      assert.equal(originHits, 1);

      const second = await get(`/_matrix/key/v2/query/${ORIGIN}?minimum_valid_until_ts=${clock + DAY}`);
      assert.deepEqual(second.body, first.body);
      // The deprecated key-id form answers too.
      assert.deepEqual((await get(`/_chat/key/v2/query/${ORIGIN}/${originKey.keyId}`)).body, first.body);
      assert.equal(originHits, 1, 'served from the cache');
      // Stored with the origin's signatures only.
      const [row] = await selectServerKeys(database.db, [ORIGIN]);
      assert.deepEqual(Object.keys((JSON.parse(row!.keyJson) as { signatures: object }).signatures), [ORIGIN]);
    });

    test('a minimum the cache does not reach is fetched again; the cached answer when the origin is down', async () => {
      const beyond = clock + 8 * DAY;
      clock += 61_000; // past the refetch interval of the first fetch
      const refreshed = await get(`/_chat/key/v2/query/${ORIGIN}?minimum_valid_until_ts=${beyond}`);
      assert.equal(originHits, 2);
      assertOriginAnswer(keysOf(refreshed.body)[0]);

      originDown = true;
      try {
        clock += 61_000;
        const cached = await post({ server_keys: { [ORIGIN]: { [originKey.keyId]: { minimum_valid_until_ts: beyond } } } });
        assert.equal(originHits, 3, 'asked again');
        assert.equal(cached.status, 200);
        assert.equal(keysOf(cached.body).length, 1);
        assertOriginAnswer(keysOf(cached.body)[0]);
      } finally {
        originDown = false;
      }
    });

    test('POST /key/v2/query: several servers at once, ourselves included, forged and unknown ones left out', async () => {
      const { status, body } = await post({
        server_keys: { [ORIGIN]: {}, [NOTARY]: { [notaryKey.keyId]: {} }, [FORGED]: {}, 'unknown.test': {} },
      });
      assert.equal(status, 200);
      const byServer = new Map(keysOf(body).map((doc) => [doc.server_name, doc]));
      assert.deepEqual([...byServer.keys()].sort(), [NOTARY, ORIGIN]);
      assertOriginAnswer(byServer.get(ORIGIN));
      const own = byServer.get(NOTARY)!;
      assert.deepEqual(own.verify_keys, { [notaryKey.keyId]: { key: encodeBase64(notaryKey.publicKey) } });
      assert.ok(verifyJsonSignature(own, NOTARY, notaryKey.keyId, notaryKey.publicKey));
      assert.ok(verifyKeyResponse(own, NOTARY, clock, notaryKeys).ok);
      assert.deepEqual(await selectServerKeys(database.db, [FORGED, 'unknown.test']), []);

      // No servers: an empty list (spec).
      assert.deepEqual(await post({ server_keys: {} }), { status: 200, body: { server_keys: [] } });
    });

    test('GET for ourselves: our key document, signed by us', async () => {
      const { status, body } = await get(`/_chat/key/v2/query/${NOTARY}`);
      assert.equal(status, 200);
      const [doc] = keysOf(body);
      assert.equal(doc?.server_name, NOTARY);
      assert.ok(verifyJsonSignature(doc!, NOTARY, notaryKey.keyId, notaryKey.publicKey));
      assert.ok((doc!.valid_until_ts as number) > clock);
    });

    test('bad input: 400 with M_BAD_JSON, M_INVALID_PARAM or M_NOT_JSON, never a 500', async () => {
      const bad: [string, Promise<{ status: number; body: JsonObject }>, string][] = [
        ['no server_keys', post({}), 'M_BAD_JSON'],
        ['server_keys a list', post({ server_keys: [ORIGIN] }), 'M_BAD_JSON'],
        ['criteria not an object', post({ server_keys: { [ORIGIN]: [] } }), 'M_BAD_JSON'],
        ['criterion not an object', post({ server_keys: { [ORIGIN]: { [originKey.keyId]: 5 } } }), 'M_BAD_JSON'],
        ['minimum not a number', post({ server_keys: { [ORIGIN]: { [originKey.keyId]: { minimum_valid_until_ts: 'soon' } } } }), 'M_BAD_JSON'],
        ['minimum negative', post({ server_keys: { [ORIGIN]: { [originKey.keyId]: { minimum_valid_until_ts: -1 } } } }), 'M_BAD_JSON'],
        ['bad server name (POST)', post({ server_keys: { 'not a server!': {} } }), 'M_INVALID_PARAM'],
        ['not JSON', post(undefined, '{"server_keys":'), 'M_NOT_JSON'],
        ['bad server name (GET)', get('/_chat/key/v2/query/bad%20name'), 'M_INVALID_PARAM'],
        ['minimum not digits (GET)', get(`/_chat/key/v2/query/${ORIGIN}?minimum_valid_until_ts=abc`), 'M_INVALID_PARAM'],
        ['minimum too large (GET)', get(`/_chat/key/v2/query/${ORIGIN}?minimum_valid_until_ts=99999999999999999999`), 'M_INVALID_PARAM'],
        ['minimum repeated (GET)', get(`/_chat/key/v2/query/${ORIGIN}?minimum_valid_until_ts=1&minimum_valid_until_ts=2`), 'M_INVALID_PARAM'],
      ];
      for (const [what, reply, errcode] of bad) {
        const { status, body } = await reply;
        assert.equal(status, 400, what);
        assert.equal(body.errcode, errcode, what);
      }
    });
  });
}
