// The device key service on SQLite and PostgreSQL: concurrent claims never hand out one key twice,
// deleted devices lose their keys, counts follow uploads and claims, and device list changes are
// written to the device_lists stream and wake the users sharing a room.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { DeviceKeyService } from '../../src/users/device-keys.js';
import { usersWithDeviceListChanges } from '../../src/storage/user-data/device-lists.js';
import { storageBackends } from '../support/databases.js';
import { addDevice, addUser, assertDoesNotWake, assertWakes, SERVER, useDatabase } from './user-data-support.js';

for (const backend of await storageBackends()) {
  describe(`device keys on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const notifier = new InProcessBus();
    // Who shares a room with whom, as the room server would answer.
    const sharing = new Map<string, string[]>();
    let keys: DeviceKeyService;
    let alice = '';
    let bob = '';
    let carol = '';

    test('set up', async () => {
      keys = new DeviceKeyService({
        db: h.db,
        notifier,
        serverName: SERVER,
        usersSharingRooms: async (userId) => new Set(sharing.get(userId) ?? []),
      });
      alice = await addUser(h.db, 'alice');
      bob = await addUser(h.db, 'bob');
      carol = await addUser(h.db, 'carol');
      sharing.set(alice, [alice, bob]);
      await addDevice(h.db, alice, 'A1');
    });

    test('concurrent claims hand out every one-time key exactly once', async () => {
      const ids = Array.from({ length: 20 }, (_, i) => `signed_curve25519:K${String(i).padStart(2, '0')}`);
      await keys.upload({ userId: alice, deviceId: 'A1' }, { one_time_keys: Object.fromEntries(ids.map((id) => [id, `key-${id}`])) });
      assert.deepEqual((await keys.keyCounts(alice, 'A1')).oneTimeKeys, { signed_curve25519: 20 });
      const claims = await Promise.all(
        Array.from({ length: 25 }, () => keys.claim({ one_time_keys: { [alice]: { A1: 'signed_curve25519' } } })),
      );
      const handed = claims.flatMap((c) => Object.keys((c['one_time_keys'] as any)[alice]?.['A1'] ?? {}));
      assert.equal(handed.length, 20);
      assert.equal(new Set(handed).size, 20, 'no key twice');
      assert.deepEqual((await keys.keyCounts(alice, 'A1')).oneTimeKeys, { signed_curve25519: 0 });
    });

    test('a device list change is written to the stream and wakes the users sharing a room only', async () => {
      const before = notifier.current().device_lists;
      await assertWakes(notifier, { userId: bob }, () => keys.deviceListChanged(alice));
      await assertDoesNotWake(notifier, { userId: carol }, () => keys.deviceListChanged(alice));
      const after = notifier.current().device_lists;
      assert.equal(after, before + 2);
      assert.deepEqual([...(await usersWithDeviceListChanges(h.db, before, after))], [alice]);
      assert.deepEqual([...(await usersWithDeviceListChanges(h.db, after, after))], []);
    });

    test('device keys replaced by different ones are a change; deleted devices lose every key', async () => {
      const device = { user_id: alice, device_id: 'A1', algorithms: ['a'], keys: { 'ed25519:A1': 'k1' }, signatures: {} };
      let p = notifier.current().device_lists;
      await keys.upload({ userId: alice, deviceId: 'A1' }, { device_keys: device, fallback_keys: { 'alg:F': 'f' }, one_time_keys: { 'alg:O': 'o' } });
      assert.equal(notifier.current().device_lists, p + 1);
      p = notifier.current().device_lists;
      await keys.upload({ userId: alice, deviceId: 'A1' }, { device_keys: { ...device, keys: { 'ed25519:A1': 'k2' } } });
      assert.equal(notifier.current().device_lists, p + 1, 'new keys are a change');
      assert.deepEqual(await keys.keyCounts(alice, 'A1'), { oneTimeKeys: { signed_curve25519: 0, alg: 1 }, unusedFallbacks: ['alg'] });

      await keys.devicesDeleted(alice, ['A1']);
      for (const table of ['device_keys', 'one_time_keys', 'fallback_keys'] as const) {
        const rows = await h.db.selectFrom(table).select('device_id').where('user_id', '=', alice).execute();
        assert.deepEqual(rows, [], table);
      }
      assert.deepEqual(await keys.keyCounts(alice, 'A1'), { oneTimeKeys: { signed_curve25519: 0 }, unusedFallbacks: [] });
    });

    test('uploading needs a device, and one fallback key per algorithm', async () => {
      await assert.rejects(keys.upload({ userId: alice, deviceId: null }, {}), (e: any) => e.errcode === 'M_INVALID_PARAM');
      await assert.rejects(
        keys.upload({ userId: alice, deviceId: 'A1' }, { fallback_keys: { 'alg:1': 'a', 'alg:2': 'b' } }),
        (e: any) => e.errcode === 'M_INVALID_PARAM' && e.status === 400,
      );
    });
  });
}
