// Push notifications end to end, on SQLite and PostgreSQL, against a push gateway the test runs
// on loopback: a message to a room pushes the other members' pushers (full and event_id_only
// bodies, counts, priority, tweaks), never the sender's; ignored senders and unnotifying events
// push nothing; an invite pushes the invitee; a failing gateway gets every notification once, in
// order, when it recovers, also across a restart of the server; a rejected pushkey removes its
// pusher; GET /notifications lists what notified, newest first, with `read`, `only=highlight`
// and paging.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createServer, type HearthServer } from '../../src/context.js';
import { enc, request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';

const RETRY = { minMs: 20, maxMs: 200 };
const AS_TOKEN = 'bridge-as-token-0123456789';
const WAIT_MS = 15_000;

interface Pushed {
  readonly path: string;
  readonly notification: any;
}

/** A push gateway: records what it is sent; `mode` makes it fail or reject pushkeys. */
class TestGateway {
  private server: Server | undefined;
  url = '';
  readonly received: Pushed[] = [];
  mode: 'up' | 'down' = 'up';
  readonly rejecting = new Set<string>();

  async start(): Promise<void> {
    this.server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.mode === 'down') {
          res.writeHead(503).end('{}');
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        this.received.push({ path: req.url ?? '', notification: body.notification });
        const rejected = (body.notification?.devices ?? []).map((d: any) => d.pushkey).filter((k: string) => this.rejecting.has(k));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ rejected }));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/_matrix/push/v1/notify`;
  }

  /** Notifications for one pushkey, in the order they came. */
  to(pushkey: string): any[] {
    return this.received.filter((p) => p.notification.devices.some((d: any) => d.pushkey === pushkey)).map((p) => p.notification);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const { backend, skip } of await serverBackends()) {
  describe(`push notifications (${backend})`, { skip }, () => {
    const gateway = new TestGateway();
    let hs: TestServer;
    let running: HearthServer;
    let baseUrl: string;
    let alice: TestUser;
    let bob: TestUser;
    let carol: TestUser;
    let room: string;
    const call = async (user: TestUser, method: string, path: string, payload?: unknown, status = 200) => {
      const r = await request(baseUrl, method, `/_chat/client/v3${path}`, payload, { token: user.accessToken });
      assert.equal(r.status, status, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as any;
    };
    let txn = 0;
    const send = async (user: TestUser, roomId: string, content: Record<string, unknown>) =>
      (await call(user, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/t${++txn}`, content))['event_id'] as string;
    const setPusher = (user: TestUser, pushkey: string, data: Record<string, unknown> = {}) =>
      call(user, 'POST', '/pushers/set', {
        kind: 'http',
        app_id: 'org.example.app',
        app_display_name: 'Example',
        device_display_name: 'Phone',
        pushkey,
        lang: 'en',
        data: { url: gateway.url, ...data },
      });

    const dir = mkdtempSync(join(tmpdir(), 'hearth-push-'));
    before(async () => {
      await gateway.start();
      // A bridge that receives nothing: its users are in rooms but are never notified.
      const registration = join(dir, 'bridge.yaml');
      writeFileSync(
        registration,
        `id: bridge\nurl: null\nas_token: ${AS_TOKEN}\nhs_token: bridge-hs-token-0123456789\nsender_localpart: bridgebot\n` +
          `namespaces:\n  users:\n    - exclusive: true\n      regex: '@_bridge_.*:localhost'\n`,
      );
      hs = await startTestServer({ backend, pushRetry: RETRY, config: { app_service_config_files: [registration] } });
      running = hs.server;
      baseUrl = hs.baseUrl;
      alice = await hs.registerUser('alice', 'alice-password');
      bob = await hs.registerUser('bob', 'bob-password');
      carol = await hs.registerUser('carol', 'carol-password');
      await call(bob, 'PUT', `/profile/${enc(bob.userId)}/displayname`, { displayname: 'Bob B' });
      room = (await call(alice, 'POST', '/createRoom', { preset: 'public_chat', name: 'Garden' }))['room_id'];
      await call(bob, 'POST', `/join/${enc(room)}`, {});
      await setPusher(alice, 'alice-full');
      await setPusher(alice, 'alice-ids', { format: 'event_id_only' });
    });
    after(async () => {
      await running?.close();
      await hs?.close();
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a message pushes the other member: the full body and the event_id_only one', async () => {
      const eventId = await send(bob, room, { msgtype: 'm.text', body: 'hello there' });
      const [full] = await until('the full push', () => gateway.to('alice-full').length > 0 && gateway.to('alice-full'));
      const [ids] = await until('the event_id_only push', () => gateway.to('alice-ids').length > 0 && gateway.to('alice-ids'));
      assert.equal(gateway.received[0]!.path, '/_matrix/push/v1/notify');
      assert.equal(full.event_id, eventId);
      assert.equal(full.room_id, room);
      assert.equal(full.type, 'm.room.message');
      assert.equal(full.sender, bob.userId);
      assert.equal(full.sender_display_name, 'Bob B');
      assert.equal(full.room_name, 'Garden');
      assert.deepEqual(full.content, { msgtype: 'm.text', body: 'hello there' });
      assert.deepEqual(full.counts, { unread: 1 });
      // Two members: the one-to-one rule, with its sound.
      assert.equal(full.prio, 'high');
      assert.equal(full.devices.length, 1);
      const [device] = full.devices;
      assert.equal(device.app_id, 'org.example.app');
      assert.equal(device.pushkey, 'alice-full');
      assert.equal(typeof device.pushkey_ts, 'number');
      assert.ok(device.pushkey_ts < 1e11, 'pushkey_ts is in seconds');
      assert.deepEqual(device.data, {});
      assert.equal(device.tweaks.sound, 'default');
      assert.deepEqual(Object.keys(ids).sort(), ['counts', 'devices', 'event_id', 'prio', 'room_id']);
      assert.equal(ids.event_id, eventId);
      assert.deepEqual(ids.devices[0].data, { format: 'event_id_only' });
      // The sender's own message pushes none of their pushers.
      await setPusher(bob, 'bob-key');
      await send(bob, room, { msgtype: 'm.text', body: 'bob again' });
      await until('the second push', () => gateway.to('alice-full').length === 2);
      await pause(100);
      assert.equal(gateway.to('bob-key').length, 0);
    });

    test('GET /notifications: newest first, read after a receipt, only=highlight, paging', async () => {
      const mention = await send(bob, room, { msgtype: 'm.text', body: 'alice: look', 'm.mentions': { user_ids: [alice.userId] } });
      await until('the mention push', () => gateway.to('alice-full').some((n) => n.event_id === mention));
      const all = await call(alice, 'GET', '/notifications');
      const bodies = all.notifications.map((n: any) => n.event.content.body);
      assert.deepEqual(bodies.slice(0, 3), ['alice: look', 'bob again', 'hello there']);
      const first = all.notifications[0];
      assert.equal(first.room_id, room);
      assert.equal(first.read, false);
      assert.equal(typeof first.ts, 'number');
      assert.equal(first.event.event_id, mention);
      assert.ok(first.actions.includes('notify'));
      assert.ok(first.actions.some((a: any) => a.set_tweak === 'highlight' && a.value !== false));
      const highlights = await call(alice, 'GET', '/notifications?only=highlight');
      assert.deepEqual(highlights.notifications.map((n: any) => n.event.event_id), [mention]);
      // Pages of one, following next_token.
      const seen: string[] = [];
      let from: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await call(alice, 'GET', `/notifications?limit=1${from !== undefined ? `&from=${enc(from)}` : ''}`);
        seen.push(...page.notifications.map((n: any) => n.event.content.body));
        if (page.next_token === undefined) break;
        from = page.next_token;
      }
      assert.deepEqual(seen, bodies);
      // A read receipt on the mention marks it and what came before as read.
      await call(alice, 'POST', `/rooms/${enc(room)}/receipt/m.read/${enc(mention)}`, {});
      const after = await call(alice, 'GET', '/notifications');
      assert.ok(after.notifications.every((n: any) => n.read === true));
      // Bad input.
      const bad = await request(baseUrl, 'GET', '/_chat/client/v3/notifications?from=nonsense', undefined, { token: alice.accessToken });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errcode, 'M_INVALID_PARAM');
      const badLimit = await request(baseUrl, 'GET', '/_chat/client/v3/notifications?limit=x', undefined, { token: alice.accessToken });
      assert.equal(badLimit.status, 400);
      const anonymous = await request(baseUrl, 'GET', '/_chat/client/v3/notifications');
      assert.equal(anonymous.status, 401);
      // Bob's list does not hold alice's notifications.
      const bobs = await call(bob, 'GET', '/notifications');
      assert.ok(bobs.notifications.every((n: any) => n.event.sender !== bob.userId));
    });

    test('the badge counts rooms with unread notifications', async () => {
      const other = (await call(carol, 'POST', '/createRoom', { preset: 'public_chat', invite: [alice.userId] }))['room_id'];
      // The invite pushes alice.
      const invite = await until('the invite push', () => gateway.to('alice-full').find((n) => n.type === 'm.room.member' && n.room_id === other));
      assert.equal(invite.user_is_target, true);
      assert.equal(invite.membership, 'invite');
      await call(alice, 'POST', `/join/${enc(other)}`, {});
      await send(carol, other, { msgtype: 'm.text', body: 'in the other room' });
      const pushed = await until('the other room push', () => gateway.to('alice-full').find((n) => n.content?.body === 'in the other room'));
      // The first room was read up to its latest notification; the other has two unread.
      assert.deepEqual(pushed.counts, { unread: 1 });
      await send(bob, room, { msgtype: 'm.text', body: 'back in the garden' });
      const both = await until('the garden push', () => gateway.to('alice-full').find((n) => n.content?.body === 'back in the garden'));
      assert.deepEqual(both.counts, { unread: 2 });
    });

    test('threaded receipts: each notification is read by its own thread, and so is the badge', async () => {
      const other = (await call(alice, 'GET', '/joined_rooms'))['joined_rooms'].find((r: string) => r !== room) as string;
      const latest = async (roomId: string) => (await call(alice, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=1`))['chunk'][0]['event_id'] as string;
      const receipt = (roomId: string, eventId: string, body: object = {}) => call(alice, 'POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(eventId)}`, body);
      await receipt(other, await latest(other));
      await receipt(room, await latest(room));
      const inThread = (root: string, body: string) => send(bob, room, { msgtype: 'm.text', body, 'm.relates_to': { rel_type: 'm.thread', event_id: root } });
      const pushedFor = (eventId: string) => until(`the push of ${eventId}`, () => gateway.to('alice-full').find((n) => n.event_id === eventId));
      const readFlags = async () => {
        const list = await call(alice, 'GET', '/notifications?limit=50');
        return new Map<string, boolean>(list.notifications.map((n: any) => [n.event.event_id, n.read]));
      };

      const root = await send(bob, room, { msgtype: 'm.text', body: 'a thread starts' });
      const t1 = await inThread(root, 'in the thread');
      const m1 = await send(bob, room, { msgtype: 'm.text', body: 'and the main timeline' });
      assert.deepEqual((await pushedFor(m1)).counts, { unread: 1 });

      // Reading the thread up to t1 reads t1 only, though it comes after the root.
      await receipt(room, t1, { thread_id: root });
      let read = await readFlags();
      assert.deepEqual([read.get(root), read.get(t1), read.get(m1)], [false, true, false]);
      await receipt(room, m1, { thread_id: 'main' });
      read = await readFlags();
      assert.deepEqual([read.get(root), read.get(t1), read.get(m1)], [true, true, true]);

      // The main timeline is read past t2, the thread is not: the room is still unread.
      const t2 = await inThread(root, 'the thread goes on');
      const m2 = await send(bob, room, { msgtype: 'm.text', body: 'main goes on' });
      await pushedFor(m2);
      await receipt(room, m2, { thread_id: 'main' });
      read = await readFlags();
      assert.deepEqual([read.get(t2), read.get(m2)], [false, true]);
      const elsewhere = await send(carol, other, { msgtype: 'm.text', body: 'meanwhile, elsewhere' });
      assert.deepEqual((await pushedFor(elsewhere)).counts, { unread: 2 });
      // An unthreaded receipt reads every thread.
      await receipt(room, m2);
      read = await readFlags();
      assert.equal(read.get(t2), true);
    });

    test('an ignored sender and a notice push nothing', async () => {
      await call(carol, 'POST', `/join/${enc(room)}`, {});
      const before = gateway.to('alice-full').length;
      await call(alice, 'PUT', `/user/${enc(alice.userId)}/account_data/m.ignored_user_list`, { ignored_users: { [bob.userId]: {} } });
      await send(bob, room, { msgtype: 'm.text', body: 'ignored' });
      await send(bob, room, { msgtype: 'm.notice', body: 'a notice' });
      // Events are evaluated in order: once carol's message is pushed, bob's were looked at.
      await send(carol, room, { msgtype: 'm.text', body: 'from carol' });
      await until("carol's push", () => gateway.to('alice-full').some((n) => n.content?.body === 'from carol'));
      await call(alice, 'PUT', `/user/${enc(alice.userId)}/account_data/m.ignored_user_list`, { ignored_users: {} });
      await send(bob, room, { msgtype: 'm.text', body: 'heard again' });
      await until('the next push', () => gateway.to('alice-full').some((n) => n.content?.body === 'heard again'));
      const bodies = gateway.to('alice-full').slice(before).map((n) => n.content?.body);
      assert.deepEqual(bodies, ['from carol', 'heard again']);
    });

    test('a failing gateway gets every notification once, in order, when it recovers, across a restart', async () => {
      gateway.mode = 'down';
      const sent: string[] = [];
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        sent.push(`outage-${i}`);
        ids.push(await send(bob, room, { msgtype: 'm.text', body: `outage-${i}` }));
      }
      await pause(150);
      // The server stops and starts again on the same database while the gateway is still down.
      const config = hs.config;
      await running.close();
      running = await createServer(config, { closeGraceMs: 1000, logger: false, pushRetry: RETRY });
      baseUrl = (await running.listen())[0]!.url;
      for (let i = 10; i < 15; i++) {
        sent.push(`outage-${i}`);
        ids.push(await send(bob, room, { msgtype: 'm.text', body: `outage-${i}` }));
      }
      gateway.mode = 'up';
      await until('the 15 full pushes', () => gateway.to('alice-full').some((n) => n.content?.body === 'outage-14'));
      const idsPushed = () => gateway.to('alice-ids').map((n) => n.event_id).filter((id) => ids.includes(id));
      await until('the 15 event_id_only pushes', () => idsPushed().length >= 15);
      await pause(100);
      assert.deepEqual(idsPushed(), ids);
      const got = gateway.to('alice-full').map((n) => n.content?.body).filter((b) => typeof b === 'string' && b.startsWith('outage-'));
      assert.deepEqual(got, sent);
    });

    test('a pushkey the gateway rejects removes its pusher', async () => {
      gateway.rejecting.add('alice-ids');
      await send(bob, room, { msgtype: 'm.text', body: 'rejected' });
      await until('the pusher is removed', async () => {
        const list = await call(alice, 'GET', '/pushers');
        return list.pushers.every((p: any) => p.pushkey !== 'alice-ids');
      });
      const list = await call(alice, 'GET', '/pushers');
      assert.deepEqual(list.pushers.map((p: any) => p.pushkey), ['alice-full']);
    });

    test("an application service's users are not notified", async () => {
      const asCall = async (method: string, path: string, payload?: unknown) => {
        const r = await request(baseUrl, method, `/_chat/client/v3${path}`, payload, { token: AS_TOKEN });
        assert.equal(r.status, 200, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
        return r.body as any;
      };
      await asCall('POST', '/register', { type: 'm.login.application_service', username: '_bridge_dora', inhibit_login: true });
      const dora = enc('@_bridge_dora:localhost');
      await asCall('POST', `/join/${enc(room)}?user_id=${dora}`, {});
      await asCall('POST', `/join/${enc(room)}`, {});
      const eventId = await send(bob, room, { msgtype: 'm.text', body: 'for the humans', 'm.mentions': { user_ids: ['@_bridge_dora:localhost', '@bridgebot:localhost'] } });
      await until("alice's push", () => gateway.to('alice-full').some((n) => n.event_id === eventId));
      assert.deepEqual((await asCall('GET', `/notifications?user_id=${dora}`)).notifications, []);
      assert.deepEqual((await asCall('GET', '/notifications')).notifications, []);
      await asCall('POST', `/rooms/${enc(room)}/leave?user_id=${dora}`, {});
      await asCall('POST', `/rooms/${enc(room)}/leave`, {});
    });
  });
}
