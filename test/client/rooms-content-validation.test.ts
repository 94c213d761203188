// Malformed room content is 400 before any authorization: power levels sent as state, through
// createRoom's override and initial_state, and createRoom fields of the wrong type. Real HTTP,
// SQLite and PostgreSQL; nothing is stored for a refused request.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { storageBackends, type TestDatabase } from '../support/databases.js';
import { seg, startRoomsServer, type Reply, type RoomsServer } from './rooms-http.js';

for (const backend of await storageBackends()) {
  describe(`room content validation over HTTP on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let s: RoomsServer;
    let alice: { token: string; userId: string };
    let bob: { token: string; userId: string };

    before(async () => {
      target = await backend.create();
      s = await startRoomsServer(target);
      alice = await s.login('alice');
      bob = await s.login('bob');
    });
    after(async () => {
      await s.close();
      await target.drop();
    });

    const expectError = (r: Reply, status: number, errcode: string, what: string) => {
      assert.equal(r.status, status, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
      assert.equal(r.body.errcode, errcode, what);
      assert.equal(typeof r.body.error, 'string', what);
    };
    const create = async (body: object): Promise<string> => {
      const r = await s.call('POST', '/createRoom', { token: alice.token, body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.room_id as string;
    };
    const joinedCount = async () => (await s.call('GET', '/joined_rooms', { token: alice.token })).body.joined_rooms.length as number;

    test('PUT power levels with malformed content: 400 M_BAD_JSON, state unchanged', async () => {
      for (const version of ['9', '10', '11']) {
        const roomId = await create({ room_version: version });
        const path = `/rooms/${seg(roomId)}/state/m.room.power_levels`;
        const before = (await s.call('GET', path, { token: alice.token })).body;
        const admin = { [alice.userId]: 100 };
        const bad: [string, object][] = [
          ['users not an object', { users: 'x' }],
          ['users a list', { users: [alice.userId] }],
          ['ban a word', { users: admin, ban: 'fifty' }],
          ['ban a float', { users: admin, ban: 50.5 }],
          ['ban a boolean', { users: admin, ban: true }],
          ['ban null', { users: admin, ban: null }],
          ['ban beyond safe integers', { users: admin, ban: 2 ** 60 }],
          ['users_default an object', { users: admin, users_default: {} }],
          ['a bad user id', { users: { ...admin, 'not-a-user': 50 } }],
          ['a user level a word', { users: { [alice.userId]: 'high' } }],
          ['events not an object', { users: admin, events: 5 }],
          ['an event level a float', { users: admin, events: { 'm.room.name': 1.5 } }],
          ['notifications a list', { users: admin, notifications: [] }],
          ['a notification level a word', { users: admin, notifications: { room: 'x' } }],
        ];
        for (const [what, content] of bad) {
          expectError(await s.call('PUT', path, { token: alice.token, body: content }), 400, 'M_BAD_JSON', `v${version} ${what}`);
        }
        // Validated before authorization: a non-member gets the same 400, not 403.
        expectError(await s.call('PUT', path, { token: bob.token, body: { users: 'x' } }), 400, 'M_BAD_JSON', `v${version} non-member`);
        // Numeric strings: levels before v10, refused from v10 (auth rule 9.1 there).
        const strings = { users: { [alice.userId]: '100' }, ban: '50', events: { 'm.room.name': '50' }, notifications: { room: '50' } };
        const r = await s.call('PUT', path, { token: alice.token, body: strings });
        if (version === '9') {
          assert.equal(r.status, 200, `v9 numeric strings: ${JSON.stringify(r.body)}`);
          assert.deepEqual((await s.call('GET', path, { token: alice.token })).body, strings);
        } else {
          expectError(r, 400, 'M_BAD_JSON', `v${version} numeric strings`);
          assert.deepEqual((await s.call('GET', path, { token: alice.token })).body, before, `v${version} unchanged`);
        }
        // A good change is still accepted, and a negative level is a level.
        const good = await s.call('PUT', path, { token: alice.token, body: { ...before, users_default: -1 } });
        assert.equal(good.status, 200, JSON.stringify(good.body));
      }
    });

    test('createRoom power_level_content_override and initial_state are checked the same way', async () => {
      const count = await joinedCount();
      const plState = (content: object) => [{ type: 'm.room.power_levels', state_key: '', content }];
      const bad: [string, object][] = [
        ['override users a string', { power_level_content_override: { users: 'x' } }],
        ['override ban a string in v10', { room_version: '10', power_level_content_override: { ban: '50' } }],
        ['override a float level', { power_level_content_override: { kick: 1.5 } }],
        ['override a bad user id', { power_level_content_override: { users: { [alice.userId]: 100, 'bob': 0 } } }],
        ['initial_state users a string', { initial_state: plState({ users: 'x' }) }],
        ['initial_state ban a string in v11', { room_version: '11', initial_state: plState({ users: { [alice.userId]: 100 }, ban: '50' }) }],
        ['initial_state a name that is a number', { initial_state: [{ type: 'm.room.name', content: { name: 5 } }] }],
      ];
      for (const [what, body] of bad) {
        expectError(await s.call('POST', '/createRoom', { token: alice.token, body }), 400, 'M_BAD_JSON', what);
      }
      assert.equal(await joinedCount(), count, 'no room created');
      // Numeric strings are levels in v9 rooms.
      const roomId = await create({ room_version: '9', power_level_content_override: { ban: '60' } });
      const pl = (await s.call('GET', `/rooms/${seg(roomId)}/state/m.room.power_levels`, { token: alice.token })).body;
      assert.equal(pl.ban, '60');
    });

    test('createRoom fields of the wrong type: 400 M_BAD_JSON; missing invite_3pid fields: M_MISSING_PARAM', async () => {
      const count = await joinedCount();
      const bad: [string, object][] = [
        ['invite_3pid a string', { invite_3pid: 'x' }],
        ['invite_3pid items not objects', { invite_3pid: ['x'] }],
        ['invite_3pid medium a number', { invite_3pid: [{ id_server: 'is.example', id_access_token: 't', medium: 5, address: 'a@b.c' }] }],
        ['invite_3pid id_access_token a number', { invite_3pid: [{ id_server: 'is.example', id_access_token: 1, medium: 'email', address: 'a@b.c' }] }],
        ['creation_content a string', { creation_content: 'x' }],
        ['creation_content.type a number', { creation_content: { type: 5 } }],
        ['creation_content.m.federate a string', { creation_content: { 'm.federate': 'no' } }],
        ['creation_content.predecessor a string', { creation_content: { predecessor: 'x' } }],
        ['visibility a number', { visibility: 5 }],
        ['room_alias_name a number', { room_alias_name: 5 }],
        ['name an object', { name: {} }],
        ['topic a list', { topic: [] }],
        ['invite a string', { invite: '@bob:hs.test' }],
        ['invite items numbers', { invite: [5] }],
        ['room_version a number', { room_version: 10 }],
        ['initial_state an object', { initial_state: {} }],
        ['initial_state item content missing', { initial_state: [{ type: 'm.room.topic' }] }],
        ['initial_state state_key a number', { initial_state: [{ type: 'm.room.topic', state_key: 1, content: {} }] }],
        ['preset a number', { preset: 5 }],
        ['is_direct a string', { is_direct: 'yes' }],
        ['power_level_content_override a list', { power_level_content_override: [] }],
      ];
      for (const [what, body] of bad) {
        expectError(await s.call('POST', '/createRoom', { token: alice.token, body }), 400, 'M_BAD_JSON', what);
      }
      for (const invite of [{}, { id_server: 'is.example', medium: 'email' }]) {
        expectError(await s.call('POST', '/createRoom', { token: alice.token, body: { invite_3pid: [invite] } }), 400, 'M_MISSING_PARAM', JSON.stringify(invite));
      }
      assert.equal(await joinedCount(), count, 'no room created');
      // Well-formed values are accepted.
      await create({
        invite_3pid: [{ id_server: 'is.example', id_access_token: 't', medium: 'email', address: 'a@b.c' }],
        creation_content: { type: 'm.space', 'm.federate': false },
        is_direct: false,
      });
    });
  });
}
