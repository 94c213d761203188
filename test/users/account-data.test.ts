import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { AccountDataService } from '../../src/users/account-data.js';
import { storageBackends } from '../support/databases.js';
import { assertDoesNotWake, assertWakes, SERVER, useDatabase } from './user-data-support.js';

const rejects = (errcode: string, status: number) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

for (const backend of await storageBackends()) {
  describe(`account data on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const notifier = new InProcessBus();
    let ad: AccountDataService;
    const alice = `@alice:${SERVER}`;
    const bob = `@bob:${SERVER}`;
    const room = `!room:${SERVER}`;

    test('global account data: set, read back, overwrite; positions increase; the owner is woken', async () => {
      ad = new AccountDataService({ db: h.db, notifier });
      let p1 = 0;
      await assertWakes(notifier, { userId: alice }, async () => {
        p1 = await ad.setGlobal(alice, alice, 'm.direct', { [bob]: [room] });
      });
      assert.deepEqual(await ad.getGlobal(alice, alice, 'm.direct'), { [bob]: [room] });
      const p2 = await ad.setGlobal(alice, alice, 'im.ponies.user_emotes', { images: { wave: { url: 'mxc://hs.test/w' } } });
      const p3 = await ad.setGlobal(alice, alice, 'm.direct', {});
      assert.ok(p1 < p2 && p2 < p3);
      assert.equal(notifier.current().account_data, p3);
      assert.deepEqual(await ad.getGlobal(alice, alice, 'm.direct'), {});
      await assertDoesNotWake(notifier, { userId: bob }, () => ad.setGlobal(alice, alice, 'x.y', { a: 1 }));
    });

    test('room account data is separate from global data of the same type', async () => {
      await ad.setRoom(alice, alice, room, 'm.direct', { room: true });
      assert.deepEqual(await ad.getRoom(alice, alice, room, 'm.direct'), { room: true });
      assert.deepEqual(await ad.getGlobal(alice, alice, 'm.direct'), {});
      await assert.rejects(ad.getRoom(alice, alice, `!other:${SERVER}`, 'm.direct'), rejects('M_NOT_FOUND', 404));
    });

    test('errors: other users 403, unknown 404, bad room id 400, server-managed types 405 M_BAD_JSON', async () => {
      await assert.rejects(ad.setGlobal(bob, alice, 'x', {}), rejects('M_FORBIDDEN', 403));
      await assert.rejects(ad.getGlobal(bob, alice, 'm.direct'), rejects('M_FORBIDDEN', 403));
      await assert.rejects(ad.setRoom(bob, alice, room, 'x', {}), rejects('M_FORBIDDEN', 403));
      await assert.rejects(ad.getRoom(bob, alice, room, 'x'), rejects('M_FORBIDDEN', 403));
      await assert.rejects(ad.getGlobal(alice, alice, 'never.set'), rejects('M_NOT_FOUND', 404));
      await assert.rejects(ad.setRoom(alice, alice, 'not-a-room', 'x', {}), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(ad.getRoom(alice, alice, 'not-a-room', 'x'), rejects('M_INVALID_PARAM', 400));
      for (const type of ['m.fully_read', 'm.push_rules']) {
        await assert.rejects(ad.setGlobal(alice, alice, type, {}), rejects('M_BAD_JSON', 405));
        await assert.rejects(ad.setRoom(alice, alice, room, type, {}), rejects('M_BAD_JSON', 405));
      }
      await assert.rejects(ad.setGlobal(alice, alice, 'x'.repeat(256), {}), rejects('M_INVALID_PARAM', 400));
      // Server-managed types are still readable once the server wrote them.
      await ad.write(alice, room, 'm.fully_read', { event_id: '$e' });
      assert.deepEqual(await ad.getRoom(alice, alice, room, 'm.fully_read'), { event_id: '$e' });
    });

    test('tags are the m.tag room account data', async () => {
      assert.deepEqual(await ad.getTags(alice, alice, room), { tags: {} });
      await assertWakes(notifier, { userId: alice }, () => ad.putTag(alice, alice, room, 'm.favourite', { order: 0.5 }));
      await ad.putTag(alice, alice, room, 'u.work', {});
      assert.deepEqual(await ad.getTags(alice, alice, room), { tags: { 'm.favourite': { order: 0.5 }, 'u.work': {} } });
      assert.deepEqual(await ad.getRoom(alice, alice, room, 'm.tag'), { tags: { 'm.favourite': { order: 0.5 }, 'u.work': {} } });
      await ad.putTag(alice, alice, room, 'm.favourite', { order: 0.25 });
      await ad.deleteTag(alice, alice, room, 'u.work');
      assert.deepEqual(await ad.getTags(alice, alice, room), { tags: { 'm.favourite': { order: 0.25 } } });
      // Deleting an absent tag succeeds and wakes no one.
      await assertDoesNotWake(notifier, { userId: alice }, async () => {
        assert.equal(await ad.deleteTag(alice, alice, room, 'u.none'), undefined);
      });
      await assert.rejects(ad.putTag(alice, alice, room, 'x', { order: 'first' }), rejects('M_BAD_JSON', 400));
      await assert.rejects(ad.putTag(alice, alice, room, '', {}), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(ad.putTag(bob, alice, room, 'x', {}), rejects('M_FORBIDDEN', 403));
      await assert.rejects(ad.getTags(bob, alice, room), rejects('M_FORBIDDEN', 403));
      await assert.rejects(ad.deleteTag(bob, alice, room, 'm.favourite'), rejects('M_FORBIDDEN', 403));
    });

    test('concurrent tag edits are not lost', async () => {
      const r2 = `!tags:${SERVER}`;
      await Promise.all(Array.from({ length: 12 }, (_, i) => ad.putTag(alice, alice, r2, `t${i}`, { order: i / 12 })));
      assert.equal(Object.keys((await ad.getTags(alice, alice, r2)).tags).length, 12);
    });

    test('the ignore list is validated and exposed for sync', async () => {
      assert.deepEqual(await ad.ignoredUsers(alice), new Set());
      await ad.setGlobal(alice, alice, 'm.ignored_user_list', { ignored_users: { [bob]: {}, '@x:elsewhere.test': {} } });
      assert.deepEqual(await ad.ignoredUsers(alice), new Set([bob, '@x:elsewhere.test']));
      const bad: [unknown, string][] = [
        [{}, 'M_BAD_JSON'],
        [{ ignored_users: [] }, 'M_BAD_JSON'],
        [{ ignored_users: { [bob]: true } }, 'M_BAD_JSON'],
        [{ ignored_users: { 'not a user': {} } }, 'M_INVALID_PARAM'],
      ];
      for (const [content, errcode] of bad) {
        await assert.rejects(ad.setGlobal(alice, alice, 'm.ignored_user_list', content as never), rejects(errcode, 400));
      }
      assert.deepEqual(await ad.ignoredUsers(alice), new Set([bob, '@x:elsewhere.test']));
      await ad.setGlobal(alice, alice, 'm.ignored_user_list', { ignored_users: {} });
      assert.deepEqual(await ad.ignoredUsers(alice), new Set());
    });

    test('accountDataSince returns the latest content of what changed after a position', async () => {
      const all = await ad.accountDataSince(alice, 0);
      const globalTypes = all.global.map((e) => e.type).sort();
      assert.deepEqual(globalTypes, ['im.ponies.user_emotes', 'm.direct', 'm.ignored_user_list', 'x.y']);
      assert.deepEqual(all.global.find((e) => e.type === 'm.direct')?.content, {});
      assert.deepEqual(
        all.rooms.get(room)?.map((e) => e.type).sort(),
        ['m.direct', 'm.fully_read', 'm.tag'],
      );
      assert.equal(all.position, notifier.current().account_data);

      const mark = all.position;
      assert.deepEqual(await ad.accountDataSince(alice, mark), { global: [], rooms: new Map(), position: mark });
      await ad.setRoom(alice, alice, room, 'm.direct', { v: 2 });
      const p = await ad.setGlobal(alice, alice, 'x.y', { a: 2 });
      const later = await ad.accountDataSince(alice, mark);
      assert.deepEqual(later.global, [{ type: 'x.y', content: { a: 2 } }]);
      assert.deepEqual([...later.rooms], [[room, [{ type: 'm.direct', content: { v: 2 } }]]]);
      assert.equal(later.position, p);
      // Bob's data is his own.
      assert.deepEqual((await ad.accountDataSince(bob, 0)).global, []);
    });
  });
}
