// POST /publicRooms filter.room_types (v1.4): room types to list, null standing for rooms without
// one; each entry names its room_type. Over HTTP on both backends.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client } from '../sync/sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`publicRooms room_types on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: Client;
    let space: string;
    let plain: string;
    let custom: string;

    before(async () => {
      alice = new Client(hs, await hs.registerUser('alice', 'secret'));
      space = await alice.createRoom({ preset: 'public_chat', visibility: 'public', creation_content: { type: 'm.space' } });
      plain = await alice.createRoom({ preset: 'public_chat', visibility: 'public' });
      custom = await alice.createRoom({ preset: 'public_chat', visibility: 'public', creation_content: { type: 'org.example.board' } });
    });

    const listed = async (filter: object | undefined) => {
      const body = await alice.ok('POST', '/publicRooms', filter === undefined ? {} : { filter });
      return body as { chunk: any[]; total_room_count_estimate: number };
    };
    const ids = (chunk: any[]) => chunk.map((e) => e.room_id as string).sort();

    test('every type without the filter, or with an empty list; room_type in the entries', async () => {
      for (const filter of [undefined, {}, { room_types: [] }, { room_types: null }]) {
        const res = await listed(filter);
        assert.deepEqual(ids(res.chunk), [space, plain, custom].sort(), JSON.stringify(filter));
      }
      const entries = new Map((await listed(undefined)).chunk.map((e) => [e.room_id, e]));
      assert.equal(entries.get(space).room_type, 'm.space');
      assert.equal(entries.get(custom).room_type, 'org.example.board');
      assert.equal('room_type' in entries.get(plain), false);
    });

    test('["m.space"] lists spaces, [null] rooms without a type, both together both', async () => {
      const spaces = await listed({ room_types: ['m.space'] });
      assert.deepEqual(ids(spaces.chunk), [space]);
      assert.equal(spaces.total_room_count_estimate, 1);
      assert.deepEqual(ids((await listed({ room_types: [null] })).chunk), [plain]);
      assert.deepEqual(ids((await listed({ room_types: [null, 'm.space'] })).chunk), [space, plain].sort());
      assert.deepEqual(ids((await listed({ room_types: ['org.example.none'] })).chunk), []);
      // With a search term too.
      assert.deepEqual(ids((await listed({ room_types: ['m.space'], generic_search_term: 'nothing matches' })).chunk), []);
    });

    test('a room_types that is not a list of strings and nulls is 400 M_BAD_JSON', async () => {
      for (const room_types of ['m.space', [1], [{}]]) {
        const r = await alice.call('POST', '/publicRooms', { filter: { room_types } });
        assert.equal(r.status, 400, JSON.stringify(room_types));
        assert.equal(r.body.errcode, 'M_BAD_JSON');
      }
    });
  });
}
