import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { storageBackends } from '../support/databases.js';
import { enc, SERVER, startUserDataServer, type TestUser, type UserDataServer } from './user-data-http.js';

for (const backend of await storageBackends()) {
  describe(`user data over HTTP on ${backend.name}`, { skip: backend.skip }, () => {
    let s: UserDataServer;
    let alice: TestUser;
    let bob: TestUser;
    const room = `!room:${SERVER}`;

    before(async () => {
      s = await startUserDataServer(backend.create);
      alice = await s.user('alice');
      bob = await s.user('bob');
    });
    after(() => s.close());

    const expectError = (r: { status: number; body: Record<string, unknown> }, status: number, errcode: string) => {
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body['errcode'], errcode);
      assert.equal(typeof r.body['error'], 'string');
    };

    describe('profiles', () => {
      test('registration made a profile; GET whole and per field, without a token too', async () => {
        const whole = await s.call('GET', `/profile/${enc(alice.userId)}`);
        assert.equal(whole.status, 200);
        assert.deepEqual(whole.body, { displayname: 'alice' });
        const field = await s.call('GET', `/profile/${enc(alice.userId)}/displayname`, { token: bob.token });
        assert.deepEqual(field.body, { displayname: 'alice' });
        const unset = await s.call('GET', `/profile/${enc(alice.userId)}/avatar_url`);
        assert.deepEqual([unset.status, unset.body], [200, {}]);
        expectError(await s.call('GET', `/profile/${enc(`@nobody:${SERVER}`)}`), 404, 'M_NOT_FOUND');
        expectError(await s.call('GET', `/profile/${enc(`@nobody:${SERVER}`)}/displayname`), 404, 'M_NOT_FOUND');
        expectError(await s.call('GET', `/profile/${enc(alice.userId)}`, { token: 'bogus' }), 401, 'M_UNKNOWN_TOKEN');
      });

      test('PUT sets the fields and tells the room server; r0 and /_matrix answer too', async () => {
        s.profileChanges.length = 0;
        let r = await s.call('PUT', `/profile/${enc(alice.userId)}/displayname`, { token: alice.token, body: { displayname: 'Alice' } });
        assert.equal(r.status, 200);
        assert.deepEqual(r.body, {});
        r = await s.call('PUT', `/_matrix/client/r0/profile/${enc(alice.userId)}/avatar_url`, { token: alice.token, body: { avatar_url: 'mxc://hs.test/pic' } });
        assert.equal(r.status, 200);
        const whole = await s.call('GET', `/_matrix/client/v3/profile/${enc(alice.userId)}`);
        assert.deepEqual(whole.body, { displayname: 'Alice', avatar_url: 'mxc://hs.test/pic' });
        assert.deepEqual(s.profileChanges, [
          [alice.userId, { displayname: 'Alice', avatar_url: null }],
          [alice.userId, { displayname: 'Alice', avatar_url: 'mxc://hs.test/pic' }],
        ]);
      });

      test('PUT errors: other user 403, missing field 400, bad values 400, no token 401, bad JSON 400', async () => {
        const path = `/profile/${enc(alice.userId)}/displayname`;
        expectError(await s.call('PUT', path, { token: bob.token, body: { displayname: 'Mallory' } }), 403, 'M_FORBIDDEN');
        expectError(await s.call('PUT', path, { token: alice.token, body: {} }), 400, 'M_MISSING_PARAM');
        expectError(await s.call('PUT', path, { token: alice.token, body: { displayname: 42 } }), 400, 'M_INVALID_PARAM');
        expectError(await s.call('PUT', path, { token: alice.token, body: { displayname: 'x'.repeat(300) } }), 400, 'M_INVALID_PARAM');
        expectError(await s.call('PUT', `/profile/${enc(alice.userId)}/avatar_url`, { token: alice.token, body: { avatar_url: 'http://x/y' } }), 400, 'M_INVALID_PARAM');
        expectError(await s.call('PUT', path, { body: { displayname: 'x' } }), 401, 'M_MISSING_TOKEN');
        expectError(await s.call('PUT', path, { token: alice.token, raw: '{"displayname":' }), 400, 'M_NOT_JSON');
        expectError(await s.call('POST', path, { token: alice.token, body: {} }), 405, 'M_UNRECOGNIZED');
        assert.equal((await s.call('GET', path)).body['displayname'], 'Alice');
      });

      test('guests may set their display name but not their avatar', async () => {
        const guest = await s.guest();
        const r = await s.call('PUT', `/profile/${enc(guest.userId)}/displayname`, { token: guest.token, body: { displayname: 'Visitor' } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        expectError(
          await s.call('PUT', `/profile/${enc(guest.userId)}/avatar_url`, { token: guest.token, body: { avatar_url: 'mxc://hs.test/g' } }),
          403,
          'M_GUEST_ACCESS_FORBIDDEN',
        );
      });
    });

    describe('account data and tags', () => {
      test('global and room account data round-trip; others are refused', async () => {
        const path = `/user/${enc(alice.userId)}/account_data/m.direct`;
        const content = { [bob.userId]: [room] };
        assert.equal((await s.call('PUT', path, { token: alice.token, body: content })).status, 200);
        assert.deepEqual((await s.call('GET', path, { token: alice.token })).body, content);
        const emotes = `/user/${enc(alice.userId)}/account_data/im.ponies.user_emotes`;
        await s.call('PUT', emotes, { token: alice.token, body: { images: { hi: { url: 'mxc://hs.test/hi' } } } });
        assert.deepEqual((await s.call('GET', emotes, { token: alice.token })).body, { images: { hi: { url: 'mxc://hs.test/hi' } } });
        const roomPath = `/user/${enc(alice.userId)}/rooms/${enc(room)}/account_data/org.example.x`;
        assert.equal((await s.call('PUT', roomPath, { token: alice.token, body: { a: 1 } })).status, 200);
        assert.deepEqual((await s.call('GET', roomPath, { token: alice.token })).body, { a: 1 });

        expectError(await s.call('PUT', path, { token: bob.token, body: {} }), 403, 'M_FORBIDDEN');
        expectError(await s.call('GET', path, { token: bob.token }), 403, 'M_FORBIDDEN');
        expectError(await s.call('GET', `/user/${enc(alice.userId)}/account_data/never`, { token: alice.token }), 404, 'M_NOT_FOUND');
        expectError(await s.call('PUT', path, { token: alice.token, raw: '[1]' }), 400, 'M_BAD_JSON');
        expectError(await s.call('PUT', path, { token: alice.token, raw: 'nope' }), 400, 'M_NOT_JSON');
        expectError(await s.call('PUT', `/user/${enc(alice.userId)}/rooms/not-a-room/account_data/x`, { token: alice.token, body: {} }), 400, 'M_INVALID_PARAM');
        for (const type of ['m.fully_read', 'm.push_rules']) {
          expectError(await s.call('PUT', `/user/${enc(alice.userId)}/account_data/${type}`, { token: alice.token, body: {} }), 405, 'M_BAD_JSON');
          expectError(await s.call('PUT', `/user/${enc(alice.userId)}/rooms/${enc(room)}/account_data/${type}`, { token: alice.token, body: {} }), 405, 'M_BAD_JSON');
        }
      });

      test('a change wakes the owner\'s sync', async () => {
        const waiting = s.notifier.wait({ userId: alice.userId, roomIds: [], since: s.notifier.current(), timeoutMs: 3000 });
        await s.call('PUT', `/user/${enc(alice.userId)}/account_data/org.example.wake`, { token: alice.token, body: { n: 1 } });
        assert.equal(await waiting, true);
      });

      test('tags: put, list, delete', async () => {
        const base = `/user/${enc(alice.userId)}/rooms/${enc(room)}/tags`;
        assert.deepEqual((await s.call('GET', base, { token: alice.token })).body, { tags: {} });
        assert.equal((await s.call('PUT', `${base}/m.favourite`, { token: alice.token, body: { order: 0.1 } })).status, 200);
        assert.equal((await s.call('PUT', `${base}/${enc('u.work/home')}`, { token: alice.token, body: {} })).status, 200);
        assert.deepEqual((await s.call('GET', base, { token: alice.token })).body, { tags: { 'm.favourite': { order: 0.1 }, 'u.work/home': {} } });
        assert.equal((await s.call('DELETE', `${base}/m.favourite`, { token: alice.token })).status, 200);
        assert.deepEqual((await s.call('GET', base, { token: alice.token })).body, { tags: { 'u.work/home': {} } });
        assert.deepEqual(
          (await s.call('GET', `/user/${enc(alice.userId)}/rooms/${enc(room)}/account_data/m.tag`, { token: alice.token })).body,
          { tags: { 'u.work/home': {} } },
        );
        expectError(await s.call('PUT', `${base}/x`, { token: alice.token, body: { order: 'top' } }), 400, 'M_BAD_JSON');
        expectError(await s.call('GET', base, { token: bob.token }), 403, 'M_FORBIDDEN');
        expectError(await s.call('DELETE', `${base}/u.work`, { token: bob.token }), 403, 'M_FORBIDDEN');
      });

      test('the ignore list is validated and read back for sync', async () => {
        const path = `/user/${enc(alice.userId)}/account_data/m.ignored_user_list`;
        expectError(await s.call('PUT', path, { token: alice.token, body: { ignored_users: ['x'] } }), 400, 'M_BAD_JSON');
        expectError(await s.call('PUT', path, { token: alice.token, body: { ignored_users: { nope: {} } } }), 400, 'M_INVALID_PARAM');
        assert.equal((await s.call('PUT', path, { token: alice.token, body: { ignored_users: { [bob.userId]: {} } } })).status, 200);
        assert.deepEqual(await s.services.accountData.ignoredUsers(alice.userId), new Set([bob.userId]));
      });
    });

    describe('filters', () => {
      test('upload and download; same filter same id; errors', async () => {
        const filter = { room: { timeline: { limit: 10 }, state: { lazy_load_members: true } }, presence: { types: [] } };
        const r = await s.call('POST', `/user/${enc(alice.userId)}/filter`, { token: alice.token, body: filter });
        assert.equal(r.status, 200);
        const id = r.body['filter_id'] as string;
        assert.equal(typeof id, 'string');
        assert.ok(!id.startsWith('{'));
        assert.deepEqual((await s.call('GET', `/user/${enc(alice.userId)}/filter/${id}`, { token: alice.token })).body, filter);
        assert.equal((await s.call('POST', `/_matrix/client/r0/user/${enc(alice.userId)}/filter`, { token: alice.token, body: filter })).body['filter_id'], id);
        const resolved = await s.services.filters.getFilter(alice.userId, id);
        assert.equal(resolved.compiled.state.lazyLoadMembers, true);

        expectError(await s.call('GET', `/user/${enc(alice.userId)}/filter/9999`, { token: alice.token }), 404, 'M_NOT_FOUND');
        expectError(await s.call('GET', `/user/${enc(alice.userId)}/filter/${id}`, { token: bob.token }), 403, 'M_FORBIDDEN');
        expectError(await s.call('POST', `/user/${enc(alice.userId)}/filter`, { token: bob.token, body: {} }), 403, 'M_FORBIDDEN');
        expectError(await s.call('POST', `/user/${enc(alice.userId)}/filter`, { token: alice.token, body: { room: { timeline: { limit: 'x' } } } }), 400, 'M_BAD_JSON');
        expectError(await s.call('POST', `/user/${enc(alice.userId)}/filter`, { token: alice.token, body: { room: { rooms: ['bad'] } } }), 400, 'M_BAD_JSON');
        expectError(await s.call('POST', `/user/${enc(alice.userId)}/filter`, { token: alice.token, raw: '{' }), 400, 'M_NOT_JSON');
      });

      test('guests may upload filters (they sync too)', async () => {
        const guest = await s.guest();
        const r = await s.call('POST', `/user/${enc(guest.userId)}/filter`, { token: guest.token, body: {} });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      });
    });

    describe('presence', () => {
      test('set and get; visible to room-mates only', async () => {
        const carol = await s.user('carol');
        s.rooms.join(room, alice.userId, bob.userId);
        const path = `/presence/${enc(alice.userId)}/status`;
        const waiting = s.notifier.wait({ userId: bob.userId, roomIds: [], since: s.notifier.current(), timeoutMs: 3000 });
        assert.equal((await s.call('PUT', path, { token: alice.token, body: { presence: 'online', status_msg: 'hello' } })).status, 200);
        assert.equal(await waiting, true);
        const got = await s.call('GET', path, { token: bob.token });
        assert.equal(got.status, 200);
        assert.equal(got.body['presence'], 'online');
        assert.equal(got.body['status_msg'], 'hello');
        assert.equal(got.body['currently_active'], true);
        assert.equal(typeof got.body['last_active_ago'], 'number');
        expectError(await s.call('GET', path, { token: carol.token }), 403, 'M_FORBIDDEN');
        expectError(await s.call('PUT', path, { token: bob.token, body: { presence: 'online' } }), 403, 'M_FORBIDDEN');
        expectError(await s.call('PUT', path, { token: alice.token, body: { presence: 'asleep' } }), 400, 'M_INVALID_PARAM');
        expectError(await s.call('PUT', path, { token: alice.token, body: {} }), 400, 'M_MISSING_PARAM');
        expectError(await s.call('PUT', path, { token: alice.token, body: { presence: 'online', status_msg: 1 } }), 400, 'M_INVALID_PARAM');
        assert.deepEqual((await s.call('GET', `/presence/${enc(carol.userId)}/status`, { token: carol.token })).body, { presence: 'offline' });
      });
    });

    describe('user directory', () => {
      test('search finds visible users by name and id; limit and limited', async () => {
        const dave = await s.user('dave');
        await s.call('PUT', `/profile/${enc(dave.userId)}/displayname`, { token: dave.token, body: { displayname: 'Dave Grohl' } });
        const erin = await s.user('erin');
        await s.call('PUT', `/profile/${enc(erin.userId)}/displayname`, { token: erin.token, body: { displayname: 'Erin Grohl' } });
        s.rooms.join(`!pub:${SERVER}`, dave.userId).makePublic(`!pub:${SERVER}`);
        s.rooms.join(`!priv:${SERVER}`, alice.userId, erin.userId);

        const r = await s.call('POST', '/user_directory/search', { token: alice.token, body: { search_term: 'GROHL' } });
        assert.equal(r.status, 200);
        assert.deepEqual(r.body, {
          results: [
            { user_id: dave.userId, display_name: 'Dave Grohl' },
            { user_id: erin.userId, display_name: 'Erin Grohl' },
          ],
          limited: false,
        });
        const limited = await s.call('POST', '/user_directory/search', { token: alice.token, body: { search_term: 'grohl', limit: 1 } });
        assert.equal(limited.body['results'].length, 1);
        assert.equal(limited.body['limited'], true);
        // Bob shares no room with erin; dave is in a public room.
        const forBob = await s.call('POST', '/user_directory/search', { token: bob.token, body: { search_term: 'grohl' } });
        assert.deepEqual(forBob.body['results'].map((x: { user_id: string }) => x.user_id), [dave.userId]);
        const byId = await s.call('POST', '/user_directory/search', { token: alice.token, body: { search_term: 'erin' } });
        assert.deepEqual(byId.body['results'].map((x: { user_id: string }) => x.user_id), [erin.userId]);

        expectError(await s.call('POST', '/user_directory/search', { token: alice.token, body: {} }), 400, 'M_MISSING_PARAM');
        expectError(await s.call('POST', '/user_directory/search', { token: alice.token, body: { search_term: 1 } }), 400, 'M_INVALID_PARAM');
        expectError(await s.call('POST', '/user_directory/search', { token: alice.token, body: { search_term: 'x', limit: 'all' } }), 400, 'M_INVALID_PARAM');
        expectError(await s.call('POST', '/user_directory/search', { body: { search_term: 'x' } }), 401, 'M_MISSING_TOKEN');
      });
    });
  });
}
