import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { FilterService } from '../../src/users/filters.js';
import { storageBackends } from '../support/databases.js';
import { SERVER, useDatabase } from './user-data-support.js';

const rejects = (errcode: string, status: number) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

for (const backend of await storageBackends()) {
  describe(`filters on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    let filters: FilterService;
    const alice = `@alice:${SERVER}`;
    const bob = `@bob:${SERVER}`;
    const timeline = { room: { timeline: { limit: 10, types: ['m.room.message'] } }, presence: { not_types: ['*'] } };

    test('upload returns an id that reads back the filter as written', async () => {
      filters = new FilterService({ db: h.db });
      const id = await filters.createFilter(alice, alice, timeline);
      assert.match(id, /^[0-9]+$/);
      assert.deepEqual(await filters.getStoredFilter(alice, alice, id), timeline);
      // Unknown keys are kept as written.
      const withExtra = { ...timeline, org_example: { x: 1.5 } };
      const id2 = await filters.createFilter(alice, alice, withExtra);
      assert.notEqual(id2, id);
      assert.deepEqual(await filters.getStoredFilter(alice, alice, id2), withExtra);
    });

    test('the same filter again gets the same id; another user gets their own', async () => {
      const id = await filters.createFilter(alice, alice, timeline);
      const reordered = { presence: { not_types: ['*'] }, room: { timeline: { types: ['m.room.message'], limit: 10 } } };
      assert.equal(await filters.createFilter(alice, alice, reordered), id);
      const bobs = await filters.createFilter(bob, bob, timeline);
      assert.notEqual(bobs, id);
      await assert.rejects(filters.getStoredFilter(bob, bob, id), rejects('M_NOT_FOUND', 404));
      await assert.rejects(filters.getStoredFilter(alice, alice, bobs), rejects('M_NOT_FOUND', 404));
    });

    test('errors: invalid filters 400, other users 403, unknown ids 404', async () => {
      await assert.rejects(filters.createFilter(alice, alice, { room: { timeline: { limit: 'ten' } } }), rejects('M_BAD_JSON', 400));
      await assert.rejects(filters.createFilter(alice, alice, { room: { rooms: ['nope'] } }), rejects('M_BAD_JSON', 400));
      await assert.rejects(filters.createFilter(bob, alice, {}), rejects('M_FORBIDDEN', 403));
      await assert.rejects(filters.getStoredFilter(bob, alice, '1'), rejects('M_FORBIDDEN', 403));
      for (const id of ['999999', 'abc', '', '{}', '1.0']) {
        await assert.rejects(filters.getStoredFilter(alice, alice, id), rejects('M_NOT_FOUND', 404), id);
      }
    });

    test('getFilter for sync takes a stored id or inline JSON', async () => {
      const id = await filters.createFilter(alice, alice, timeline);
      const stored = await filters.getFilter(alice, id);
      assert.deepEqual(stored.json, timeline);
      assert.equal(stored.compiled.timeline.limit, 10);
      assert.equal(stored.compiled.timeline.matches({ type: 'm.room.member' }), false);
      assert.equal(stored.compiled.presence.matches({ type: 'm.presence' }), false);

      const inline = await filters.getFilter(alice, '{"room":{"state":{"lazy_load_members":true}}}');
      assert.equal(inline.compiled.state.lazyLoadMembers, true);
      assert.deepEqual(inline.filter, { room: { state: { lazy_load_members: true } } });

      await assert.rejects(filters.getFilter(alice, '{"room":'), rejects('M_NOT_JSON', 400));
      await assert.rejects(filters.getFilter(alice, '{"room":[]}'), rejects('M_BAD_JSON', 400));
      await assert.rejects(filters.getFilter(alice, '{"room":{"timeline":{"limit":-5}}}'), rejects('M_BAD_JSON', 400));
      await assert.rejects(filters.getFilter(alice, '424242'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(filters.getFilter(alice, 'nonsense'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(filters.getFilter(bob, id), rejects('M_INVALID_PARAM', 400));
    });
  });
}
