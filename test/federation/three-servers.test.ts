// Three Hearth servers in one room: hs1.test and hs3.test speak the `chat` naming, hs2.test the
// `matrix` one, so each pair finds out which naming the other answers; hs1 and hs2 are found by
// SRV records, hs3 by its well-known. Users of all three talk at
// once and two of them change the topic at the same moment; every server ends with the same
// messages, the same members and the same topic (the room's forks merged by state resolution).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../src/protocol/json.js';
import { enc, request } from '../e2e/support/client.js';
import { eventually } from '../support/eventually.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

const ARRIVES_MS = 20_000;
const MESSAGES_EACH = 5;

for (const { backend, skip } of await serverBackends()) {
  describe(`three servers in one room on ${backend}`, { skip }, () => {
    let net: FederationNet;
    const servers: TestServer[] = [];
    const users: TestUser[] = [];
    let roomId: string;

    before(async () => {
      net = await startFederationNet();
      const retry = { senderRetry: { minMs: 100, maxMs: 1000 } };
      servers.push(await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend, federation: retry }));
      servers.push(await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend, federation: retry }));
      servers.push(await startFederatedServer(net, { name: 'hs3.test', address: '127.0.0.4', naming: 'chat', discovery: 'well-known', backend, federation: retry }));
      for (const [i, name] of ['alice', 'bob', 'carol'].entries()) users.push(await servers[i]!.registerUser(name, `${name}-password`));
    });

    after(async () => {
      for (const hs of servers) await hs.close();
      await net?.close();
    });

    const call = (i: number, method: string, path: string, body?: JsonObject) =>
      request(servers[i]!.baseUrl, method, `/_chat/client/v3${path}`, body, { token: users[i]!.accessToken });

    test('all three join, talk at once, and agree on the messages, the members and the topic', async () => {
      const created = await call(0, 'POST', '/createRoom', { preset: 'public_chat', power_level_content_override: { events: { 'm.room.topic': 0 } } });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      roomId = created.body!['room_id'] as string;
      for (const i of [1, 2]) {
        const joined = await call(i, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
        assert.equal(joined.status, 200, JSON.stringify(joined.body));
      }
      const everyone = users.map((u) => u.userId).sort();
      const members = async (i: number) => Object.keys(((await call(i, 'GET', `/rooms/${enc(roomId)}/joined_members`)).body!['joined'] as JsonObject) ?? {}).sort();
      for (const i of [0, 1, 2]) await eventually(async () => JSON.stringify(await members(i)) === JSON.stringify(everyone), `every member on hs${i + 1}`, ARRIVES_MS);

      // At once: everyone's messages, and two topics.
      const sends: Promise<unknown>[] = [];
      for (const i of [0, 1, 2]) {
        for (let n = 0; n < MESSAGES_EACH; n++) {
          sends.push(call(i, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/m${n}`, { msgtype: 'm.text', body: `hs${i + 1} #${n}` }));
        }
      }
      sends.push(call(1, 'PUT', `/rooms/${enc(roomId)}/state/m.room.topic`, { topic: 'from hs2' }));
      sends.push(call(2, 'PUT', `/rooms/${enc(roomId)}/state/m.room.topic`, { topic: 'from hs3' }));
      for (const res of (await Promise.all(sends)) as { status: number }[]) assert.equal(res.status, 200);

      const expected = [0, 1, 2].flatMap((i) => Array.from({ length: MESSAGES_EACH }, (_, n) => `hs${i + 1} #${n}`)).sort();
      const bodies = async (i: number) => {
        const res = await call(i, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=100`);
        return ((res.body!['chunk'] as JsonObject[]) ?? [])
          .filter((e) => e['type'] === 'm.room.message')
          .map((e) => (e['content'] as JsonObject)['body'] as string)
          .sort();
      };
      for (const i of [0, 1, 2]) {
        await eventually(async () => JSON.stringify(await bodies(i)) === JSON.stringify(expected), `every message on hs${i + 1}`, ARRIVES_MS);
      }
      // One topic everywhere once the forks are merged: a message from each server cites what it has.
      for (const i of [0, 1, 2]) await call(i, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/merge`, { msgtype: 'm.text', body: `merge ${i}` });
      const topic = async (i: number) => (await call(i, 'GET', `/rooms/${enc(roomId)}/state/m.room.topic`)).body!['topic'];
      await eventually(
        async () => {
          const topics = await Promise.all([0, 1, 2].map(topic));
          return topics.every((t) => t === topics[0]) && (topics[0] === 'from hs2' || topics[0] === 'from hs3');
        },
        'one topic on every server',
        ARRIVES_MS,
      );
      for (const i of [0, 1, 2]) assert.deepEqual(await members(i), everyone);
    });
  });
}
