// Transactions from a real server to a plain node:http application service: what the service is
// sent (rooms with its users, its rooms and aliases, its users' events) and what not; the path,
// naming fallback and Authorization header; 100 events sent while the service is down, all
// delivered once, in order, when it is up; a restart of the server mid-queue resends the pending
// transaction with the same id and body, and loses and repeats nothing. Both storage backends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/index.js';
import { createServer, type HearthServer } from '../../src/context.js';
import { enc, request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';

const HS_TOKEN = 'irc-hs-token-0123456789';
const AS_TOKEN = 'irc-as-token-0123456789';
const RETRY = { minMs: 20, maxMs: 200 };
const WAIT_MS = 15_000;

interface Received {
  readonly path: string;
  readonly txnId: string;
  readonly authorization: string | undefined;
  readonly body: string;
  readonly events: { event_id: string; type: string; room_id: string; sender: string; content: { body?: string } }[];
}

/** A service that answers what `mode` says and keeps every transaction it is sent. */
class TestService {
  readonly received: Received[] = [];
  /** Pings taken: Authorization header and body. */
  readonly pings: { readonly authorization: string | undefined; readonly body: unknown }[] = [];
  /** Transactions answered 503 while down: id and body. */
  readonly refused: { readonly txnId: string; readonly body: string }[] = [];
  /** 'up': 200; 'down': 503; 'matrix-only': 404 M_UNRECOGNIZED on /_chat/. */
  mode: 'up' | 'down' | 'matrix-only' = 'matrix-only';
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createHttpServer((req, res) => void this.answer(req, res.writeHead.bind(res), (b) => res.end(b)));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async answer(req: IncomingMessage, head: (status: number, headers: Record<string, string>) => void, end: (body: string) => void): Promise<void> {
    let body = '';
    for await (const chunk of req) body += chunk;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const json = (status: number, payload: object) => {
      head(status, { 'content-type': 'application/json' });
      end(JSON.stringify(payload));
    };
    const ping = /^\/_(chat|matrix)\/app\/v1\/ping$/.exec(path);
    if (ping !== null && req.method === 'POST') {
      if (this.mode === 'down') return json(503, { errcode: 'M_UNKNOWN', error: 'down' });
      if (this.mode === 'matrix-only' && ping[1] === 'chat') return json(404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' });
      this.pings.push({ authorization: req.headers.authorization, body: JSON.parse(body) });
      return json(200, {});
    }
    const match = /^\/_(chat|matrix)\/app\/v1\/transactions\/([^/]+)$/.exec(path);
    if (this.mode === 'down') {
      if (match !== null) this.refused.push({ txnId: decodeURIComponent(match[2]!), body });
      return json(503, { errcode: 'M_UNKNOWN', error: 'down' });
    }
    if (match === null || req.method !== 'PUT' || (this.mode === 'matrix-only' && match[1] === 'chat')) {
      return json(404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' });
    }
    this.received.push({ path, txnId: decodeURIComponent(match[2]!), authorization: req.headers.authorization, body, events: JSON.parse(body).events });
    json(200, {});
  }

  /** The events of every transaction, each transaction counted once (a retry is the same id). */
  delivered(): Received['events'] {
    const seen = new Map<string, Received>();
    for (const r of this.received) {
      const earlier = seen.get(r.txnId);
      if (earlier !== undefined) assert.equal(r.body, earlier.body, `transaction ${r.txnId} was sent twice with different bodies`);
      else seen.set(r.txnId, r);
    }
    return [...seen.values()].flatMap((r) => r.events);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

async function until<T>(what: string, fn: () => T | undefined | false): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

for (const { backend, skip } of await serverBackends()) {
  describe(`transactions to an application service (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-appservice-txn-'));
    const service = new TestService();
    let hs: TestServer;
    let running: HearthServer;
    let baseUrl: string;
    const call = async (method: string, path: string, payload?: unknown, token?: string) => {
      const r = await request(baseUrl, method, `/_chat/client/v3${path}`, payload, token !== undefined ? { token } : {});
      assert.ok(r.status === 200, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as Record<string, unknown>;
    };
    let owner: { userId: string; accessToken: string };
    let bridged: string;

    before(async () => {
      await service.start();
      const file = join(dir, 'irc.yaml');
      writeFileSync(
        file,
        `id: irc\nurl: ${service.url}\nas_token: ${AS_TOKEN}\nhs_token: ${HS_TOKEN}\nsender_localpart: ircbot\n` +
          `namespaces:\n  users:\n    - exclusive: true\n      regex: '@_irc_.*:localhost'\n` +
          `  aliases:\n    - exclusive: true\n      regex: '#_irc_.*:localhost'\n` +
          `  rooms:\n    - exclusive: false\n      regex: '!never-matches-anything:localhost'\n`,
      );
      hs = await startTestServer({ backend, config: { app_service_config_files: [file] }, appServiceRetry: RETRY });
      running = hs.server;
      baseUrl = hs.baseUrl;
      owner = await hs.registerUser('owner', 'owner-password');
      // A room with one of the service's users in it.
      bridged = (await call('POST', '/createRoom', { preset: 'public_chat' }, owner.accessToken))['room_id'] as string;
      await call('POST', '/register', { type: 'm.login.application_service', username: '_irc_bob', inhibit_login: true }, AS_TOKEN);
      await call('POST', `/join/${enc(bridged)}?user_id=${enc('@_irc_bob:localhost')}`, {}, AS_TOKEN);
    });
    after(async () => {
      await running?.close();
      await hs?.close();
      await service.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const send = (roomId: string, text: string, token = owner.accessToken) =>
      call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/${enc(text)}`, { msgtype: 'm.text', body: text }, token);
    const bodies = () => service.delivered().filter((e) => e.type === 'm.room.message').map((e) => e.content.body);

    test('events of a room with its users arrive, under /_matrix when /_chat is not answered, with the hs_token', async () => {
      await send(bridged, 'first');
      await until('the first message', () => bodies().includes('first'));
      const last = service.received[service.received.length - 1]!;
      assert.match(last.path, /^\/_matrix\/app\/v1\/transactions\/\d+$/);
      assert.equal(last.authorization, `Bearer ${HS_TOKEN}`);
      const event = last.events.find((e) => e.content.body === 'first')!;
      assert.equal(event.room_id, bridged);
      assert.equal(event.sender, owner.userId);
      // The join of its user came before, in order.
      const all = service.delivered();
      const join = all.findIndex((e) => e.type === 'm.room.member' && (e as { state_key?: string }).state_key === '@_irc_bob:localhost');
      assert.ok(join >= 0 && join < all.findIndex((e) => e.content.body === 'first'));
    });

    test('events of other rooms do not, unless an alias of the room is the service\'s', async () => {
      const other = (await call('POST', '/createRoom', { preset: 'public_chat' }, owner.accessToken))['room_id'] as string;
      await send(other, 'not for the bridge');
      await send(bridged, 'marker-1');
      await until('marker-1', () => bodies().includes('marker-1'));
      assert.ok(!bodies().includes('not for the bridge'));
      // The service gives the room an alias of its namespace: the room's events are its business.
      const aliased = (await call('POST', '/createRoom', { preset: 'public_chat' }, AS_TOKEN))['room_id'] as string;
      await call('PUT', `/directory/room/${enc('#_irc_channel:localhost')}`, { room_id: aliased }, AS_TOKEN);
      await call('POST', `/join/${enc(aliased)}`, {}, owner.accessToken);
      await call('POST', `/rooms/${enc(aliased)}/leave`, {}, AS_TOKEN);
      await new Promise((r) => setTimeout(r, 100));
      await send(aliased, 'in an aliased room');
      await until('the aliased room\'s message', () => bodies().includes('in an aliased room'));
    });

    test('the service asks to be pinged: the server calls its /ping and answers the time taken', async () => {
      const ping = (token: string, id = 'irc') => request(baseUrl, 'POST', `/_chat/client/v1/appservice/${id}/ping`, { transaction_id: 'ping-1' }, { token });
      const ok = await ping(AS_TOKEN);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(typeof (ok.body as { duration_ms?: unknown }).duration_ms, 'number');
      assert.deepEqual(service.pings[service.pings.length - 1], { authorization: `Bearer ${HS_TOKEN}`, body: { transaction_id: 'ping-1' } });
      const notOurs = await ping(owner.accessToken);
      assert.equal(notOurs.status, 403);
      assert.equal((notOurs.body as { errcode?: string }).errcode, 'M_FORBIDDEN');
      assert.equal((await ping(AS_TOKEN, 'other')).status, 403);
      service.mode = 'down';
      const bad = await ping(AS_TOKEN);
      service.mode = 'matrix-only';
      assert.equal(bad.status, 502);
      assert.deepEqual({ ...(bad.body as object), error: undefined, body: undefined }, { errcode: 'M_BAD_STATUS', status: 503, error: undefined, body: undefined });
    });

    test('100 events sent while the service is down all arrive once, in order', async () => {
      service.mode = 'down';
      const sent: string[] = [];
      for (let i = 0; i < 100; i++) {
        sent.push(`outage-${i}`);
        await send(bridged, `outage-${i}`);
      }
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(!bodies().includes('outage-0'));
      service.mode = 'up';
      await until('the 100 messages', () => bodies().includes('outage-99'));
      const got = bodies().filter((b) => b?.startsWith('outage-'));
      assert.deepEqual(got, sent);
    });

    test('a restart mid-queue resends the pending transaction as it was, and loses nothing', async () => {
      const before = service.received.length;
      // A transaction the service refuses stays pending across the restart.
      service.mode = 'down';
      service.refused.length = 0;
      for (let i = 0; i < 20; i++) await send(bridged, `restart-${i}`);
      await until('a refused transaction', () => service.refused.length > 0);
      const pending = service.refused[service.refused.length - 1]!;
      await running.close();
      const { config } = loadConfig(hs.configPath, {});
      running = await createServer(config, { closeGraceMs: 1000, logger: false, appServiceRetry: RETRY });
      baseUrl = (await running.listen())[0]!.url;
      for (let i = 20; i < 30; i++) await send(bridged, `restart-${i}`);
      service.mode = 'up';
      await until('the 30 messages', () => bodies().includes('restart-29'));
      const got = bodies().filter((b) => b?.startsWith('restart-'));
      assert.deepEqual(got, Array.from({ length: 30 }, (_, i) => `restart-${i}`));
      // The first transaction taken after the restart is the one refused before it, id and body.
      const first = service.received[before]!;
      assert.deepEqual({ txnId: first.txnId, body: first.body }, pending);
      // Transaction ids rise: none reused for another body (delivered() checks), none skipped back.
      const ids = service.received.slice(before).map((r) => Number(r.txnId));
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
    });
  });
}
