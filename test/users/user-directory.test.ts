import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { ProfileService } from '../../src/users/profiles.js';
import { UserDirectoryService } from '../../src/users/user-directory.js';
import { storageBackends } from '../support/databases.js';
import { addUser, FakeRooms, SERVER, useDatabase } from './user-data-support.js';

const rejects = (errcode: string, status: number) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

for (const backend of await storageBackends()) {
  describe(`user directory on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const rooms = new FakeRooms();
    let dir: UserDirectoryService;
    const id = (l: string) => `@${l}:${SERVER}`;
    const ids = (r: { results: { user_id: string }[] }) => r.results.map((x) => x.user_id);

    test('finds users sharing a room or in public rooms, by user id or display name, case-insensitively', async () => {
      const profiles = new ProfileService({ db: h.db, serverName: SERVER });
      const people: [string, string][] = [
        ['searcher', 'The Searcher'],
        ['alice', 'Alice Liddell'],
        ['bob', 'Robert Smith'],
        ['carol', 'Carol Smith'],
        ['dave', 'Ünïcode Dävé'],
        ['hidden', 'Alice Hidden'],
        ['gone', 'Alice Gone'],
        ['percent', '100% real_name'],
      ];
      for (const [l, name] of people) {
        await addUser(h.db, l, { deactivated: l === 'gone' });
        await profiles.createProfile(id(l), l);
        await profiles.setDisplayname({ userId: id(l) }, id(l), name);
      }
      rooms.join('!private:hs', id('searcher'), id('alice'), id('dave'), id('gone'), id('percent'));
      rooms.join('!public:hs', id('bob'), id('carol')).makePublic('!public:hs');
      rooms.join('!secret:hs', id('hidden'));
      dir = new UserDirectoryService({ db: h.db, usersSharingRooms: rooms.usersSharingRooms, usersInPublicRooms: rooms.usersInPublicRooms });

      const alice = await dir.search(id('searcher'), 'ALICE');
      assert.deepEqual(alice, { results: [{ user_id: id('alice'), display_name: 'Alice Liddell' }], limited: false });
      assert.deepEqual(ids(await dir.search(id('searcher'), 'smith')), [id('bob'), id('carol')]);
      assert.deepEqual(ids(await dir.search(id('searcher'), 'rob smi')), [id('bob')], 'every word must match');
      assert.deepEqual(ids(await dir.search(id('searcher'), 'carol')), [id('carol')], 'by localpart too');
      assert.deepEqual(ids(await dir.search(id('searcher'), 'üNÏ')), [id('dave')]);
      assert.deepEqual(ids(await dir.search(id('searcher'), '100%')), [id('percent')]);
      assert.deepEqual(ids(await dir.search(id('searcher'), '_')), [id('percent')], 'LIKE wildcards are literal');
      assert.deepEqual(ids(await dir.search(id('searcher'), 'hidden')), [], 'no shared or public room');
      assert.deepEqual(ids(await dir.search(id('searcher'), 'gone')), [], 'deactivated');
      assert.deepEqual(await dir.search(id('searcher'), '   '), { results: [], limited: false });
      // Never the searcher themself, though they share a room with themself.
      assert.deepEqual(ids(await dir.search(id('searcher'), 'searcher')), []);
      assert.deepEqual(ids(await dir.search(id('alice'), 'searcher')), [id('searcher')]);
    });

    test('limit and limited; better matches first', async () => {
      const page = await dir.search(id('searcher'), 'i', 2);
      assert.equal(page.results.length, 2);
      assert.equal(page.limited, true);
      const all = await dir.search(id('searcher'), 'i', 50);
      assert.equal(all.limited, false);
      assert.ok(all.results.length > 2);
      assert.deepEqual(await dir.search(id('searcher'), 'smith', 0), { results: [], limited: true });
      // An exact word beats a prefix.
      const profiles = new ProfileService({ db: h.db, serverName: SERVER });
      await profiles.setDisplayname({ userId: id('alice') }, id('alice'), 'Smithers');
      assert.deepEqual(ids(await dir.search(id('searcher'), 'smith')), [id('bob'), id('carol'), id('alice')]);
    });

    test('search_all_users shows everyone active', async () => {
      const open = new UserDirectoryService({
        db: h.db,
        usersSharingRooms: rooms.usersSharingRooms,
        usersInPublicRooms: rooms.usersInPublicRooms,
        searchAllUsers: true,
      });
      assert.deepEqual(ids(await open.search(id('searcher'), 'hidden')), [id('hidden')]);
      assert.deepEqual(ids(await open.search(id('searcher'), 'gone')), []);
      assert.deepEqual(ids(await open.search(id('searcher'), 'the searcher')), []);
    });

    test('errors: bad term or limit 400', async () => {
      await assert.rejects(dir.search(id('searcher'), 5), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(dir.search(id('searcher'), 'x'.repeat(300)), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(dir.search(id('searcher'), 'x', -1), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(dir.search(id('searcher'), 'x', '10'), rejects('M_INVALID_PARAM', 400));
    });
  });
}
