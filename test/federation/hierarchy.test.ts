// Spaces across two Hearth servers over TLS: a space on hs1 whose children live on hs2 lists them
// through hs2's federation /hierarchy (a sub-space's children from one answer, rooms hs2 keeps
// from hs1 left out), hs2 answers hs1's /hierarchy with what hs1 may see, and a room summary of a
// room hs1 is not in comes from the servers `via` names.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { enc, request } from '../e2e/support/client.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`space hierarchy across servers on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;
    let alice: TestUser;
    let bob: TestUser;
    const rooms: Record<string, string> = {};
    const nameOf = (roomId: string) => Object.entries(rooms).find(([, id]) => id === roomId)?.[0] ?? roomId;
    const call = (hs: TestServer, who: TestUser, method: string, path: string, body?: unknown) =>
      request(hs.baseUrl, method, `/_chat/client/${path}`, body, { token: who.accessToken });
    const ok = async (hs: TestServer, who: TestUser, method: string, path: string, body?: unknown) => {
      const r = await call(hs, who, method, path, body);
      assert.equal(r.status, 200, `${method} ${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const create = async (hs: TestServer, who: TestUser, body: object) => (await ok(hs, who, 'POST', 'v3/createRoom', body)).room_id as string;
    const child = (hs: TestServer, who: TestUser, space: string, room: string, server: string) =>
      ok(hs, who, 'PUT', `v3/rooms/${enc(space)}/state/m.space.child/${enc(room)}`, { via: [server] });

    before(async () => {
      net = await startFederationNet();
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend });
      alice = await hs1.registerUser('alice', 'alice-password');
      bob = await hs2.registerUser('bob', 'bob-password');
      rooms['S'] = await create(hs1, alice, { preset: 'private_chat', name: 'Space on hs1', creation_content: { type: 'm.space' } });
      rooms['A'] = await create(hs1, alice, { preset: 'public_chat', name: 'A on hs1' });
      rooms['R2'] = await create(hs2, bob, { preset: 'public_chat', name: 'R2 on hs2', topic: 'remote' });
      rooms['SS2'] = await create(hs2, bob, { preset: 'public_chat', name: 'Sub-space on hs2', creation_content: { type: 'm.space' } });
      rooms['R3'] = await create(hs2, bob, { preset: 'public_chat', name: 'R3 on hs2' });
      rooms['P2'] = await create(hs2, bob, { preset: 'private_chat', name: 'P2, invite only' });
      for (const r of ['A', 'R2', 'SS2', 'P2']) await child(hs1, alice, rooms['S'], rooms[r]!, r === 'A' ? 'hs1.test' : 'hs2.test');
      for (const r of ['R3', 'P2']) await child(hs2, bob, rooms['SS2'], rooms[r]!, 'hs2.test');
    });

    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await net?.close();
    });

    test("hs2 answers hs1's federation /hierarchy with the children hs1 may see", async () => {
      const res = await hs1.server.services.federation!.request({ destination: 'hs2.test', method: 'GET', path: `/federation/v1/hierarchy/${enc(rooms['SS2']!)}` });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const body = res.body as any;
      assert.equal(body.room.room_id, rooms['SS2']);
      assert.equal(body.room.room_type, 'm.space');
      assert.deepEqual(body.room.children_state.map((c: any) => nameOf(c.state_key)), ['R3', 'P2']);
      assert.deepEqual(body.children.map((c: any) => [nameOf(c.room_id), c.name, c.num_joined_members]), [['R3', 'R3 on hs2', 1]]);
      assert.deepEqual(body.inaccessible_children, [rooms['P2']]);
      const hidden = await hs1.server.services.federation!.request({ destination: 'hs2.test', method: 'GET', path: `/federation/v1/hierarchy/${enc(rooms['P2']!)}` });
      assert.deepEqual([hidden.status, (hidden.body as any).errcode], [404, 'M_NOT_FOUND']);
      const unsigned = await request(hs2.baseUrl, 'GET', `/_matrix/federation/v1/hierarchy/${enc(rooms['SS2']!)}`);
      assert.equal(unsigned.status, 401);
    });

    test("a space on hs1 lists its children on hs2, each once, without the room hs1 may not see", async () => {
      const page = await ok(hs1, alice, 'GET', `v1/rooms/${enc(rooms['S']!)}/hierarchy`);
      assert.deepEqual(page.rooms.map((r: any) => nameOf(r.room_id)), ['S', 'A', 'R2', 'SS2', 'R3']);
      const r2 = page.rooms.find((r: any) => r.room_id === rooms['R2']);
      assert.deepEqual([r2.name, r2.topic, r2.join_rule, r2.num_joined_members, r2.children_state], ['R2 on hs2', 'remote', 'public', 1, []]);
      const ss2 = page.rooms.find((r: any) => r.room_id === rooms['SS2']);
      assert.deepEqual(ss2.children_state.map((c: any) => nameOf(c.state_key)), ['R3', 'P2']);
      assert.equal(page.next_batch, undefined);
    });

    test('a summary of a room hs1 is not in comes from the servers via names', async () => {
      const without = await call(hs1, alice, 'GET', `v1/room_summary/${enc(rooms['R2']!)}`);
      assert.equal(without.status, 404);
      const summary = await ok(hs1, alice, 'GET', `v1/room_summary/${enc(rooms['R2']!)}?via=hs2.test`);
      assert.deepEqual([summary.room_id, summary.name, summary.join_rule, summary.membership], [rooms['R2'], 'R2 on hs2', 'public', 'leave']);
      const hidden = await call(hs1, alice, 'GET', `v1/room_summary/${enc(rooms['P2']!)}?via=hs2.test`);
      assert.equal(hidden.status, 404);
    });
  });
}
