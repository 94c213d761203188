import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { PresenceService } from '../../src/users/presence.js';
import { ProfileService } from '../../src/users/profiles.js';
import { storageBackends } from '../support/databases.js';
import { assertDoesNotWake, assertWakes, FakeRooms, SERVER, useDatabase } from './user-data-support.js';

const rejects = (errcode: string, status: number) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

for (const backend of await storageBackends()) {
  describe(`presence on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const notifier = new InProcessBus();
    const alice = `@alice:${SERVER}`;
    const bob = `@bob:${SERVER}`;
    const carol = `@carol:${SERVER}`;
    const rooms = new FakeRooms().join(`!r:${SERVER}`, alice, bob).join(`!s:${SERVER}`, carol);
    let now = 10_000_000;
    let presence: PresenceService;

    test('setting presence stores it, wakes the user and those sharing a room, not others', async () => {
      presence = new PresenceService({ db: h.db, notifier, usersSharingRooms: rooms.usersSharingRooms, now: () => now });
      assert.deepEqual(await presence.getPresence(alice, alice), { presence: 'offline' });
      await assertWakes(notifier, { userId: bob }, () => presence.setPresence(alice, alice, 'online', 'at lunch'));
      await assertDoesNotWake(notifier, { userId: carol }, () => presence.setPresence(alice, alice, 'online', 'at lunch'));
      now += 5_000;
      assert.deepEqual(await presence.getPresence(bob, alice), {
        presence: 'online',
        last_active_ago: 5_000,
        status_msg: 'at lunch',
        currently_active: true,
      });
      await presence.setPresence(alice, alice, 'unavailable');
      now += 70_000;
      assert.deepEqual(await presence.getPresence(alice, alice), { presence: 'unavailable', last_active_ago: 75_000 });
    });

    test('errors: another user 403, bad state or status 400, invisible user 403', async () => {
      await assert.rejects(presence.setPresence(bob, alice, 'online'), rejects('M_FORBIDDEN', 403));
      await assert.rejects(presence.setPresence(alice, alice, 'busy'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(presence.setPresence(alice, alice, 5), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(presence.setPresence(alice, alice, 'online', 7), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(presence.setPresence(alice, alice, 'online', 'x'.repeat(2000)), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(presence.getPresence(carol, alice), rejects('M_FORBIDDEN', 403));
    });

    test('presenceSince: visible users only, after a position, with profile fields', async () => {
      const profiles = new ProfileService({ db: h.db, serverName: SERVER });
      await profiles.setDisplayname({ userId: alice }, alice, 'Alice');
      await presence.setPresence(carol, carol, 'online');
      const all = await presence.presenceSince(bob, 0);
      assert.deepEqual(all, [
        { type: 'm.presence', sender: alice, content: { presence: 'unavailable', last_active_ago: 75_000, displayname: 'Alice' } },
      ]);
      const mark = notifier.current().presence;
      assert.deepEqual(await presence.presenceSince(bob, mark), []);
      await presence.setPresence(bob, bob, 'online');
      const mine = await presence.presenceSince(bob, mark);
      assert.deepEqual(mine.map((e) => [e.sender, e.content.presence]), [[bob, 'online']]);
      // A profile change is announced again with the new name.
      const mark2 = notifier.current().presence;
      await profiles.setDisplayname({ userId: alice }, alice, 'Alice L.');
      await assertWakes(notifier, { userId: bob }, () => presence.profileChanged(alice));
      const renamed = await presence.presenceSince(bob, mark2);
      assert.deepEqual(renamed.map((e) => e.content.displayname), ['Alice L.']);
      assert.deepEqual((await presence.presenceSince(carol, 0)).map((e) => e.sender), [carol]);
    });

    test('presenceSince answers from the change log as the database would', async () => {
      const mark = notifier.current().presence;
      await presence.setPresence(carol, carol, 'unavailable');
      // Carol shares no room with bob: her change is not his news.
      assert.deepEqual(await presence.presenceSince(bob, mark), []);
      await presence.setPresence(alice, alice, 'online');
      const fromLog = await presence.presenceSince(bob, mark);
      assert.deepEqual(fromLog.map((e) => [e.sender, e.content.presence]), [[alice, 'online']]);
      assert.deepEqual(await presence.presenceSince(bob, notifier.current().presence), []);
      // A new service (as after a restart) remembers no changes and reads the database: same answer.
      const fresh = new PresenceService({ db: h.db, notifier, usersSharingRooms: rooms.usersSharingRooms, now: () => now });
      assert.deepEqual(await fresh.presenceSince(bob, mark), fromLog);
    });

    test('syncing brings an offline user online; set_presence=offline changes nothing; unavailable marks idle', async () => {
      const dave = `@dave:${SERVER}`;
      rooms.join(`!r:${SERVER}`, dave);
      let release = await presence.setPresenceFromSync(dave, 'offline');
      release();
      assert.equal((await presence.getPresence(dave, dave)).presence, 'offline');
      release = await presence.setPresenceFromSync(dave);
      assert.equal((await presence.getPresence(dave, dave)).presence, 'online');
      release();
      release = await presence.setPresenceFromSync(dave, 'unavailable');
      assert.equal((await presence.getPresence(dave, dave)).presence, 'unavailable');
      // A plain sync does not override an idle state; activity does.
      release();
      release = await presence.setPresenceFromSync(dave, 'online');
      assert.equal((await presence.getPresence(dave, dave)).presence, 'unavailable');
      release();
      await presence.bumpActive(dave);
      assert.equal((await presence.getPresence(dave, dave)).presence, 'online');
      // Activity within a minute of the last is not announced again.
      const p = notifier.current().presence;
      now += 1_000;
      await presence.bumpActive(dave);
      assert.equal(notifier.current().presence, p);
      now += 61_000;
      await presence.bumpActive(dave);
      assert.ok(notifier.current().presence > p);
      assert.equal((await presence.getPresence(dave, dave)).last_active_ago, 0);
    });

    test('timeouts: idle users become unavailable, users who stopped syncing go offline', async () => {
      const erin = `@erin:${SERVER}`;
      const frank = `@frank:${SERVER}`;
      const syncing = await presence.setPresenceFromSync(erin);
      const stopped = await presence.setPresenceFromSync(frank);
      stopped();
      now += 31_000;
      await presence.sweep();
      assert.equal((await presence.getPresence(erin, erin)).presence, 'online', 'still syncing');
      assert.equal((await presence.getPresence(frank, frank)).presence, 'offline', 'no sync for 30 s');
      now += 5 * 60_000;
      await presence.sweep();
      assert.equal((await presence.getPresence(erin, erin)).presence, 'unavailable', 'idle for 5 min');
      syncing();
      now += 31_000;
      await presence.sweep();
      assert.equal((await presence.getPresence(erin, erin)).presence, 'offline');
      // Calling release twice is harmless.
      syncing();
    });

    test('with presence disabled everyone reads offline and nothing is stored', async () => {
      const off = new PresenceService({ db: h.db, notifier, usersSharingRooms: rooms.usersSharingRooms, enabled: false });
      const p = notifier.current().presence;
      await off.setPresence(bob, bob, 'online');
      await (await off.setPresenceFromSync(bob))();
      assert.deepEqual(await off.getPresence(bob, bob), { presence: 'offline' });
      assert.deepEqual(await off.presenceSince(bob, 0), []);
      assert.equal(notifier.current().presence, p);
    });
  });
}
