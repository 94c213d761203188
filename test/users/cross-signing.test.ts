// The cross-signing service on SQLite and PostgreSQL: uploads and signatures wake the syncs that
// must hear of them and no others, replacing keys asks for the password except from an
// application service, and replaced keys take their signatures with them.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Requester } from '../../src/users/requester.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { CrossSigningService, passwordAuth } from '../../src/users/cross-signing.js';
import { UiaChallenge } from '../../src/users/uia.js';
import { CrossSigning } from '../client/e2ee-keys.js';
import { storageBackends } from '../support/databases.js';
import { addUser, assertDoesNotWake, assertWakes, FakeRooms, SERVER, useDatabase } from './user-data-support.js';

const requester = (userId: string, extra: Partial<Requester> = {}): Requester => ({ userId, deviceId: 'D', isGuest: false, isAdmin: false, ...extra });

for (const backend of await storageBackends()) {
  describe(`cross-signing service on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const notifier = new InProcessBus();
    const rooms = new FakeRooms();
    let service: CrossSigningService;
    let alice = '';
    let bob = '';
    let carol = '';

    test('set up', async () => {
      service = new CrossSigningService({ db: h.db, notifier, serverName: SERVER, usersSharingRooms: rooms.usersSharingRooms, uia: passwordAuth(h.db, SERVER) });
      alice = await addUser(h.db, 'alice');
      bob = await addUser(h.db, 'bob');
      carol = await addUser(h.db, 'carol');
      rooms.join('!r:hs.test', alice, bob);
    });

    test('new keys wake the users sharing a room; a user-signing signature wakes only its signer', async () => {
      const aliceKeys = new CrossSigning(alice);
      const carolKeys = new CrossSigning(carol);
      await assertWakes(notifier, { userId: bob }, () => service.uploadKeys(requester(alice), aliceKeys.upload()));
      await assertDoesNotWake(notifier, { userId: carol }, () => service.uploadKeys(requester(alice), aliceKeys.upload()));
      await service.uploadKeys(requester(carol), carolKeys.upload());

      const signed = { [carol]: { [carolKeys.master.publicKey]: aliceKeys.userSigning.sign(carolKeys.masterKey, alice) } };
      const before = notifier.current().device_lists;
      await assertWakes(notifier, { userId: alice }, async () => assert.deepEqual(await service.uploadSignatures(requester(alice), signed), { failures: {} }));
      assert.equal(notifier.current().device_lists, before + 1);
      await assertDoesNotWake(notifier, { userId: carol }, () => service.uploadSignatures(requester(alice), signed));
      assert.equal(notifier.current().device_lists, before + 1, 'the same signature again is no change');
    });

    test('replacing keys needs the password, except for an application service', async () => {
      const first = new CrossSigning(bob);
      await service.uploadKeys(requester(bob), first.upload());
      const second = new CrossSigning(bob);
      await assert.rejects(service.uploadKeys(requester(bob), second.upload()), (e: unknown) => e instanceof UiaChallenge);
      await service.uploadKeys(requester(bob, { appserviceId: 'bridge' }), second.upload());
      const shown = await service.keysForQuery(alice, [bob], {});
      assert.deepEqual(shown.master_keys[bob], second.masterKey);
    });

    test('a replaced master key loses the signatures made on it', async () => {
      const aliceKeys = new CrossSigning(alice);
      const daveId = await addUser(h.db, 'dave');
      const dave = new CrossSigning(daveId);
      await service.uploadKeys(requester(daveId), dave.upload());
      // Alice's current keys are replaced (as an application service, to skip the password).
      await service.uploadKeys(requester(alice, { appserviceId: 'bridge' }), aliceKeys.upload());
      await service.uploadSignatures(requester(alice), { [daveId]: { [dave.master.publicKey]: aliceKeys.userSigning.sign(dave.masterKey, alice) } });
      assert.ok((await service.keysForQuery(alice, [daveId], {})).master_keys[daveId] !== undefined);
      const signedBy = async () => h.db.selectFrom('cross_signing_signatures').select('signer_user_id').where('target_user_id', '=', daveId).execute();
      assert.equal((await signedBy()).length, 1);
      await service.uploadKeys(requester(daveId, { appserviceId: 'bridge' }), new CrossSigning(daveId).upload());
      assert.deepEqual(await signedBy(), []);
    });
  });
}
