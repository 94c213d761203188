// A room of version 12 across servers: alice on hs1 creates it (its id names no server), bob on
// hs2 joins by its id with a `via` and by alias, both talk, the creator's infinite power holds on
// both servers (hs2 refuses bob's kick of her, and applies her ban of him), and hs2 answers for
// the room's create event, which has no room_id, when hs3 joins through it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../src/protocol/json.js';
import { enc, request } from '../e2e/support/client.js';
import { eventually } from '../support/eventually.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

const ARRIVES_MS = 15_000;

for (const { backend, skip } of await serverBackends()) {
  describe(`room version 12 across servers on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;
    let hs3: TestServer;
    let alice: TestUser;
    let bob: TestUser;
    let carol: TestUser;
    let roomId: string;

    before(async () => {
      net = await startFederationNet();
      const federation = { senderRetry: { minMs: 100, maxMs: 1000 } };
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend, federation });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend, federation });
      hs3 = await startFederatedServer(net, { name: 'hs3.test', address: '127.0.0.4', naming: 'matrix', backend, federation });
      alice = await hs1.registerUser('alice', 'alice-password');
      bob = await hs2.registerUser('bob', 'bob-password');
      carol = await hs3.registerUser('carol', 'carol-password');
    });

    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await hs3?.close();
      await net?.close();
    });

    const call = (hs: TestServer, user: TestUser, method: string, path: string, body?: JsonObject) =>
      request(hs.baseUrl, method, `/_chat/client/v3${path}`, body, { token: user.accessToken });
    const messages = async (hs: TestServer, user: TestUser) =>
      ((await call(hs, user, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=20`)).body!['chunk'] as JsonObject[]).map((e) => (e['content'] as JsonObject)['body']);

    test('bob on hs2 joins by the room id with a via, and both talk', async () => {
      const created = await call(hs1, alice, 'POST', '/createRoom', { preset: 'public_chat', room_version: '12', room_alias_name: 'hydra', name: 'Hydra' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      roomId = created.body!['room_id'] as string;
      assert.match(roomId, /^![A-Za-z0-9_-]{43}$/);
      // Without a via there is no server to ask: the id names none.
      const blind = await call(hs2, bob, 'POST', `/join/${enc(roomId)}`, {});
      assert.equal(blind.status, 404, JSON.stringify(blind.body));
      const joined = await call(hs2, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      assert.equal(joined.body!['room_id'], roomId);
      const create = await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/state/m.room.create`);
      assert.equal(create.body!['room_version'], '12');
      assert.equal((await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/state/m.room.name`)).body!['name'], 'Hydra');

      assert.equal((await call(hs2, bob, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/b1`, { msgtype: 'm.text', body: 'from bob' })).status, 200);
      assert.equal((await call(hs1, alice, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/a1`, { msgtype: 'm.text', body: 'from alice' })).status, 200);
      await eventually(async () => (await messages(hs1, alice)).includes('from bob'), "bob's message on hs1", ARRIVES_MS);
      await eventually(async () => (await messages(hs2, bob)).includes('from alice'), "alice's message on hs2", ARRIVES_MS);
    });

    test("hs3 joins through the alias; the create event it is given has no room_id", async () => {
      const joined = await call(hs3, carol, 'POST', `/join/${enc('#hydra:hs1.test')}`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      assert.equal(joined.body!['room_id'], roomId);
      const event = await request(hs3.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(roomId)}/event/${enc('$' + roomId.slice(1))}`, undefined, { token: carol.accessToken });
      assert.equal(event.status, 200, JSON.stringify(event.body));
      assert.equal(event.body!['type'], 'm.room.create');
      assert.equal(event.body!['room_id'], roomId);
      // History from before carol's join comes from hs1 when she pages back.
      await eventually(async () => (await messages(hs3, carol)).includes('from alice'), 'history on hs3', ARRIVES_MS);
    });

    test('invites into a v12 room: one joins by the id alone (through the inviter’s server), one rejects', async () => {
      const dave = await hs2.registerUser('dave', 'dave-password');
      const erin = await hs2.registerUser('erin', 'erin-password');
      const created = await call(hs1, alice, 'POST', '/createRoom', { preset: 'private_chat', room_version: '12', name: 'Hydra, private' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const privateId = created.body!['room_id'] as string;
      const member = async (of: string) => (await call(hs1, alice, 'GET', `/rooms/${enc(privateId)}/state/m.room.member/${enc(of)}`)).body?.['membership'];
      // Invite-only: without an invite hs1 refuses dave.
      assert.equal((await call(hs2, dave, 'POST', `/join/${enc(privateId)}?via=hs1.test`, {})).status, 403);
      for (const u of [dave, erin]) assert.equal((await call(hs1, alice, 'POST', `/rooms/${enc(privateId)}/invite`, { user_id: u.userId })).status, 200);
      // The invite arrives with the room's stripped state, the create event's included.
      const sync = await call(hs2, dave, 'GET', '/sync');
      const invite = (((sync.body!['rooms'] as JsonObject)['invite'] as JsonObject)[privateId] as JsonObject | undefined);
      assert.ok(invite !== undefined, 'the invite is in dave’s sync');
      const stripped = (invite['invite_state'] as JsonObject)['events'] as JsonObject[];
      assert.ok(stripped.some((e) => e['type'] === 'm.room.name' && (e['content'] as JsonObject)['name'] === 'Hydra, private'));
      assert.ok(stripped.some((e) => e['type'] === 'm.room.create' && (e['content'] as JsonObject)['room_version'] === '12'));
      // The id names no server: hs2 goes through the inviter's.
      const joined = await call(hs2, dave, 'POST', `/join/${enc(privateId)}`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      assert.equal(await member(dave.userId), 'join');
      // erin rejects: the leave reaches hs1.
      const rejected = await call(hs2, erin, 'POST', `/rooms/${enc(privateId)}/leave`, {});
      assert.equal(rejected.status, 200, JSON.stringify(rejected.body));
      await eventually(async () => (await member(erin.userId)) === 'leave', 'erin’s rejection on hs1', ARRIVES_MS);
    });

    test('knocks on a v12 room: one let in by an invite joins, one withdrawn reaches the room', async () => {
      const frank = await hs2.registerUser('frank', 'frank-password');
      const gina = await hs2.registerUser('gina', 'gina-password');
      const created = await call(hs1, alice, 'POST', '/createRoom', {
        preset: 'private_chat',
        room_version: '12',
        name: 'Knock on hydra',
        initial_state: [{ type: 'm.room.join_rules', state_key: '', content: { join_rule: 'knock' } }],
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const knockId = created.body!['room_id'] as string;
      const member = async (of: string) => (await call(hs1, alice, 'GET', `/rooms/${enc(knockId)}/state/m.room.member/${enc(of)}`)).body?.['membership'];
      // The id names no server: a knock needs a via.
      assert.equal((await call(hs2, frank, 'POST', `/knock/${enc(knockId)}`, {})).status, 404);
      for (const u of [frank, gina]) {
        const knocked = await call(hs2, u, 'POST', `/knock/${enc(knockId)}?via=hs1.test`, { reason: 'let me in' });
        assert.equal(knocked.status, 200, JSON.stringify(knocked.body));
        assert.equal(await member(u.userId), 'knock');
      }
      const sync = await call(hs2, frank, 'GET', '/sync');
      const knock = ((sync.body!['rooms'] as JsonObject)['knock'] as JsonObject | undefined)?.[knockId] as JsonObject | undefined;
      assert.ok(knock !== undefined, JSON.stringify(sync.body!['rooms']));
      // gina thinks better of it while no one of hs2 is in the room: hs1 learns of it.
      const withdrawn = await call(hs2, gina, 'POST', `/rooms/${enc(knockId)}/leave`, {});
      assert.equal(withdrawn.status, 200, JSON.stringify(withdrawn.body));
      await eventually(async () => (await member(gina.userId)) === 'leave', 'gina’s withdrawal on hs1', ARRIVES_MS);
      // alice lets frank in; he joins by the id alone, through the inviter's server.
      assert.equal((await call(hs1, alice, 'POST', `/rooms/${enc(knockId)}/invite`, { user_id: frank.userId })).status, 200);
      const joined = await call(hs2, frank, 'POST', `/join/${enc(knockId)}`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      assert.equal(await member(frank.userId), 'join');
    });

    test("the creator's infinite power holds on every server", async () => {
      // Bob made admin at 100 still cannot kick alice: hs2 refuses it itself.
      const levels = (await call(hs1, alice, 'GET', `/rooms/${enc(roomId)}/state/m.room.power_levels`)).body!;
      assert.deepEqual(levels['users'], {});
      const raised = await call(hs1, alice, 'PUT', `/rooms/${enc(roomId)}/state/m.room.power_levels/`, { ...levels, users: { [bob.userId]: 100 } });
      assert.equal(raised.status, 200);
      await eventually(
        async () => ((await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/state/m.room.power_levels`)).body!['users'] as JsonObject)[bob.userId] === 100,
        'the raised levels on hs2',
        ARRIVES_MS,
      );
      const kick = await call(hs2, bob, 'POST', `/rooms/${enc(roomId)}/kick`, { user_id: alice.userId });
      assert.equal(kick.status, 403, JSON.stringify(kick.body));
      // Alice bans bob, at 100: hs2 applies it.
      assert.equal((await call(hs1, alice, 'POST', `/rooms/${enc(roomId)}/ban`, { user_id: bob.userId })).status, 200);
      await eventually(
        async () => (await call(hs3, carol, 'GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(bob.userId)}`)).body!['membership'] === 'ban',
        'the ban on hs3',
        ARRIVES_MS,
      );
      const member = await call(hs3, carol, 'GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(bob.userId)}`);
      assert.equal(member.body!['membership'], 'ban');
      const late = await call(hs2, bob, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/b2`, { msgtype: 'm.text', body: 'banned' });
      assert.equal(late.status, 403);
    });
  });
}
