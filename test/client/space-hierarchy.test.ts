// GET /_chat/client/v1/rooms/{roomId}/hierarchy over HTTP on SQLite and PostgreSQL: a three-level
// space with rooms of every visibility, walked depth first in the spec's child order, with
// max_depth, suggested_only, pages and their tokens, and the errors.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`space hierarchy on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);
    const rooms: Record<string, string> = {};
    const nameOf = (roomId: string) => Object.entries(rooms).find(([, id]) => id === roomId)?.[0] ?? roomId;
    let alice: Client;
    let bob: Client;
    let outsider: Client;

    const hierarchy = (who: Client, params: Record<string, string | number | boolean> = {}, root = rooms['S']!, path = `/_chat/client/v1/rooms/${enc(root)}/hierarchy`) => {
      const q = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
      return who.http.request('GET', `${path}${q === '' ? '' : `?${q}`}`);
    };
    const names = (body: { rooms: { room_id: string }[] }) => body.rooms.map((r) => nameOf(r.room_id));

    before(async () => {
      alice = await user('alice');
      bob = await user('bob');
      outsider = await user('outsider');
      const child = (space: string, room: string, content: object) => alice.ok('PUT', `/rooms/${enc(space)}/state/m.space.child/${enc(room)}`, content);
      rooms['S'] = await alice.createRoom({ preset: 'private_chat', name: 'Top', creation_content: { type: 'm.space' } });
      rooms['A'] = await alice.createRoom({ preset: 'public_chat', name: 'A' });
      rooms['B'] = await alice.createRoom({ preset: 'private_chat', name: 'B (invite only)' });
      rooms['S2'] = await alice.createRoom({ preset: 'public_chat', name: 'Sub-space', creation_content: { type: 'm.space' } });
      rooms['C'] = await alice.createRoom({
        preset: 'private_chat',
        name: 'C (world readable)',
        initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'world_readable' } }],
      });
      rooms['D'] = await alice.createRoom({
        room_version: '9',
        name: 'D (members of the space)',
        initial_state: [{ type: 'm.room.join_rules', state_key: '', content: { join_rule: 'restricted', allow: [{ type: 'm.room_membership', room_id: rooms['S'] }] } }],
      });
      rooms['E'] = await alice.createRoom({ preset: 'public_chat', name: 'E' });
      // Top: B and A ordered (B first), the sub-space, a room this server does not hold, and two
      // children the walk ignores (removed, and without via).
      await child(rooms['S'], rooms['A'], { via: ['localhost'], order: 'b', suggested: true });
      await child(rooms['S'], rooms['B'], { via: ['localhost'], order: 'a' });
      await child(rooms['S'], rooms['S2'], { via: ['localhost'] });
      await child(rooms['S'], '!unknown:elsewhere.example', { via: ['elsewhere.example'] });
      await child(rooms['S'], rooms['E'], {});
      await child(rooms['S'], '!novia:localhost', { suggested: true });
      // The sub-space: C, D and E by age, and Top again (a cycle).
      for (const r of ['C', 'D', 'E', 'S']) await child(rooms['S2'], rooms[r]!, { via: ['localhost'] });
      await alice.invite(rooms['S'], bob.userId);
      await bob.join(rooms['S']);
    });

    test('depth first in child order, each room once, rooms the user may not see left out', async () => {
      const mine = await hierarchy(alice);
      assert.equal(mine.status, 200, JSON.stringify(mine.body));
      assert.deepEqual(names(mine.body), ['S', 'B', 'A', 'S2', 'C', 'D', 'E']);
      assert.equal(mine.body.next_batch, undefined);
      const bobs = (await hierarchy(bob)).body;
      // B is invite-only; D is open to bob through the space he joined; C is world-readable.
      assert.deepEqual(names(bobs), ['S', 'A', 'S2', 'C', 'D', 'E']);
      const top = bobs.rooms[0];
      assert.deepEqual([top.name, top.room_type, top.num_joined_members, top.join_rule], ['Top', 'm.space', 2, 'invite']);
      assert.deepEqual(top.children_state.map((c: any) => nameOf(c.state_key)), ['B', 'A', 'S2', '!unknown:elsewhere.example']);
      const first = top.children_state[0];
      assert.deepEqual(Object.keys(first).sort(), ['content', 'origin_server_ts', 'sender', 'state_key', 'type']);
      assert.deepEqual([first.type, first.sender, first.content], ['m.space.child', alice.userId, { via: ['localhost'], order: 'a' }]);
      const d = bobs.rooms.find((r: any) => r.room_id === rooms['D']);
      assert.deepEqual([d.join_rule, d.allowed_room_ids, d.room_version], ['restricted', [rooms['S']], '9']);
      assert.deepEqual(bobs.rooms.find((r: any) => r.room_id === rooms['A']).children_state, []);
    });

    test('max_depth and suggested_only', async () => {
      assert.deepEqual(names((await hierarchy(bob, { max_depth: 0 })).body), ['S']);
      const one = (await hierarchy(bob, { max_depth: 1 })).body;
      assert.deepEqual(names(one), ['S', 'A', 'S2']);
      assert.equal(one.rooms[2].children_state.length, 4, "a room at the last level still lists its children");
      const suggested = (await hierarchy(bob, { suggested_only: true })).body;
      assert.deepEqual(names(suggested), ['S', 'A']);
      assert.deepEqual(suggested.rooms[0].children_state.map((c: any) => nameOf(c.state_key)), ['A']);
    });

    test('pages follow on from their token, which keeps its parameters and its user', async () => {
      const seen: string[] = [];
      let from: string | undefined;
      let pages = 0;
      do {
        const r = await hierarchy(bob, { limit: 2, ...(from !== undefined ? { from } : {}) });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.ok(r.body.rooms.length <= 2);
        seen.push(...names(r.body));
        from = r.body.next_batch;
        pages++;
      } while (from !== undefined && pages < 10);
      assert.deepEqual(seen, ['S', 'A', 'S2', 'C', 'D', 'E']);
      const first = (await hierarchy(bob, { limit: 1 })).body;
      const token = first.next_batch;
      assert.equal(typeof token, 'string');
      const changed = await hierarchy(bob, { limit: 1, from: token, max_depth: 1 });
      assert.deepEqual([changed.status, changed.body.errcode], [400, 'M_INVALID_PARAM']);
      const other = await hierarchy(alice, { from: (await hierarchy(bob, { limit: 1 })).body.next_batch });
      assert.deepEqual([other.status, other.body.errcode], [400, 'M_INVALID_PARAM']);
      const unknown = await hierarchy(bob, { from: 'nonsense' });
      assert.deepEqual([unknown.status, unknown.body.errcode], [400, 'M_INVALID_PARAM']);
    });

    test('a root the user may not see is 403; bad parameters 400; the unstable path answers too', async () => {
      const hidden = await hierarchy(outsider);
      assert.deepEqual([hidden.status, hidden.body.errcode], [403, 'M_FORBIDDEN']);
      const unknown = await hierarchy(bob, {}, '!nowhere:localhost');
      assert.deepEqual([unknown.status, unknown.body.errcode], [403, 'M_FORBIDDEN']);
      // A public sub-space is a root anyone may start from.
      assert.deepEqual(names((await hierarchy(outsider, {}, rooms['S2']!)).body), ['S2', 'C', 'E']);
      const bad: Record<string, string | number>[] = [{ limit: 0 }, { limit: 'x' }, { max_depth: -1 }, { suggested_only: 'yes' }];
      for (const params of bad) {
        const r = await hierarchy(bob, params);
        assert.deepEqual([r.status, r.body.errcode], [400, 'M_INVALID_PARAM'], JSON.stringify(params));
      }
      const unstable = await hierarchy(bob, {}, rooms['S']!, `/_matrix/client/unstable/org.matrix.msc2946/rooms/${enc(rooms['S']!)}/hierarchy`);
      assert.deepEqual(unstable.body, (await hierarchy(bob)).body);
    });
  });
}
