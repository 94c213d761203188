// The EDUs end-to-end encryption and presence need, both ways between real servers over TLS:
// hs1.test (127.0.0.2, naming `chat`) and hs2.test (127.0.0.3, naming `matrix`). Alice on hs1 and
// Bob on hs2 share a public room of hs1's that Bob joined through it. Asserted through the client
// API over HTTP: to-device messages (m.direct_to_device) arrive exactly once, also when sent again;
// a new device or new cross-signing keys (m.device_list_update, m.signing_key_update) show in the
// other side's /sync `device_lists.changed`; presence (m.presence) shows in /sync `presence`. EDUs
// claiming another server's users, or users sharing no room with ours, are ignored. Last, hs3.test
// has no DNS record at first: a to-device message for its user waits in hs2's queue and arrives
// once hs3 can be found.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FederationClient, FederationRequest } from '../../src/federation/client.js';
import type { JsonValue } from '../../src/protocol/json.js';
import { CrossSigning } from '../client/e2ee-keys.js';
import { ApiClient, enc, request } from '../e2e/support/client.js';
import { eventually } from '../support/eventually.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

const PREFIX = '/_chat/client/v3';
/** Waits for what crosses between servers: a few transactions on loopback, with room for a slow machine. */
const CROSSING_MS = 15_000;
/** The queue's pauses after failures: short, so that a test waits for delivery, not for backoff. */
const RETRY = { minMs: 100, maxMs: 500 };

const clientOf = (hs: TestServer, user: TestUser) => new ApiClient(hs.baseUrl, PREFIX, user.userId, user.accessToken, user.deviceId);

/** A syncing client: each poll carries on from the last token and keeps what every response held. */
class Syncer {
  since: string | undefined;
  readonly toDevice: any[] = [];
  readonly changed = new Set<string>();
  readonly presence: any[] = [];

  constructor(readonly api: ApiClient) {}

  async poll(): Promise<any> {
    const body = await this.api.sync({ timeout: 0, ...(this.since !== undefined ? { since: this.since } : {}) });
    this.since = body.next_batch;
    this.toDevice.push(...(body.to_device?.events ?? []));
    for (const u of body.device_lists?.changed ?? []) this.changed.add(u);
    this.presence.push(...(body.presence?.events ?? []));
    return body;
  }

  /** The first poll: what it holds (messages left from earlier tests, the state so far) is not kept. */
  async begin(): Promise<void> {
    await this.poll();
    this.toDevice.length = 0;
    this.changed.clear();
    this.presence.length = 0;
  }

  /** Polls until `ready` holds of what was received. */
  async until(ready: () => boolean, what: string, ms = CROSSING_MS): Promise<void> {
    await eventually(async () => (await this.poll(), ready()), what, ms);
  }
}

/** Records the EDUs a server sends from now on (its federation client, wrapped); `stop` unwraps it. */
function captureEdus(hs: TestServer): { edus: { destination: string; edu_type: string; content: any }[]; stop: () => void } {
  const client = hs.server.services.federation! as FederationClient & { request: FederationClient['request'] };
  const original = client.request;
  const edus: { destination: string; edu_type: string; content: any }[] = [];
  client.request = (req: FederationRequest) => {
    const body = req.body as any;
    if (req.path.startsWith('/federation/v1/send/')) for (const e of body?.edus ?? []) edus.push({ destination: req.destination, ...e });
    return original.call(client, req);
  };
  return { edus, stop: () => void (client.request = original) };
}

async function login(hs: TestServer, localpart: string, password: string): Promise<TestUser> {
  const res = await request(hs.baseUrl, 'POST', `${PREFIX}/login`, { type: 'm.login.password', identifier: { type: 'm.id.user', user: localpart }, password });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { userId: res.body!.user_id as string, accessToken: res.body!.access_token as string, deviceId: res.body!.device_id as string };
}

for (const { backend, skip } of await serverBackends()) {
  describe(`EDUs for encryption and presence between two servers on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;
    let alice: TestUser;
    let bob: TestUser;
    let roomId: string;

    before(async () => {
      net = await startFederationNet();
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend, federation: { senderRetry: RETRY } });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend, federation: { senderRetry: RETRY } });
      alice = await hs1.registerUser('alice', 'alice-password');
      bob = await hs2.registerUser('bob', 'bob-password');
      const created = await clientOf(hs1, alice).ok('POST', '/createRoom', { preset: 'public_chat', room_version: '10' });
      roomId = created.room_id as string;
      await clientOf(hs2, bob).ok('POST', `/join/${enc(roomId)}?via=hs1.test`, {});
    });

    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await net?.close();
    });

    const federation = (hs: TestServer): FederationClient => hs.server.services.federation!;
    let txn = 0;
    /** A transaction of EDUs from hs2 to hs1, as hs2 signs it. */
    const fromHs2 = async (edus: { edu_type: string; content: JsonValue }[]) => {
      const res = await federation(hs2).request({
        destination: 'hs1.test',
        method: 'PUT',
        path: `/federation/v1/send/forged-${txn++}`,
        body: { origin: 'hs2.test', origin_server_ts: Date.now(), pdus: [], edus },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };

    test("bob's to-device message reaches alice's device once, also when the client sends it again", async () => {
      const aliceSync = new Syncer(clientOf(hs1, alice));
      await aliceSync.begin();
      const bobApi = clientOf(hs2, bob);
      const sent = captureEdus(hs2);
      const send = (txnId: string, body: string) =>
        bobApi.ok('PUT', `/sendToDevice/m.test.hello/${txnId}`, { messages: { [alice.userId]: { [alice.deviceId]: { body } } } });
      await send('t1', 'first');
      await aliceSync.until(() => aliceSync.toDevice.length > 0, 'the first message reaches alice');
      assert.deepEqual(aliceSync.toDevice, [{ sender: bob.userId, type: 'm.test.hello', content: { body: 'first' } }]);
      // On the wire: {sender, type, message_id, messages}, to hs1 only.
      sent.stop();
      assert.equal(sent.edus.length, 1);
      const [edu] = sent.edus;
      assert.equal(edu!.destination, 'hs1.test');
      assert.equal(edu!.edu_type, 'm.direct_to_device');
      assert.deepEqual(Object.keys(edu!.content).sort(), ['message_id', 'messages', 'sender', 'type']);
      assert.ok(typeof edu!.content.message_id === 'string' && edu!.content.message_id.length <= 32);
      assert.deepEqual(edu!.content.messages, { [alice.userId]: { [alice.deviceId]: { body: 'first' } } });
      // The same transaction id again queues nothing; a later message comes after where a copy would.
      await send('t1', 'first');
      await send('t2', 'second');
      await aliceSync.until(() => aliceSync.toDevice.length > 1, 'the second message reaches alice');
      await aliceSync.poll();
      assert.deepEqual(aliceSync.toDevice.map((e) => e.content.body), ['first', 'second']);
      // hs2's queue is empty once hs1 took them.
      await eventually(async () => (await hs2.server.core.db.selectFrom('federation_outbound_edus').selectAll().execute()).length === 0, 'the queue drains');
    });

    test('the same message id from the same origin and sender is delivered once; * reaches every device', async () => {
      const second = await login(hs1, 'alice', 'alice-password');
      const syncs = [new Syncer(clientOf(hs1, alice)), new Syncer(clientOf(hs1, second))];
      for (const s of syncs) await s.begin();
      const edu = { edu_type: 'm.direct_to_device', content: { sender: bob.userId, type: 'm.test.star', message_id: 'same-id', messages: { [alice.userId]: { '*': { n: 1 } } } } };
      await fromHs2([edu]);
      await fromHs2([edu]);
      await fromHs2([{ ...edu, content: { ...edu.content, message_id: 'next-id', messages: { [alice.userId]: { '*': { n: 2 } } } } }]);
      for (const s of syncs) {
        await s.until(() => s.toDevice.length >= 2, 'both messages reach the device');
        await s.poll();
        assert.deepEqual(s.toDevice.map((e) => [e.sender, e.type, e.content.n]), [
          [bob.userId, 'm.test.star', 1],
          [bob.userId, 'm.test.star', 2],
        ]);
      }
      await clientOf(hs1, second).ok('POST', '/logout', {});
    });

    test("alice's new device and new cross-signing keys show in bob's device_lists.changed, and bob's in hers", async () => {
      const bobSync = new Syncer(clientOf(hs2, bob));
      await bobSync.begin();
      const sent = captureEdus(hs1);
      const laptop = await login(hs1, 'alice', 'alice-password');
      await bobSync.until(() => bobSync.changed.has(alice.userId), "alice's new device is news on hs2");
      const update = sent.edus.find((e) => e.edu_type === 'm.device_list_update' && e.content.device_id === laptop.deviceId);
      assert.ok(update, JSON.stringify(sent.edus));
      assert.equal(update.destination, 'hs2.test');
      assert.equal(update.content.user_id, alice.userId);
      assert.equal(typeof update.content.stream_id, 'number');
      assert.ok(Array.isArray(update.content.prev_id));
      assert.equal(update.content.deleted, undefined);

      // Cross-signing keys: m.signing_key_update.
      await bobSync.begin();
      const cs = new CrossSigning(alice.userId);
      await clientOf(hs1, laptop).ok('POST', '/keys/device_signing/upload', cs.upload());
      // hs2 may still be settling the device update (a resync marks alice changed again), so news of
      // alice alone is not proof: wait for the signing-key EDU as well.
      const isSigning = (e: { edu_type: string }) => e.edu_type === 'm.signing_key_update';
      await bobSync.until(() => bobSync.changed.has(alice.userId) && sent.edus.some(isSigning), "alice's cross-signing keys are news on hs2");
      sent.stop();
      const signing = sent.edus.find(isSigning);
      assert.ok(signing, JSON.stringify(sent.edus));
      assert.deepEqual(signing.content, { user_id: alice.userId, master_key: cs.masterKey, self_signing_key: cs.selfSigningKey });
      await eventually(async () => {
        const keys = await clientOf(hs2, bob).ok('POST', '/keys/query', { device_keys: { [alice.userId]: [] } });
        return JSON.stringify(keys.master_keys?.[alice.userId]?.keys) === JSON.stringify(cs.masterKey.keys);
      }, "bob's server knows alice's master key");

      // And the other way: bob logs in again; alice's sync hears of it.
      const aliceSync = new Syncer(clientOf(hs1, alice));
      await aliceSync.begin();
      const before = aliceSync.since!;
      await login(hs2, 'bob', 'bob-password');
      await aliceSync.until(() => aliceSync.changed.has(bob.userId), "bob's new device is news on hs1");
      // /keys/changes says the same.
      const changes = await clientOf(hs1, alice).ok('GET', `/keys/changes?from=${enc(before)}&to=${enc(aliceSync.since!)}`);
      assert.ok(changes.changed.includes(bob.userId), JSON.stringify(changes));
    });

    test("alice's presence, unavailable with a status message, shows in bob's sync", async () => {
      const bobSync = new Syncer(clientOf(hs2, bob));
      await bobSync.begin();
      const sent = captureEdus(hs1);
      await clientOf(hs1, alice).ok('PUT', `/presence/${enc(alice.userId)}/status`, { presence: 'unavailable', status_msg: 'Out to lunch' });
      const isLunch = (e: any) => e.sender === alice.userId && e.content.presence === 'unavailable' && e.content.status_msg === 'Out to lunch';
      await bobSync.until(() => bobSync.presence.some(isLunch), "alice's presence reaches bob");
      sent.stop();
      const pushed = sent.edus.filter((e) => e.edu_type === 'm.presence').flatMap((e) => e.content.push);
      const lunch = pushed.find((p: any) => p.presence === 'unavailable');
      assert.deepEqual(Object.keys(lunch).sort(), ['currently_active', 'last_active_ago', 'presence', 'status_msg', 'user_id']);
      assert.equal(lunch.user_id, alice.userId);
      const read = await clientOf(hs2, bob).ok('GET', `/presence/${enc(alice.userId)}/status`);
      assert.equal(read.presence, 'unavailable');
      assert.equal(read.status_msg, 'Out to lunch');
    });

    test("EDUs claiming another server's users, or users sharing no room with ours, are ignored", async () => {
      const aliceSync = new Syncer(clientOf(hs1, alice));
      await aliceSync.begin();
      const mallory = '@mallory:hs3.test';
      const stranger = '@stranger:hs2.test';
      await fromHs2([
        // Another server's user, and one of hs1's own.
        { edu_type: 'm.direct_to_device', content: { sender: mallory, type: 'm.test.forged', message_id: 'f1', messages: { [alice.userId]: { [alice.deviceId]: { x: 1 } } } } },
        { edu_type: 'm.direct_to_device', content: { sender: alice.userId, type: 'm.test.forged', message_id: 'f2', messages: { [alice.userId]: { [alice.deviceId]: { x: 2 } } } } },
        { edu_type: 'm.device_list_update', content: { user_id: mallory, device_id: 'X', stream_id: 1, prev_id: [] } },
        { edu_type: 'm.device_list_update', content: { user_id: alice.userId, device_id: 'X', stream_id: 1, prev_id: [] } },
        { edu_type: 'm.signing_key_update', content: { user_id: mallory } },
        { edu_type: 'm.presence', content: { push: [
          { user_id: alice.userId, presence: 'offline', last_active_ago: 0 },
          { user_id: mallory, presence: 'online', last_active_ago: 0 },
          // hs2's own user, but in no room with hs1's users.
          { user_id: stranger, presence: 'online', last_active_ago: 0 },
        ] } },
        { edu_type: 'm.device_list_update', content: { user_id: stranger, device_id: 'X', stream_id: 1, prev_id: [] } },
      ]);
      // A genuine one after them: once it is seen, the forged ones had their chance.
      await fromHs2([{ edu_type: 'm.direct_to_device', content: { sender: bob.userId, type: 'm.test.genuine', message_id: 'g1', messages: { [alice.userId]: { [alice.deviceId]: {} } } } }]);
      await aliceSync.until(() => aliceSync.toDevice.length > 0, 'the genuine message arrives');
      assert.deepEqual(aliceSync.toDevice.map((e) => e.type), ['m.test.genuine']);
      assert.deepEqual([...aliceSync.changed], []);
      assert.deepEqual(aliceSync.presence.filter((e) => e.sender === mallory || e.sender === stranger), []);
      const own = await clientOf(hs1, alice).ok('GET', `/presence/${enc(alice.userId)}/status`);
      assert.equal(own.presence, 'unavailable');
      const stored = await hs1.server.core.db.selectFrom('presence').select('user_id').where('user_id', 'in', [mallory, stranger]).execute();
      assert.deepEqual(stored, []);
      const changes = await hs1.server.core.db.selectFrom('device_list_changes').select('user_id').where('user_id', 'in', [mallory, stranger]).execute();
      assert.deepEqual(changes, []);
    });

    describe('a server that cannot be found at first', () => {
      let hs3: TestServer;
      let carol: TestUser;

      before(async () => {
        hs3 = await startFederatedServer(net, { name: 'hs3.test', address: '127.0.0.4', naming: 'chat', backend, federation: { senderRetry: RETRY } });
        // Published by its SRV record, but its name has no address yet.
        net.dns.records.delete('hs3.test');
        carol = await hs3.registerUser('carol', 'carol-password');
      });

      after(async () => {
        await hs3?.close();
      });

      test("bob's message to carol waits in hs2's queue and arrives once hs3.test resolves", async () => {
        const carolSync = new Syncer(clientOf(hs3, carol));
        await carolSync.begin();
        await clientOf(hs2, bob).ok('PUT', '/sendToDevice/m.test.later/l1', { messages: { [carol.userId]: { [carol.deviceId]: { body: 'when you can' } } } });
        const queued = () => hs2.server.core.db.selectFrom('federation_outbound_edus').select(['destination', 'edu_type']).where('destination', '=', 'hs3.test').execute();
        // Tried and failed a few times (pauses of 100 ms doubling to 500 ms), still queued.
        await new Promise((r) => setTimeout(r, 1500));
        assert.deepEqual(await queued(), [{ destination: 'hs3.test', edu_type: 'm.direct_to_device' }]);
        await carolSync.poll();
        assert.deepEqual(carolSync.toDevice, []);

        net.dns.set('hs3.test', { a: ['127.0.0.4'] });
        await carolSync.until(() => carolSync.toDevice.length > 0, 'the message reaches carol');
        assert.deepEqual(carolSync.toDevice, [{ sender: bob.userId, type: 'm.test.later', content: { body: 'when you can' } }]);
        await eventually(async () => (await queued()).length === 0, 'the queue drains');
      });
    });
  });
}
