// Ephemeral data to an application service that asked for it (`receive_ephemeral`), from a real
// server to a plain node:http receiver: typing and receipts of its rooms only (no one else's
// private receipts), presence of users sharing a room with its users, to-device messages to its
// users' devices; both the stable `ephemeral` and MSC2409's keys. A service that did not ask gets
// none. Receipts and to-device messages sent while the service is down and the server restarts
// arrive once afterwards: those in the transaction pending at the stop and those in none yet. Both storage backends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/index.js';
import { createServer, type HearthServer } from '../../src/context.js';
import { enc, request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';

const RETRY = { minMs: 20, maxMs: 200 };
const WAIT_MS = 15_000;

type Json = Record<string, unknown> & { type?: string; room_id?: string; sender?: string; content?: Record<string, unknown> };

interface Txn {
  readonly txnId: string;
  readonly body: string;
  readonly json: { events: Json[]; ephemeral?: Json[]; 'de.sorunome.msc2409.ephemeral'?: Json[]; 'de.sorunome.msc2409.to_device'?: Json[] };
}

/** Keeps every transaction; answers 503 while `down`. */
class Receiver {
  readonly txns: Txn[] = [];
  /** Transactions answered 503. */
  refused = 0;
  down = false;
  url = '';
  private server: Server | undefined;

  async start(): Promise<void> {
    this.server = createHttpServer(async (req, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      const m = /^\/_(?:chat|matrix)\/app\/v1\/transactions\/([^/?]+)/.exec(req.url ?? '');
      if (m === null || req.method !== 'PUT') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"errcode":"M_UNRECOGNIZED","error":"no"}');
        return;
      }
      if (this.down) {
        this.refused++;
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"errcode":"M_UNKNOWN","error":"down"}');
        return;
      }
      this.txns.push({ txnId: m[1]!, body, json: JSON.parse(body) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Each transaction once (a retry has the same id and must have the same body). */
  private distinct(): Txn[] {
    const seen = new Map<string, Txn>();
    for (const t of this.txns) {
      const earlier = seen.get(t.txnId);
      if (earlier !== undefined) assert.equal(t.body, earlier.body, `transaction ${t.txnId} sent twice with different bodies`);
      else seen.set(t.txnId, t);
    }
    return [...seen.values()];
  }

  ephemeral(): Json[] {
    return this.distinct().flatMap((t) => {
      const stable = t.json.ephemeral ?? [];
      assert.deepEqual(t.json['de.sorunome.msc2409.ephemeral'] ?? [], stable, 'both spellings carry the same ephemeral events');
      return stable;
    });
  }

  toDevice(): Json[] {
    return this.distinct().flatMap((t) => t.json['de.sorunome.msc2409.to_device'] ?? []);
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
  describe(`ephemeral data to an application service (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-appservice-ephemeral-'));
    const bridge = new Receiver();
    const quiet = new Receiver();
    let hs: TestServer;
    let running: HearthServer;
    let baseUrl: string;
    const call = async (method: string, path: string, payload?: unknown, token?: string) => {
      const r = await request(baseUrl, method, `/_chat/client/v3${path}`, payload, token !== undefined ? { token } : {});
      assert.ok(r.status === 200, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as Record<string, unknown>;
    };
    let owner: { userId: string; accessToken: string };
    let loner: { userId: string; accessToken: string };
    let bridged: string;
    let elsewhere: string;
    const ALICE = '@_br_alice:localhost';
    let txn = 0;

    before(async () => {
      await bridge.start();
      await quiet.start();
      const files = [join(dir, 'bridge.yaml'), join(dir, 'quiet.yaml')];
      writeFileSync(
        files[0]!,
        `id: bridge\nurl: ${bridge.url}\nas_token: bridge-as-token-0123\nhs_token: bridge-hs-token-0123\nsender_localpart: bridgebot\n` +
          `receive_ephemeral: true\nnamespaces:\n  users:\n    - exclusive: true\n      regex: '@_br_.*:localhost'\n`,
      );
      writeFileSync(
        files[1]!,
        `id: quiet\nurl: ${quiet.url}\nas_token: quiet-as-token-0123\nhs_token: quiet-hs-token-0123\nsender_localpart: quietbot\n` +
          `namespaces:\n  users:\n    - exclusive: false\n      regex: '@owner:localhost'\n`,
      );
      hs = await startTestServer({ backend, config: { app_service_config_files: files }, appServiceRetry: RETRY });
      running = hs.server;
      baseUrl = hs.baseUrl;
      owner = await hs.registerUser('owner', 'owner-password');
      loner = await hs.registerUser('loner', 'loner-password');
      bridged = (await call('POST', '/createRoom', { preset: 'public_chat' }, owner.accessToken))['room_id'] as string;
      elsewhere = (await call('POST', '/createRoom', { preset: 'private_chat' }, loner.accessToken))['room_id'] as string;
      // The bridged user, with a device of its own (MSC3202's masquerading needs one; to-device messages go to it).
      await call('POST', '/register', { type: 'm.login.application_service', username: '_br_alice', inhibit_login: true }, 'bridge-as-token-0123');
      await call('POST', '/login', { type: 'm.login.application_service', identifier: { type: 'm.id.user', user: ALICE }, device_id: 'BRIDGEDEV' }, 'bridge-as-token-0123');
      await call('POST', `/join/${enc(bridged)}?user_id=${enc(ALICE)}`, {}, 'bridge-as-token-0123');
    });
    after(async () => {
      await running?.close();
      await hs?.close();
      await bridge.close();
      await quiet.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('typing in its rooms, and none of other rooms', async () => {
      await call('PUT', `/rooms/${enc(elsewhere)}/typing/${enc(loner.userId)}`, { typing: true, timeout: 30_000 }, loner.accessToken);
      await call('PUT', `/rooms/${enc(bridged)}/typing/${enc(owner.userId)}`, { typing: true, timeout: 30_000 }, owner.accessToken);
      const typing = await until('typing in the bridged room', () =>
        bridge.ephemeral().find((e) => e.type === 'm.typing' && e.room_id === bridged && (e.content?.['user_ids'] as string[]).includes(owner.userId)),
      );
      assert.deepEqual(typing.content, { user_ids: [owner.userId] });
      await call('PUT', `/rooms/${enc(bridged)}/typing/${enc(owner.userId)}`, { typing: false }, owner.accessToken);
      await until('typing stopped', () => bridge.ephemeral().some((e) => e.type === 'm.typing' && e.room_id === bridged && (e.content?.['user_ids'] as string[]).length === 0));
      assert.ok(!bridge.ephemeral().some((e) => e.room_id === elsewhere), 'nothing of a room without its users');
    });

    test('typing right after one of its users joined a room is sent with the typing user', async () => {
      const fresh = (await call('POST', '/createRoom', { preset: 'public_chat' }, owner.accessToken))['room_id'] as string;
      // The room's first events are read by the service's queue (and judged of no interest) first.
      await new Promise((r) => setTimeout(r, 200));
      await call('POST', `/join/${enc(fresh)}?user_id=${enc(ALICE)}`, {}, 'bridge-as-token-0123');
      await call('PUT', `/rooms/${enc(fresh)}/typing/${enc(owner.userId)}`, { typing: true, timeout: 30_000 }, owner.accessToken);
      const typing = await until('typing in the fresh room', () => bridge.ephemeral().find((e) => e.type === 'm.typing' && e.room_id === fresh));
      assert.deepEqual(typing.content, { user_ids: [owner.userId] });
    });

    test('public receipts in its rooms; others’ private receipts never', async () => {
      const first = (await call('PUT', `/rooms/${enc(bridged)}/send/m.room.message/t${++txn}`, { msgtype: 'm.text', body: 'one' }, owner.accessToken))['event_id'] as string;
      const second = (await call('PUT', `/rooms/${enc(bridged)}/send/m.room.message/t${++txn}`, { msgtype: 'm.text', body: 'two' }, owner.accessToken))['event_id'] as string;
      await call('POST', `/rooms/${enc(bridged)}/receipt/m.read.private/${enc(first)}`, {}, owner.accessToken);
      await call('POST', `/rooms/${enc(bridged)}/receipt/m.read/${enc(second)}`, {}, owner.accessToken);
      const receipt = await until('the public receipt', () => bridge.ephemeral().find((e) => e.type === 'm.receipt' && e.room_id === bridged && second in (e.content ?? {})));
      assert.equal(typeof (receipt.content as Record<string, Record<string, Record<string, { ts: number }>>>)[second]!['m.read']![owner.userId]!.ts, 'number');
      assert.ok(!bridge.ephemeral().some((e) => e.type === 'm.receipt' && JSON.stringify(e.content).includes('m.read.private')), 'no private receipt');
    });

    test('presence of users sharing a room with its users, not of others', async () => {
      await call('PUT', `/presence/${enc(loner.userId)}/status`, { presence: 'online', status_msg: 'alone' }, loner.accessToken);
      await call('PUT', `/presence/${enc(owner.userId)}/status`, { presence: 'online', status_msg: 'bridging' }, owner.accessToken);
      const p = await until('the owner’s presence', () => bridge.ephemeral().find((e) => e.type === 'm.presence' && e.sender === owner.userId && e.content?.['status_msg'] === 'bridging'));
      assert.equal(p.content?.['presence'], 'online');
      assert.ok(!bridge.ephemeral().some((e) => e.type === 'm.presence' && e.sender === loner.userId), 'no presence of a user sharing no room with its users');
    });

    test("to-device messages to its users' devices, with the recipient named", async () => {
      await call('PUT', `/sendToDevice/m.test/${++txn}`, { messages: { [loner.userId]: { '*': { secret: 'not for the bridge' } } } }, owner.accessToken);
      await call('PUT', `/sendToDevice/m.test/${++txn}`, { messages: { [ALICE]: { BRIDGEDEV: { hello: 'alice' } } } }, owner.accessToken);
      const m = await until('the to-device message', () => bridge.toDevice().find((e) => e.type === 'm.test'));
      assert.deepEqual(m, { type: 'm.test', sender: owner.userId, to_user_id: ALICE, to_device_id: 'BRIDGEDEV', content: { hello: 'alice' } });
      assert.equal(bridge.toDevice().length, 1);
    });

    test('a service that did not ask for ephemeral data gets none', async () => {
      await until('the quiet service has events', () => quiet.txns.length > 0);
      for (const t of quiet.txns) {
        assert.deepEqual(Object.keys(t.json), ['events'], `transaction ${t.txnId}: ${t.body}`);
        assert.ok(t.json.events.length > 0);
      }
    });

    test('receipts and to-device messages sent while the service is down and the server restarts arrive once afterwards', async () => {
      bridge.down = true;
      const event = (await call('PUT', `/rooms/${enc(bridged)}/send/m.room.message/t${++txn}`, { msgtype: 'm.text', body: 'three' }, owner.accessToken))['event_id'] as string;
      await call('POST', `/rooms/${enc(bridged)}/receipt/m.read/${enc(event)}`, {}, owner.accessToken);
      // The receipt's transaction is stored and refused; what follows is in no transaction yet
      // when the server stops, and is found again from where the service was delivered up to.
      const refused = bridge.refused;
      await until('a refused transaction', () => bridge.refused > refused);
      await call('PUT', `/sendToDevice/m.test.restart/${++txn}`, { messages: { [ALICE]: { BRIDGEDEV: { n: 1 } } } }, owner.accessToken);
      await running.close();
      const { config } = loadConfig(hs.configPath, {});
      running = await createServer(config, { closeGraceMs: 1000, logger: false, appServiceRetry: RETRY });
      baseUrl = (await running.listen())[0]!.url;
      await call('PUT', `/sendToDevice/m.test.restart/${++txn}`, { messages: { [ALICE]: { BRIDGEDEV: { n: 2 } } } }, owner.accessToken);
      bridge.down = false;
      await until('both to-device messages', () => bridge.toDevice().filter((e) => e.type === 'm.test.restart').length >= 2);
      await until('the receipt', () => bridge.ephemeral().some((e) => e.type === 'm.receipt' && event in (e.content ?? {})));
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        bridge.toDevice().filter((e) => e.type === 'm.test.restart').map((e) => e.content?.['n']),
        [1, 2],
      );
      assert.equal(bridge.ephemeral().filter((e) => e.type === 'm.receipt' && event in (e.content ?? {})).length, 1);
    });
  });
}
