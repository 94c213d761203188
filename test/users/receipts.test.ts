import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { AccountDataService } from '../../src/users/account-data.js';
import { ReceiptService } from '../../src/users/receipts.js';
import { storageBackends } from '../support/databases.js';
import { assertDoesNotWake, assertWakes, FakeRooms, SERVER, useDatabase } from './user-data-support.js';

const rejects = (errcode: string, status: number) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

for (const backend of await storageBackends()) {
  describe(`receipts on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const notifier = new InProcessBus();
    const alice = `@alice:${SERVER}`;
    const bob = `@bob:${SERVER}`;
    const carol = `@carol:${SERVER}`;
    const room = `!room:${SERVER}`;
    const other = `!other:${SERVER}`;
    const rooms = new FakeRooms()
      .join(room, alice, bob)
      .join(other, carol)
      .addEvent(room, '$e1', 1)
      .addEvent(room, '$e2', 2)
      .addEvent(room, '$e3', 3)
      .addEvent(other, '$x1', 1);
    let now = 1_000_000;
    let accountData: AccountDataService;
    let receipts: ReceiptService;

    test('a public receipt is stored, wakes the room and shows as m.receipt content', async () => {
      accountData = new AccountDataService({ db: h.db, notifier });
      receipts = new ReceiptService({
        db: h.db,
        notifier,
        accountData,
        isJoined: rooms.isJoined,
        eventOrder: rooms.eventOrder,
        now: () => now,
      });
      await assertWakes(notifier, { userId: bob, roomIds: [room] }, () => receipts.sendReceipt(alice, room, 'm.read', '$e1'));
      const p1 = notifier.current().receipts;
      assert.ok(p1 > 0);
      const content = await receipts.receiptsSince(bob, [room, other], 0);
      assert.deepEqual([...content], [[room, [{ $e1: { 'm.read': { [alice]: { ts: now } } } }]]]);
      assert.deepEqual(await receipts.receiptsSince(bob, [room], p1), new Map());
    });

    test('a receipt moves forward, never back; the same event again is a no-op', async () => {
      const before = notifier.current().receipts;
      now += 10;
      await receipts.sendReceipt(alice, room, 'm.read', '$e3');
      const p = notifier.current().receipts;
      assert.ok(p > before);
      await assertDoesNotWake(notifier, { userId: bob, roomIds: [room] }, () => receipts.sendReceipt(alice, room, 'm.read', '$e2'));
      await assertDoesNotWake(notifier, { userId: bob, roomIds: [room] }, () => receipts.sendReceipt(alice, room, 'm.read', '$e3'));
      const all = await receipts.receiptsSince(bob, [room], 0);
      assert.deepEqual(all.get(room), [{ $e3: { 'm.read': { [alice]: { ts: now } } } }]);
      assert.deepEqual([...(await receipts.receiptsSince(bob, [room], before)).keys()], [room]);
      assert.deepEqual(await receipts.receiptsSince(bob, [room], p), new Map());
    });

    test('threaded receipts are kept apart from unthreaded ones and carry thread_id', async () => {
      await receipts.sendReceipt(bob, room, 'm.read', '$e1', 'main');
      await receipts.sendReceipt(bob, room, 'm.read', '$e2', '$e1');
      await receipts.sendReceipt(bob, room, 'm.read', '$e2');
      // One m.receipt content per thread, unthreaded first: bob's two receipts on $e2 both show.
      const c = (await receipts.receiptsSince(alice, [room], 0)).get(room)!;
      assert.deepEqual(c, [
        { $e3: { 'm.read': { [alice]: { ts: now } } }, $e2: { 'm.read': { [bob]: { ts: now } } } },
        { $e1: { 'm.read': { [bob]: { ts: now, thread_id: 'main' } } } },
        { $e2: { 'm.read': { [bob]: { ts: now, thread_id: '$e1' } } } },
      ]);
      const rows = await h.db.selectFrom('receipts').select(['thread_id', 'event_id']).where('user_id', '=', bob).orderBy('thread_id').execute();
      assert.deepEqual(rows, [
        { thread_id: '', event_id: '$e2' },
        { thread_id: '$e1', event_id: '$e2' },
        { thread_id: 'main', event_id: '$e1' },
      ]);
    });

    test('private receipts reach only their owner', async () => {
      const since = notifier.current().receipts;
      await assertDoesNotWake(notifier, { userId: bob, roomIds: [room] }, () => receipts.sendReceipt(alice, room, 'm.read.private', '$e3'));
      await assertWakes(notifier, { userId: alice }, () => receipts.sendReceipt(alice, room, 'm.read.private', '$e2', 'main'));
      const forBob = await receipts.receiptsSince(bob, [room], 0);
      assert.equal(JSON.stringify(forBob.get(room)).includes('m.read.private'), false);
      assert.deepEqual(await receipts.receiptsSince(bob, [room], since), new Map());
      const forAlice = (await receipts.receiptsSince(alice, [room], since)).get(room)!;
      assert.deepEqual(forAlice, [
        { $e3: { 'm.read.private': { [alice]: { ts: now } } } },
        { $e2: { 'm.read.private': { [alice]: { ts: now, thread_id: 'main' } } } },
      ]);
    });

    test('receipts of rooms not asked for are not returned', async () => {
      await receipts.sendReceipt(carol, other, 'm.read', '$x1');
      assert.deepEqual([...(await receipts.receiptsSince(alice, [room], 0)).keys()], [room]);
      assert.deepEqual([...(await receipts.receiptsSince(carol, [other], 0)).keys()], [other]);
      assert.deepEqual(await receipts.receiptsSince(carol, [], 0), new Map());
    });

    test('errors: bad type or thread_id 400, not joined 403, unknown event 404', async () => {
      await assert.rejects(receipts.sendReceipt(alice, room, 'm.unread', '$e1'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(receipts.sendReceipt(alice, room, 'm.read', '$e1', ''), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(receipts.sendReceipt(alice, room, 'm.read', '$e1', 5), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(receipts.sendReceipt(alice, room, 'm.read', '$e1', 'a-thread'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(receipts.sendReceipt(alice, room, 'm.fully_read', '$e1', 'main'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(receipts.sendReceipt(alice, 'nope', 'm.read', '$e1'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(receipts.sendReceipt(carol, room, 'm.read', '$e1'), rejects('M_FORBIDDEN', 403));
      await assert.rejects(receipts.sendReceipt(alice, room, 'm.read', '$missing'), rejects('M_NOT_FOUND', 404));
      await assert.rejects(receipts.sendReceipt(alice, room, 'm.read', '$x1'), rejects('M_NOT_FOUND', 404));
      await assert.rejects(receipts.setReadMarkers(carol, room, { fullyRead: '$e1' }), rejects('M_FORBIDDEN', 403));
      await assert.rejects(receipts.setReadMarkers(alice, room, { fullyRead: '$e1', read: '$missing' }), rejects('M_NOT_FOUND', 404));
    });

    test('read markers: m.fully_read as room account data (forward only) plus receipts', async () => {
      await assertWakes(notifier, { userId: alice }, () => receipts.setReadMarkers(alice, room, { fullyRead: '$e2' }));
      assert.deepEqual(await accountData.get(alice, room, 'm.fully_read'), { event_id: '$e2' });
      // Going back is ignored; forward moves it.
      await receipts.setReadMarkers(alice, room, { fullyRead: '$e1' });
      assert.deepEqual(await accountData.get(alice, room, 'm.fully_read'), { event_id: '$e2' });
      await receipts.sendReceipt(alice, room, 'm.fully_read', '$e3');
      assert.deepEqual(await accountData.get(alice, room, 'm.fully_read'), { event_id: '$e3' });
      const changes = await accountData.accountDataSince(alice, 0);
      assert.deepEqual(changes.rooms.get(room), [{ type: 'm.fully_read', content: { event_id: '$e3' } }]);

      const since = notifier.current().receipts;
      await receipts.setReadMarkers(bob, room, { fullyRead: '$e3', read: '$e3', readPrivate: '$e3' });
      assert.deepEqual(await accountData.get(bob, room, 'm.fully_read'), { event_id: '$e3' });
      const forBob = (await receipts.receiptsSince(bob, [room], since)).get(room)!;
      assert.deepEqual(forBob, [{ $e3: { 'm.read': { [bob]: { ts: now } }, 'm.read.private': { [bob]: { ts: now } } } }]);
      const forAlice = (await receipts.receiptsSince(alice, [room], since)).get(room)!;
      assert.deepEqual(forAlice, [{ $e3: { 'm.read': { [bob]: { ts: now } } } }]);
      // Nothing at all is fine too.
      await receipts.setReadMarkers(bob, room, {});
    });
  });
}
