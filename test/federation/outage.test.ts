// Servers that go away and come back. Two real Hearth servers share a room (as in rooms.test.ts);
// one is stopped, its process state gone but its database, data folder and signing key kept, and
// started again on the same address and port (restartable-server.ts).
// - What the other server sent meanwhile arrives once it is back: all of it, in order.
// - Both sides change the room's state while cut off from each other (a fork); once they reach
//   each other again and each sends a message citing what it has, they agree on the state.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type { JsonObject } from '../../src/protocol/json.js';
import { enc, request } from '../e2e/support/client.js';
import { eventually } from '../support/eventually.js';
import { type FederationNet, startFederationNet } from '../support/federation-net.js';
import { type RestartableServer, restartableFederatedServer } from '../support/restartable-server.js';
import { type Backend, type TestUser, serverBackends } from '../support/server.js';

/** How long what one server sent may take to reach the other, a restart included. */
const ARRIVES_MS = 30_000;
const MESSAGES = 50;

interface Pair {
  readonly net: FederationNet;
  readonly hs1: RestartableServer;
  readonly hs2: RestartableServer;
}

/** hs1.test and hs2.test on a net of their own, their senders retrying quickly; closed afterwards. */
async function withTwoServers(backend: Backend, fn: (pair: Pair) => Promise<void>): Promise<void> {
  const net = await startFederationNet();
  const servers: RestartableServer[] = [];
  try {
    const federation = { senderRetry: { minMs: 100, maxMs: 1000 } };
    const hs1 = await restartableFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend, federation });
    servers.push(hs1);
    const hs2 = await restartableFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend, federation });
    servers.push(hs2);
    await fn({ net, hs1, hs2 });
  } finally {
    for (const hs of servers) await hs.close().catch(() => undefined);
    await net.close();
  }
}

const call = (hs: RestartableServer, user: TestUser, method: string, path: string, body?: JsonObject) =>
  request(hs.baseUrl, method, `/_chat/client/v3${path}`, body, { token: user.accessToken });

let txn = 0;
async function say(hs: RestartableServer, user: TestUser, roomId: string, body: string): Promise<string> {
  const res = await call(hs, user, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/t${++txn}`, { msgtype: 'm.text', body });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body!['event_id'] as string;
}

/** The message bodies `user` reads on `hs`, oldest first (paged back from the newest). */
async function bodies(hs: RestartableServer, user: TestUser, roomId: string): Promise<string[]> {
  const res = await call(hs, user, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=200`);
  if (res.status !== 200) return [];
  return (res.body!['chunk'] as JsonObject[])
    .filter((e) => e['type'] === 'm.room.message')
    .map((e) => (e['content'] as JsonObject)['body'] as string)
    .reverse();
}

async function createSharedRoom(hs1: RestartableServer, alice: TestUser, hs2: RestartableServer, bob: TestUser): Promise<string> {
  const created = await call(hs1, alice, 'POST', '/createRoom', { preset: 'public_chat' });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const roomId = created.body!['room_id'] as string;
  const joined = await call(hs2, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
  assert.equal(joined.status, 200, JSON.stringify(joined.body));
  return roomId;
}

for (const { backend, skip } of await serverBackends()) {
  describe(`servers going down and coming back on ${backend}`, { skip }, () => {
    test('messages sent while a server is stopped all reach it, in order, once it is started again', () =>
      withTwoServers(backend, async ({ hs1, hs2 }) => {
        const alice = await hs1.registerUser('alice', 'alice-password');
        const bob = await hs2.registerUser('bob', 'bob-password');
        const roomId = await createSharedRoom(hs1, alice, hs2, bob);
        await say(hs1, alice, roomId, 'before the outage');
        await eventually(async () => (await bodies(hs2, bob, roomId)).includes('before the outage'), 'the first message on hs2', ARRIVES_MS);

        await hs2.stop();
        const expected = Array.from({ length: MESSAGES }, (_, n) => `outage #${n}`);
        for (const body of expected) await say(hs1, alice, roomId, body);
        // hs2 is unreachable: hs1 keeps the messages queued, backing off.
        const sender = hs1.server.services.federationSender!;
        const stuckAt = sender.position('hs2.test');
        assert.notEqual(stuckAt, undefined, 'hs1 has a queue for hs2');
        await new Promise((r) => setTimeout(r, 1500));
        assert.equal(sender.position('hs2.test'), stuckAt, 'nothing was delivered to the stopped server');

        await hs2.start();
        const outage = async () => (await bodies(hs2, bob, roomId)).filter((b) => b.startsWith('outage #'));
        await eventually(async () => (await outage()).length === MESSAGES, `all ${MESSAGES} messages on hs2`, ARRIVES_MS).catch(async (err: Error) => {
          throw new Error(`${err.message}; hs2 has ${JSON.stringify(await outage())}`);
        });
        assert.deepEqual(await outage(), expected, 'in the order alice sent them');
        // bob (hs2 restarted: a new process, the same key) is heard on hs1.
        await say(hs2, bob, roomId, 'bob is back');
        await eventually(async () => (await bodies(hs1, alice, roomId)).includes('bob is back'), "bob's message on hs1", ARRIVES_MS);
        const onHs1 = await bodies(hs1, alice, roomId);
        assert.deepEqual(onHs1.slice(-MESSAGES - 1), [...expected, 'bob is back']);
      }));

    test('two servers that changed power levels and members while cut off agree on the state', () =>
      withTwoServers(backend, async ({ hs1, hs2 }) => {
        const alice = await hs1.registerUser('alice', 'alice-password');
        const carol = await hs1.registerUser('carol', 'carol-password');
        const bob = await hs2.registerUser('bob', 'bob-password');
        const erin = await hs2.registerUser('erin', 'erin-password');
        const dave = '@dave:hs2.test';
        const room = await createSharedRoom(hs1, alice, hs2, bob);
        const state = async (hs: RestartableServer, user: TestUser) => {
          const res = await call(hs, user, 'GET', `/rooms/${enc(room)}/state`);
          assert.equal(res.status, 200, JSON.stringify(res.body));
          return res.body as JsonObject[];
        };
        const powerLevels = async (hs: RestartableServer, user: TestUser) => {
          const res = await call(hs, user, 'GET', `/rooms/${enc(room)}/state/m.room.power_levels`);
          assert.equal(res.status, 200, JSON.stringify(res.body));
          return res.body as JsonObject;
        };
        const membership = async (hs: RestartableServer, user: TestUser, of: string) => {
          const res = await call(hs, user, 'GET', `/rooms/${enc(room)}/state/m.room.member/${enc(of)}`);
          return res.status === 200 ? (res.body!['membership'] as string) : `status ${res.status}`;
        };
        const setLevel = async (hs: RestartableServer, user: TestUser, of: string, level: number) => {
          const content = await powerLevels(hs, user);
          const res = await call(hs, user, 'PUT', `/rooms/${enc(room)}/state/m.room.power_levels`, {
            ...content,
            users: { ...(content['users'] as JsonObject), [of]: level },
          });
          assert.equal(res.status, 200, JSON.stringify(res.body));
        };
        const invite = async (hs: RestartableServer, user: TestUser, of: string) => {
          const res = await call(hs, user, 'POST', `/rooms/${enc(room)}/invite`, { user_id: of });
          assert.equal(res.status, 200, JSON.stringify(res.body));
        };

        await setLevel(hs1, alice, bob.userId, 100);
        await eventually(async () => ((await powerLevels(hs2, bob))['users'] as JsonObject)[bob.userId] === 100, "bob's level 100 on hs2", ARRIVES_MS);

        // hs2 down: alice raises carol and invites her; hs2 sees none of it.
        await hs2.stop();
        await setLevel(hs1, alice, carol.userId, 50);
        await invite(hs1, alice, carol.userId);
        const alicesLevels = await powerLevels(hs1, alice);
        // hs1 down before hs2 is back: bob, on hs2's stale state, raises dave and invites erin.
        await hs1.stop();
        await hs2.start();
        await setLevel(hs2, bob, dave, 50);
        await invite(hs2, bob, erin.userId);
        const bobsLevels = await powerLevels(hs2, bob);
        assert.equal((bobsLevels['users'] as JsonObject)[carol.userId], undefined, 'hs2 missed alice’s change');
        await hs1.start();

        // Each side's fork reaches the other.
        await eventually(async () => (await membership(hs1, alice, erin.userId)) === 'invite', "bob's invite on hs1", ARRIVES_MS);
        await eventually(async () => (await membership(hs2, bob, carol.userId)) === 'invite', "alice's invite on hs2", ARRIVES_MS);
        // A message from each server cites its extremities: the forks merge.
        await say(hs1, alice, room, 'merge from hs1');
        await say(hs2, bob, room, 'merge from hs2');
        for (const [hs, user] of [[hs1, alice], [hs2, bob]] as const) {
          await eventually(async () => {
            const seen = await bodies(hs, user, room);
            return seen.includes('merge from hs1') && seen.includes('merge from hs2');
          }, `both merges on ${hs.serverName}`, ARRIVES_MS);
        }

        const summary = async (hs: RestartableServer, user: TestUser) =>
          (await state(hs, user)).map((e) => `${e['type'] as string}|${e['state_key'] as string}|${e['event_id'] as string}`).sort();
        let last: [string[], string[]] = [[], []];
        await eventually(
          async () => {
            last = [await summary(hs1, alice), await summary(hs2, bob)];
            return JSON.stringify(last[0]) === JSON.stringify(last[1]);
          },
          'the same state on both servers',
          ARRIVES_MS,
        ).catch((err: Error) => {
          const [a, b] = last;
          throw new Error(`${err.message}: only on hs1 ${JSON.stringify(a.filter((x) => !b.includes(x)))}, only on hs2 ${JSON.stringify(b.filter((x) => !a.includes(x)))}`);
        });
        const levels1 = await powerLevels(hs1, alice);
        const levels2 = await powerLevels(hs2, bob);
        assert.deepEqual(levels1, levels2);
        // One side's power levels won, whole.
        const users = levels1['users'] as JsonObject;
        assert.equal(users[alice.userId], 100);
        assert.equal(users[bob.userId], 100);
        assert.ok(
          isDeepStrictEqual(levels1, alicesLevels) || isDeepStrictEqual(levels1, bobsLevels),
          `one side's power levels: ${JSON.stringify(levels1)}`,
        );
        for (const [hs, user] of [[hs1, alice], [hs2, bob]] as const) {
          assert.equal(await membership(hs, user, carol.userId), 'invite');
          assert.equal(await membership(hs, user, erin.userId), 'invite');
          const joined = await call(hs, user, 'GET', `/rooms/${enc(room)}/joined_members`);
          assert.deepEqual(Object.keys(joined.body!['joined'] as JsonObject).sort(), [alice.userId, bob.userId].sort());
        }
      }));
  });
}
