// User and alias queries from a real server to a plain node:http application service that creates
// what it is asked about through the client API (as its as_token) before answering 200: profiles
// of unknown users of its exclusive namespace, invites of them (also at room creation), aliases
// of its (non-exclusive) alias namespace resolved or joined; a 404 or a failing service leaves
// them unknown; users and aliases outside its namespaces are not asked about; the query carries
// the hs_token and falls back from /_chat to /_matrix. Then federation's /query/profile and
// /query/directory, asked by a second server. Both storage backends. Last, a service that does not
// answer in time: the query gives up, once for lookups of the same id at the same time.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { serviceHttp } from '../../src/appservice/http.js';
import { AppServices } from '../../src/appservice/namespaces.js';
import { AppServiceQueryClient } from '../../src/appservice/queries.js';
import { parseRegistration } from '../../src/appservice/registration.js';
import { enc, request } from '../e2e/support/client.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';

const HS_TOKEN = 'irc-hs-token-0123456789';
const AS_TOKEN = 'irc-as-token-0123456789';

interface Query {
  readonly naming: string;
  readonly kind: 'users' | 'rooms';
  /** The user id or alias asked about. */
  readonly id: string;
  readonly path: string;
  readonly search: string;
  readonly authorization: string | undefined;
}

/**
 * A service that answers queries under /_matrix only (404 M_UNRECOGNIZED under /_chat). Asked
 * about a user or alias whose localpart says `unknown` it answers 404, `broken` 500; anything
 * else it creates through the server's client API, then answers 200.
 */
class QueryService {
  readonly queries: Query[] = [];
  /** Rooms it created for aliases it was asked about, by alias. */
  readonly rooms = new Map<string, string>();
  /** The server's client API, where the service creates what it is asked about. */
  hearth = '';
  url = '';
  private server: Server | undefined;

  async start(): Promise<void> {
    this.server = createHttpServer((req, res) => {
      this.answer(req, res).catch((err: unknown) => json(res, 500, { errcode: 'M_UNKNOWN', error: String(err) }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The queries about `id` that reached the service's endpoint (under /_matrix). */
  asked(id: string): Query[] {
    return this.queries.filter((q) => q.id === id && q.naming === 'matrix');
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for await (const _ of req);
    const url = new URL(req.url ?? '/', 'http://x');
    if (/^\/_(chat|matrix)\/app\/v1\/transactions\//.test(url.pathname)) return json(res, 200, {});
    const match = /^\/_(chat|matrix)\/app\/v1\/(users|rooms)\/([^/]+)$/.exec(url.pathname);
    if (match === null || req.method !== 'GET') return json(res, 404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' });
    const [, naming, kind, encoded] = match as unknown as [string, string, 'users' | 'rooms', string];
    const id = decodeURIComponent(encoded);
    this.queries.push({ naming, kind, id, path: url.pathname, search: url.search, authorization: req.headers.authorization });
    if (naming === 'chat') return json(res, 404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' });
    const localpart = id.slice(1, id.indexOf(':'));
    if (localpart.includes('unknown')) return json(res, 404, { errcode: 'M_NOT_FOUND', error: 'Not known here' });
    if (localpart.includes('broken')) return json(res, 500, { errcode: 'M_UNKNOWN', error: 'Broken' });
    if (kind === 'users') {
      await this.call('POST', '/register', { type: 'm.login.application_service', username: localpart });
      await this.call('PUT', `/profile/${enc(id)}/displayname?user_id=${enc(id)}`, { displayname: `${localpart} (IRC)` });
    } else {
      const created = await this.call('POST', '/createRoom', { preset: 'public_chat', room_alias_name: localpart });
      this.rooms.set(id, created['room_id'] as string);
    }
    json(res, 200, {});
  }

  private async call(method: string, path: string, payload: unknown): Promise<Record<string, unknown>> {
    const r = await request(this.hearth, method, `/_matrix/client/v3${path}`, payload, { token: AS_TOKEN });
    if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as Record<string, unknown>;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

function json(res: ServerResponse, status: number, payload: object): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

function registration(dir: string, url: string, server: string): string {
  const file = join(dir, `irc-${server}.yaml`);
  writeFileSync(
    file,
    `id: irc\nurl: ${url}\nas_token: ${AS_TOKEN}\nhs_token: ${HS_TOKEN}\nsender_localpart: ircbot\n` +
      `namespaces:\n  users:\n    - exclusive: true\n      regex: '@_irc_.*:${server}'\n` +
      `    - exclusive: false\n      regex: '@ircguest_.*:${server}'\n` +
      `  aliases:\n    - exclusive: false\n      regex: '#_irc_.*:${server}'\n`,
  );
  return file;
}

type Reply = Awaited<ReturnType<typeof request>>;
const body = (r: Reply) => r.body as Record<string, unknown>;
const expectNotFound = (r: Reply) => {
  assert.equal(r.status, 404, JSON.stringify(r.body));
  assert.equal(body(r)['errcode'], 'M_NOT_FOUND');
};

for (const { backend, skip } of await serverBackends()) {
  describe(`user and alias queries to an application service (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-appservice-queries-'));
    const service = new QueryService();
    let hs: TestServer;
    let owner: TestUser;
    const call = (method: string, path: string, payload?: unknown, token: string = owner.accessToken) =>
      request(hs.baseUrl, method, `/_chat/client/v3${path}`, payload, { token });
    const ok = async (method: string, path: string, payload?: unknown) => {
      const r = await call(method, path, payload);
      assert.equal(r.status, 200, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return body(r);
    };

    before(async () => {
      await service.start();
      hs = await startTestServer({ backend, config: { app_service_config_files: [registration(dir, service.url, 'localhost')] } });
      service.hearth = hs.baseUrl;
      owner = await hs.registerUser('owner', 'owner-password');
    });
    after(async () => {
      await hs?.close();
      await service.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('the profile of an unknown user of its exclusive namespace is made on demand, asked with the hs_token', async () => {
      const alice = '@_irc_alice:localhost';
      assert.deepEqual(await ok('GET', `/profile/${enc(alice)}`), { displayname: '_irc_alice (IRC)' });
      // Asked under /_chat first (the server's naming), then under /_matrix, with the hs_token in
      // the header only.
      const asked = service.queries.filter((q) => q.id === alice);
      assert.deepEqual(asked.map((q) => q.naming), ['chat', 'matrix']);
      for (const q of asked) {
        assert.equal(q.authorization, `Bearer ${HS_TOKEN}`);
        assert.equal(q.search, '');
        assert.equal(q.kind, 'users');
      }
      assert.equal(asked[1]!.path, `/_matrix/app/v1/users/${encodeURIComponent(alice)}`);
      // It exists now: asked once only.
      assert.deepEqual(await ok('GET', `/profile/${enc(alice)}`), { displayname: '_irc_alice (IRC)' });
      assert.equal(service.asked(alice).length, 1);
      // A field of a profile, without an access token.
      const bea = '@_irc_bea:localhost';
      const r = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/profile/${enc(bea)}/displayname`, undefined, { token: null });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body, { displayname: '_irc_bea (IRC)' });
    });

    test('users outside its exclusive namespaces are not asked about', async () => {
      for (const userId of ['@stranger:localhost', '@ircguest_x:localhost']) {
        expectNotFound(await call('GET', `/profile/${enc(userId)}`));
        assert.equal(service.queries.filter((q) => q.id === userId).length, 0, userId);
      }
      // Nor are users that exist.
      expectNotFound(await call('GET', `/profile/${enc('@stranger:localhost')}/avatar_url`));
      await ok('GET', `/profile/${enc(owner.userId)}`);
      assert.equal(service.queries.filter((q) => q.id === owner.userId).length, 0);
    });

    test('a user the service answers 404 for, or fails on, is not found', async () => {
      for (const userId of ['@_irc_unknown_zed:localhost', '@_irc_broken:localhost']) {
        expectNotFound(await call('GET', `/profile/${enc(userId)}`));
        expectNotFound(await call('GET', `/profile/${enc(userId)}/displayname`));
        assert.ok(service.asked(userId).length >= 1, userId);
      }
    });

    test('an invite, or a room created with one, of an unknown namespace user makes the user first', async () => {
      const member = async (roomId: string, userId: string) => ok('GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(userId)}`);
      const roomId = (await ok('POST', '/createRoom', { preset: 'private_chat' }))['room_id'] as string;
      const carol = '@_irc_carol:localhost';
      await ok('POST', `/rooms/${enc(roomId)}/invite`, { user_id: carol });
      assert.deepEqual(await member(roomId, carol), { membership: 'invite', displayname: '_irc_carol (IRC)' });
      assert.equal(service.asked(carol).length, 1);
      const dave = '@_irc_dave:localhost';
      const direct = (await ok('POST', '/createRoom', { preset: 'trusted_private_chat', invite: [dave], is_direct: true }))['room_id'] as string;
      assert.deepEqual(await member(direct, dave), { membership: 'invite', displayname: '_irc_dave (IRC)', is_direct: true });
      // The new user can take the invite.
      const joined = await request(hs.baseUrl, 'POST', `/_chat/client/v3/join/${enc(direct)}?user_id=${enc(dave)}`, {}, { token: AS_TOKEN });
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      // One the service does not know is invited as an unknown user is: without a profile.
      const ed = '@_irc_unknown_ed:localhost';
      await ok('POST', `/rooms/${enc(roomId)}/invite`, { user_id: ed });
      assert.deepEqual(await member(roomId, ed), { membership: 'invite' });
      assert.equal(service.asked(ed).length, 1);
    });

    test('an unknown alias of its namespace is made on demand and resolved', async () => {
      const alias = '#_irc_chan:localhost';
      const found = await ok('GET', `/directory/room/${enc(alias)}`);
      const roomId = service.rooms.get(alias);
      assert.ok(roomId !== undefined);
      assert.deepEqual(found, { room_id: roomId, servers: ['localhost'] });
      const asked = service.asked(alias);
      assert.equal(asked.length, 1);
      assert.equal(asked[0]!.kind, 'rooms');
      assert.equal(asked[0]!.path, `/_matrix/app/v1/rooms/${encodeURIComponent(alias)}`);
      assert.equal(asked[0]!.authorization, `Bearer ${HS_TOKEN}`);
      // Known now: not asked again.
      assert.deepEqual(await ok('GET', `/directory/room/${enc(alias)}`), found);
      assert.equal(service.asked(alias).length, 1);
    });

    test('a join by an alias made on demand joins its room', async () => {
      const alias = '#_irc_lobby:localhost';
      const joined = await ok('POST', `/join/${enc(alias)}`, {});
      assert.equal(joined['room_id'], service.rooms.get(alias));
      const rooms = (await ok('GET', '/joined_rooms'))['joined_rooms'] as string[];
      assert.ok(rooms.includes(joined['room_id'] as string));
    });

    test('an alias the service answers 404 for, or one outside its namespaces, is not found', async () => {
      const unknown = '#_irc_unknown_x:localhost';
      expectNotFound(await call('GET', `/directory/room/${enc(unknown)}`));
      expectNotFound(await call('POST', `/join/${enc(unknown)}`, {}));
      assert.equal(service.asked(unknown).length, 2);
      const broken = '#_irc_broken:localhost';
      expectNotFound(await call('GET', `/directory/room/${enc(broken)}`));
      const outside = '#elsewhere:localhost';
      expectNotFound(await call('GET', `/directory/room/${enc(outside)}`));
      assert.equal(service.queries.filter((q) => q.id === outside).length, 0);
    });
  });

  describe(`queries to an application service from another server (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-appservice-queries-fed-'));
    const service = new QueryService();
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;

    before(async () => {
      await service.start();
      net = await startFederationNet();
      hs1 = await startFederatedServer(net, {
        name: 'hs1.test',
        address: '127.0.0.2',
        backend,
        config: { app_service_config_files: [registration(dir, service.url, 'hs1.test')] },
      });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend });
      service.hearth = hs1.baseUrl;
    });
    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await net?.close();
      await service.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const query = (path: string, q: Record<string, string>) =>
      hs2.server.services.federation!.request({ destination: 'hs1.test', method: 'GET', path: `/federation/v1/query/${path}`, query: q });

    test('/query/profile of an unknown namespace user makes it on demand; a 404 stays not found', async () => {
      const fed = '@_irc_fed:hs1.test';
      const res = await query('profile', { user_id: fed });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { displayname: '_irc_fed (IRC)' });
      assert.equal(service.asked(fed).length, 1);
      const unknown = await query('profile', { user_id: '@_irc_unknown_fed:hs1.test' });
      assert.equal(unknown.status, 404);
      assert.equal((unknown.body as { errcode?: string }).errcode, 'M_NOT_FOUND');
    });

    test('/query/directory of an unknown namespace alias makes the room on demand; a 404 stays not found', async () => {
      const alias = '#_irc_fedroom:hs1.test';
      const res = await query('directory', { room_alias: alias });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { room_id: service.rooms.get(alias), servers: ['hs1.test'] });
      const unknown = await query('directory', { room_alias: '#_irc_unknown_fed:hs1.test' });
      assert.equal(unknown.status, 404);
      assert.equal((unknown.body as { errcode?: string }).errcode, 'M_NOT_FOUND');
    });
  });
}

describe('a service that does not answer in time', () => {
  test('is given up on, once for simultaneous lookups of one id, and the hs_token is not logged', async () => {
    let requests = 0;
    const silent = createHttpServer(() => {
      requests++;
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const http = serviceHttp({ disableTlsValidation: false });
    const warnings: unknown[] = [];
    try {
      const irc = parseRegistration(
        `id: irc\nurl: ${url}\nas_token: ${AS_TOKEN}\nhs_token: ${HS_TOKEN}\nsender_localpart: ircbot\n` +
          `namespaces:\n  users:\n    - { exclusive: true, regex: '@_irc_.*:localhost' }\n  aliases:\n    - { exclusive: false, regex: '#_irc_.*:localhost' }\n`,
      );
      const queries = new AppServiceQueryClient({
        services: new AppServices([irc], 'localhost'),
        http,
        protocolName: 'chat',
        legacyAuthorization: false,
        log: { warn: (message, details) => warnings.push({ message, details }) },
        timeoutMs: 200,
      });
      const started = Date.now();
      const answers = await Promise.all([queries.queryUser('@_irc_slow:localhost'), queries.queryUser('@_irc_slow:localhost'), queries.queryAlias('#_irc_slow:localhost')]);
      assert.deepEqual(answers, [false, false, false]);
      assert.ok(Date.now() - started < 2000);
      assert.equal(requests, 2);
      assert.equal(warnings.length, 2);
      assert.ok(!JSON.stringify(warnings).includes(HS_TOKEN));
    } finally {
      await http.close();
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
