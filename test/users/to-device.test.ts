import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { ToDeviceService } from '../../src/users/to-device.js';
import { storageBackends } from '../support/databases.js';
import { addDevice, addUser, assertDoesNotWake, assertWakes, SERVER, useDatabase } from './user-data-support.js';

const rejects = (errcode: string, status: number) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

for (const backend of await storageBackends()) {
  describe(`send-to-device on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const notifier = new InProcessBus();
    let toDevice: ToDeviceService;
    let alice = '';
    let bob = '';
    const aliceDevice = { userId: '', deviceId: 'ALICE1' as string | null };

    /** What one sync of the device would do: acknowledge `since`, then take what follows. */
    const sync = async (userId: string, deviceId: string, since: number, limit?: number) => {
      await toDevice.deleteToDeviceUpTo(userId, deviceId, since);
      return toDevice.toDeviceFor(userId, deviceId, since, limit);
    };

    test('a message to one device reaches that device only, and wakes its user', async () => {
      toDevice = new ToDeviceService({ db: h.db, notifier, serverName: SERVER });
      alice = await addUser(h.db, 'alice');
      bob = await addUser(h.db, 'bob');
      aliceDevice.userId = alice;
      for (const d of ['BOB1', 'BOB2', 'BOB3']) await addDevice(h.db, bob, d);
      await assertWakes(notifier, { userId: bob }, () =>
        toDevice.send(aliceDevice, 'm.room_key_request', 't1', { [bob]: { BOB1: { n: 1 } } }),
      );
      const b1 = await sync(bob, 'BOB1', 0);
      assert.deepEqual(b1.events, [{ sender: alice, type: 'm.room_key_request', content: { n: 1 } }]);
      assert.equal(b1.limited, false);
      assert.equal(b1.position, notifier.current().to_device);
      assert.deepEqual((await sync(bob, 'BOB2', 0)).events, []);
    });

    test('exactly once: repeated until a later sync acknowledges it, then gone', async () => {
      const first = await sync(bob, 'BOB1', 0);
      // The client lost that response and syncs again from the same token: same message again.
      const again = await sync(bob, 'BOB1', 0);
      assert.deepEqual(again.events, first.events);
      // Syncing from the token it was given acknowledges and deletes it.
      const next = await sync(bob, 'BOB1', again.position);
      assert.deepEqual(next.events, []);
      assert.deepEqual((await sync(bob, 'BOB1', 0)).events, [], 'deleted, not just skipped');
      const left = await h.db.selectFrom('to_device_messages').select('device_id').where('device_id', '=', 'BOB1').execute();
      assert.deepEqual(left, []);
    });

    test('* reaches every device of the user; a device named beside * gets one message', async () => {
      const p0 = notifier.current().to_device;
      await toDevice.send(aliceDevice, 'm.new_device', 't2', { [bob]: { '*': { all: true } } });
      for (const d of ['BOB1', 'BOB2', 'BOB3']) {
        assert.deepEqual((await sync(bob, d, p0)).events, [{ sender: alice, type: 'm.new_device', content: { all: true } }], d);
      }
      const p1 = notifier.current().to_device;
      await toDevice.send(aliceDevice, 'm.x', 't3', { [bob]: { '*': { all: true }, BOB2: { just: 2 } } });
      assert.deepEqual((await sync(bob, 'BOB2', p1)).events.map((e) => e.content), [{ just: 2 }]);
      assert.deepEqual((await sync(bob, 'BOB3', p1)).events.map((e) => e.content), [{ all: true }]);
    });

    test('a repeated transaction id from the same device queues nothing; another device may reuse it', async () => {
      const p = notifier.current().to_device;
      await toDevice.send(aliceDevice, 'm.dummy', 'dup', { [bob]: { BOB1: { once: 1 } } });
      await assertDoesNotWake(notifier, { userId: bob }, () =>
        toDevice.send(aliceDevice, 'm.dummy', 'dup', { [bob]: { BOB1: { once: 1 } } }),
      );
      assert.equal((await sync(bob, 'BOB1', p)).events.length, 1);
      await toDevice.send({ userId: alice, deviceId: 'ALICE2' }, 'm.dummy', 'dup', { [bob]: { BOB1: { other: 1 } } });
      await toDevice.send({ userId: alice, deviceId: null }, 'm.dummy', 'dup', { [bob]: { BOB1: { tokenless: 1 } } });
      assert.deepEqual((await sync(bob, 'BOB1', p)).events.map((e) => e.content), [{ once: 1 }, { other: 1 }, { tokenless: 1 }]);
    });

    test('a queue longer than the limit is handed out in order across syncs', async () => {
      let since = notifier.current().to_device;
      for (let i = 0; i < 7; i++) await toDevice.send(aliceDevice, 'm.seq', `seq${i}`, { [bob]: { BOB3: { i } } });
      const seen: number[] = [];
      let rounds = 0;
      for (;;) {
        const batch = await sync(bob, 'BOB3', since, 3);
        seen.push(...batch.events.map((e) => e.content['i'] as number));
        rounds++;
        assert.ok(batch.position >= since);
        since = batch.position;
        if (!batch.limited) break;
      }
      assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6]);
      assert.equal(rounds, 3);
      assert.deepEqual((await sync(bob, 'BOB3', since)).events, []);
    });

    test('messages to users on other servers are dropped; unknown local devices keep theirs', async () => {
      const p = notifier.current().to_device;
      await toDevice.send(aliceDevice, 'm.x', 'remote', { '@carol:elsewhere.test': { '*': {}, DEV: {} } });
      assert.equal(notifier.current().to_device, p, 'nothing queued, nothing announced');
      await toDevice.send(aliceDevice, 'm.x', 'future', { [bob]: { NOT_YET: { early: true } } });
      assert.deepEqual((await sync(bob, 'NOT_YET', p)).events.map((e) => e.content), [{ early: true }]);
    });

    test('errors: malformed messages 400', async () => {
      await assert.rejects(toDevice.send(aliceDevice, 'm.x', 'e1', 'nope'), rejects('M_BAD_JSON', 400));
      await assert.rejects(toDevice.send(aliceDevice, 'm.x', 'e2', { [bob]: 'nope' }), rejects('M_BAD_JSON', 400));
      await assert.rejects(toDevice.send(aliceDevice, 'm.x', 'e3', { [bob]: { BOB1: [1] } }), rejects('M_BAD_JSON', 400));
      await assert.rejects(toDevice.send(aliceDevice, 'm.x', 'e4', { 'not-a-user': { D: {} } }), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(toDevice.send(aliceDevice, 'x'.repeat(256), 'e5', {}), rejects('M_INVALID_PARAM', 400));
      // A failed request did not use up its transaction id.
      const p = notifier.current().to_device;
      await toDevice.send(aliceDevice, 'm.x', 'e3', { [bob]: { BOB1: { fixed: true } } });
      assert.deepEqual((await sync(bob, 'BOB1', p)).events.map((e) => e.content), [{ fixed: true }]);
    });

    test('old transaction ids can be pruned', async () => {
      const count = async () => Number((await h.db.selectFrom('to_device_txns').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      assert.ok((await count()) > 0);
      await toDevice.pruneTransactions(60_000);
      assert.ok((await count()) > 0, 'recent ones stay');
      await toDevice.pruneTransactions(-60_000);
      assert.equal(await count(), 0);
    });
  });
}
