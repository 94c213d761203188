import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { ProfileService, type Profile } from '../../src/users/profiles.js';
import { storageBackends } from '../support/databases.js';
import { addUser, SERVER, useDatabase } from './user-data-support.js';

const rejects = (errcode: string, status = 400) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

for (const backend of await storageBackends()) {
  describe(`profiles on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const changes: [string, Profile][] = [];
    let profiles: ProfileService;
    const alice = `@alice:${SERVER}`;
    const bob = `@bob:${SERVER}`;

    test('a new account starts with its localpart as display name', async () => {
      profiles = new ProfileService({ db: h.db, serverName: SERVER, onProfileChange: (u, p) => void changes.push([u, p]) });
      await addUser(h.db, 'alice');
      await addUser(h.db, 'bob');
      await profiles.createProfile(alice, 'alice');
      await profiles.createProfile(bob, 'bob');
      assert.deepEqual(await profiles.getProfile(alice), { displayname: 'alice' });
      assert.equal(await profiles.getField(alice, 'displayname'), 'alice');
      assert.equal(await profiles.getField(alice, 'avatar_url'), undefined, 'a field not set is no error');
      // Creating again keeps what is there.
      await profiles.setDisplayname({ userId: alice }, alice, 'Alice');
      await profiles.createProfile(alice, 'alice');
      assert.equal(await profiles.getField(alice, 'displayname'), 'Alice');
      // A display name asked for at registration wins over the localpart.
      await profiles.createProfile(`@dora:${SERVER}`, 'dora', ' Dora Explorer ');
      assert.deepEqual(await profiles.getProfile(`@dora:${SERVER}`), { displayname: 'Dora Explorer' });
    });

    test('an unknown user has no profile; an account without a profile row has an empty one', async () => {
      await assert.rejects(profiles.getProfile(`@nobody:${SERVER}`), rejects('M_NOT_FOUND', 404));
      await assert.rejects(profiles.getField(`@nobody:${SERVER}`, 'displayname'), rejects('M_NOT_FOUND', 404));
      await assert.rejects(profiles.getProfile('nobody'), rejects('M_INVALID_PARAM'));
      await assert.rejects(profiles.getField('@nobody', 'avatar_url'), rejects('M_INVALID_PARAM'));
      const carol = await addUser(h.db, 'carol');
      // The whole profile with no field set is 404, as the spec and Synapse answer; each field is unset.
      await assert.rejects(profiles.getProfile(carol), rejects('M_NOT_FOUND', 404));
      assert.equal(await profiles.getField(carol, 'displayname'), undefined);
      assert.equal(await profiles.getField(carol, 'avatar_url'), undefined);
    });

    test('setting fields stores them, trims, clears with "", and calls the hook once per change', async () => {
      changes.length = 0;
      const stored = await profiles.setDisplayname({ userId: alice }, alice, '  Alice Liddell ');
      assert.deepEqual(stored, { displayname: 'Alice Liddell', avatar_url: null });
      await profiles.setAvatarUrl({ userId: alice }, alice, 'mxc://hs.test/abc_DEF-1');
      assert.deepEqual(await profiles.getProfile(alice), { displayname: 'Alice Liddell', avatar_url: 'mxc://hs.test/abc_DEF-1' });
      assert.deepEqual(changes, [
        [alice, { displayname: 'Alice Liddell', avatar_url: null }],
        [alice, { displayname: 'Alice Liddell', avatar_url: 'mxc://hs.test/abc_DEF-1' }],
      ]);
      // The same value again changes nothing and calls nothing.
      await profiles.setDisplayname({ userId: alice }, alice, 'Alice Liddell');
      assert.equal(changes.length, 2);
      await profiles.setAvatarUrl({ userId: alice }, alice, '');
      await profiles.setDisplayname({ userId: alice }, alice, '   ');
      await assert.rejects(profiles.getProfile(alice), rejects('M_NOT_FOUND', 404));
      assert.deepEqual(changes.at(-1), [alice, { displayname: null, avatar_url: null }]);
      assert.deepEqual(await profiles.profileOf(alice), { displayname: null, avatar_url: null });
      assert.equal(await profiles.profileOf(`@nobody:${SERVER}`), undefined);
    });

    test('bad values are 400 M_INVALID_PARAM', async () => {
      const cases: [keyof Profile, unknown][] = [
        ['displayname', 5],
        ['displayname', null],
        ['displayname', 'x'.repeat(257)],
        ['avatar_url', 5],
        ['avatar_url', 'https://example.org/a.png'],
        ['avatar_url', 'mxc://hs.test/bad/id'],
        ['avatar_url', `mxc://hs.test/${'a'.repeat(1000)}`],
      ];
      for (const [field, value] of cases) {
        const call = field === 'displayname'
          ? profiles.setDisplayname({ userId: bob }, bob, value)
          : profiles.setAvatarUrl({ userId: bob }, bob, value);
        await assert.rejects(call, rejects('M_INVALID_PARAM'), `${field} ${String(value).slice(0, 30)}`);
      }
      assert.equal(await profiles.getField(bob, 'displayname'), 'bob');
      // 256 characters is still fine.
      await profiles.setDisplayname({ userId: bob }, bob, 'b'.repeat(256));
      await profiles.setDisplayname({ userId: bob }, bob, 'bob');
    });

    test("only the user (or an admin) changes a profile; remote users' never", async () => {
      await assert.rejects(profiles.setDisplayname({ userId: bob }, alice, 'Mallory'), rejects('M_FORBIDDEN', 403));
      await assert.rejects(profiles.setAvatarUrl({ userId: bob }, alice, 'mxc://hs.test/x'), rejects('M_FORBIDDEN', 403));
      await assert.rejects(profiles.setDisplayname({ userId: bob, isAdmin: true }, '@x:elsewhere.test', 'X'), rejects('M_FORBIDDEN', 403));
      await assert.rejects(profiles.setDisplayname({ userId: bob, isAdmin: true }, `@ghost:${SERVER}`, 'X'), rejects('M_NOT_FOUND', 404));
      await profiles.setDisplayname({ userId: bob, isAdmin: true }, alice, 'Set by admin');
      assert.equal(await profiles.getField(alice, 'displayname'), 'Set by admin');
    });

    test('concurrent changes of the two fields both stick', async () => {
      for (let i = 0; i < 5; i++) {
        await Promise.all([
          profiles.setDisplayname({ userId: bob }, bob, `Bob ${i}`),
          profiles.setAvatarUrl({ userId: bob }, bob, `mxc://hs.test/b${i}`),
        ]);
        assert.deepEqual(await profiles.getProfile(bob), { displayname: `Bob ${i}`, avatar_url: `mxc://hs.test/b${i}` });
      }
      await profiles.setAvatarUrl({ userId: bob }, bob, '');
    });

    test('a failing hook fails the call but the profile is stored', async () => {
      const failing = new ProfileService({
        db: h.db,
        serverName: SERVER,
        onProfileChange: () => {
          throw new Error('room server down');
        },
      });
      await assert.rejects(failing.setDisplayname({ userId: bob }, bob, 'Robert'), /room server down/);
      assert.equal(await profiles.getField(bob, 'displayname'), 'Robert');
    });
  });
}
