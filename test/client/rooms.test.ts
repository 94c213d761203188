import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { storageBackends, type TestDatabase } from '../support/databases.js';
import { seg, SERVER, startRoomsServer, type RoomsServer } from './rooms-http.js';

for (const backend of await storageBackends()) {
  describe(`room routes over HTTP on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let s: RoomsServer;
    let alice: { token: string; userId: string };
    let bob: { token: string; userId: string };
    let admin: { token: string; userId: string };

    before(async () => {
      target = await backend.create();
      s = await startRoomsServer(target);
      alice = await s.login('alice');
      bob = await s.login('bob');
      admin = await s.login('root', { admin: true });
    });
    after(async () => {
      await s.close();
      await target.drop();
    });

    const create = async (body: object = {}, token = alice.token): Promise<string> => {
      const r = await s.call('POST', '/createRoom', { token, body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.match(r.body.room_id, /^!/);
      return r.body.room_id as string;
    };
    const expectError = (r: { status: number; body: any }, status: number, errcode: string) => {
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body.errcode, errcode);
      assert.equal(typeof r.body.error, 'string');
    };

    test('create, invite, join by alias, send with txnId, read back through /messages and /event', async () => {
      const roomId = await create({ preset: 'private_chat', room_alias_name: 'http', name: 'Over HTTP', invite: [bob.userId] });
      const join = await s.call('POST', `/join/${seg(`#http:${SERVER}`)}?server_name=${SERVER}&via=${SERVER}`, { token: bob.token, body: {} });
      assert.deepEqual(join.body, { room_id: roomId });
      const sent = await s.call('PUT', `/rooms/${seg(roomId)}/send/m.room.message/txn1`, { token: bob.token, body: { msgtype: 'm.text', body: 'hi' } });
      assert.equal(sent.status, 200);
      assert.match(sent.body.event_id, /^\$/);
      const again = await s.call('PUT', `/rooms/${seg(roomId)}/send/m.room.message/txn1`, { token: bob.token, body: { msgtype: 'm.text', body: 'hi' } });
      assert.equal(again.body.event_id, sent.body.event_id);
      const messages = await s.call('GET', `/rooms/${seg(roomId)}/messages?dir=b&limit=2`, { token: alice.token });
      assert.equal(messages.status, 200);
      assert.equal(messages.body.chunk[0].event_id, sent.body.event_id);
      assert.equal(messages.body.chunk[0].content.body, 'hi');
      assert.equal(typeof messages.body.start, 'string');
      assert.equal(typeof messages.body.end, 'string');
      const older = await s.call('GET', `/rooms/${seg(roomId)}/messages?dir=b&limit=2&from=${seg(messages.body.end)}`, { token: alice.token });
      assert.equal(older.body.chunk.length, 2);
      const event = await s.call('GET', `/rooms/${seg(roomId)}/event/${seg(sent.body.event_id)}`, { token: bob.token });
      assert.equal(event.body.unsigned.transaction_id, 'txn1');
      assert.equal(event.body.room_id, roomId);
      const joined = await s.call('GET', '/joined_rooms', { token: bob.token });
      assert.deepEqual(joined.body, { joined_rooms: [roomId] });
      // The same routes answer under /_chat and r0.
      const viaChat = await s.call('GET', `/rooms/${seg(roomId)}/joined_members`, { token: alice.token, prefix: '/_chat/client/r0' });
      assert.deepEqual(Object.keys(viaChat.body.joined).sort(), [alice.userId, bob.userId].sort());
    });

    test('state PUT and GET, with the empty state key with and without the trailing slash', async () => {
      const roomId = await create();
      const put = await s.call('PUT', `/rooms/${seg(roomId)}/state/m.room.topic`, { token: alice.token, body: { topic: 'no slash' } });
      assert.equal(put.status, 200);
      assert.deepEqual((await s.call('GET', `/rooms/${seg(roomId)}/state/m.room.topic/`, { token: alice.token })).body, { topic: 'no slash' });
      await s.call('PUT', `/rooms/${seg(roomId)}/state/m.room.topic/`, { token: alice.token, body: { topic: 'slash' } });
      assert.deepEqual((await s.call('GET', `/rooms/${seg(roomId)}/state/m.room.topic`, { token: alice.token })).body, { topic: 'slash' });
      // Any type and state key, with characters that need escaping.
      const key = 'widget/with spaces:and#more';
      const custom = await s.call('PUT', `/rooms/${seg(roomId)}/state/im.vector.modular.widgets/${seg(key)}`, { token: alice.token, body: { url: 'https://x' } });
      assert.equal(custom.status, 200);
      const read = await s.call('GET', `/rooms/${seg(roomId)}/state/im.vector.modular.widgets/${seg(key)}?format=event`, { token: alice.token });
      assert.equal(read.body.state_key, key);
      assert.equal(read.body.event_id, custom.body.event_id);
      const all = await s.call('GET', `/rooms/${seg(roomId)}/state`, { token: alice.token });
      assert.ok(all.body.some((e: any) => e.type === 'm.space.child' || e.type === 'im.vector.modular.widgets'));
      // Repeating the current state returns the same event.
      const same = await s.call('PUT', `/rooms/${seg(roomId)}/state/im.vector.modular.widgets/${seg(key)}`, { token: alice.token, body: { url: 'https://x' } });
      assert.equal(same.body.event_id, custom.body.event_id);
      expectError(await s.call('GET', `/rooms/${seg(roomId)}/state/m.room.avatar`, { token: alice.token }), 404, 'M_NOT_FOUND');
    });

    test('membership routes: invite, kick, ban, unban, leave, forget, members, knock', async () => {
      const roomId = await create({ preset: 'public_chat' });
      const r = `/rooms/${seg(roomId)}`;
      assert.equal((await s.call('POST', `${r}/join`, { token: bob.token, body: {} })).status, 200);
      expectError(await s.call('POST', `${r}/kick`, { token: bob.token, body: { user_id: alice.userId } }), 403, 'M_FORBIDDEN');
      assert.equal((await s.call('POST', `${r}/kick`, { token: alice.token, body: { user_id: bob.userId, reason: 'r' } })).status, 200);
      assert.equal((await s.call('POST', `${r}/ban`, { token: alice.token, body: { user_id: bob.userId } })).status, 200);
      expectError(await s.call('POST', `${r}/join`, { token: bob.token, body: {} }), 403, 'M_FORBIDDEN');
      assert.equal((await s.call('POST', `${r}/unban`, { token: alice.token, body: { user_id: bob.userId } })).status, 200);
      assert.equal((await s.call('POST', `${r}/invite`, { token: alice.token, body: { user_id: bob.userId } })).status, 200);
      const members = await s.call('GET', `${r}/members?membership=invite`, { token: alice.token });
      assert.deepEqual(members.body.chunk.map((e: any) => e.state_key), [bob.userId]);
      assert.equal((await s.call('POST', `${r}/leave`, { token: bob.token, body: {} })).status, 200);
      assert.equal((await s.call('POST', `${r}/forget`, { token: bob.token, body: {} })).status, 200);
      expectError(await s.call('POST', `${r}/invite`, { token: alice.token, body: {} }), 400, 'M_MISSING_PARAM');
      expectError(await s.call('POST', `${r}/invite`, { token: alice.token, body: { user_id: 5 } }), 400, 'M_BAD_JSON');
      expectError(await s.call('GET', `${r}/members?membership=maybe`, { token: alice.token }), 400, 'M_INVALID_PARAM');
      const knockRoom = await create({ initial_state: [{ type: 'm.room.join_rules', content: { join_rule: 'knock' } }] });
      const knock = await s.call('POST', `/knock/${seg(knockRoom)}`, { token: bob.token, body: { reason: 'please' } });
      assert.deepEqual(knock.body, { room_id: knockRoom });
    });

    test('redact with reason; the event is served redacted', async () => {
      const roomId = await create();
      const sent = await s.call('PUT', `/rooms/${seg(roomId)}/send/m.room.message/t-r`, { token: alice.token, body: { body: 'secret' } });
      const red = await s.call('PUT', `/rooms/${seg(roomId)}/redact/${seg(sent.body.event_id)}/r-1`, { token: alice.token, body: { reason: 'oops' } });
      assert.equal(red.status, 200);
      const event = await s.call('GET', `/rooms/${seg(roomId)}/event/${seg(sent.body.event_id)}`, { token: alice.token });
      assert.deepEqual(event.body.content, {});
      assert.equal(event.body.unsigned.redacted_because.event_id, red.body.event_id);
      assert.equal(event.body.unsigned.redacted_because.content.reason, 'oops');
    });

    test('/context and /messages with a filter', async () => {
      const roomId = await create();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await s.call('PUT', `/rooms/${seg(roomId)}/send/m.room.message/c${i}`, { token: alice.token, body: { body: `${i}` } })).body.event_id);
      const ctx = await s.call('GET', `/rooms/${seg(roomId)}/context/${seg(ids[2]!)}?limit=2`, { token: alice.token });
      assert.equal(ctx.status, 200);
      assert.deepEqual(ctx.body.events_before.map((e: any) => e.event_id), [ids[1]]);
      assert.deepEqual(ctx.body.events_after.map((e: any) => e.event_id), [ids[3]]);
      const filter = encodeURIComponent(JSON.stringify({ types: ['m.room.message'], limit: 3 }));
      const page = await s.call('GET', `/rooms/${seg(roomId)}/messages?dir=b&filter=${filter}`, { token: alice.token });
      assert.deepEqual(page.body.chunk.map((e: any) => e.event_id), [ids[4], ids[3], ids[2]]);
      expectError(await s.call('GET', `/rooms/${seg(roomId)}/messages?dir=x`, { token: alice.token }), 400, 'M_INVALID_PARAM');
      const notFilter = encodeURIComponent(JSON.stringify({ types: 'm.room.message' }));
      for (const path of [`/rooms/${seg(roomId)}/messages`, `/rooms/${seg(roomId)}/context/${seg(ids[2]!)}`]) {
        expectError(await s.call('GET', `${path}?filter=%7Bbad`, { token: alice.token }), 400, 'M_NOT_JSON');
        expectError(await s.call('GET', `${path}?filter=${notFilter}`, { token: alice.token }), 400, 'M_BAD_JSON');
        expectError(await s.call('GET', `${path}?filter=%5B%5D`, { token: alice.token }), 400, 'M_BAD_JSON');
      }
      expectError(await s.call('GET', `/rooms/${seg(roomId)}/messages?from=nonsense`, { token: alice.token }), 400, 'M_INVALID_PARAM');
      expectError(await s.call('GET', `/rooms/${seg(roomId)}/messages?limit=abc`, { token: alice.token }), 400, 'M_INVALID_PARAM');
    });

    test('aliases and the directory', async () => {
      const roomId = await create();
      const alias = `#dir-${backend.name}:${SERVER}`;
      assert.equal((await s.call('PUT', `/directory/room/${seg(alias)}`, { token: alice.token, body: { room_id: roomId } })).status, 200);
      expectError(await s.call('PUT', `/directory/room/${seg(alias)}`, { token: alice.token, body: { room_id: roomId } }), 409, 'M_UNKNOWN');
      expectError(await s.call('PUT', `/directory/room/${seg(`#other:${SERVER}`)}`, { token: alice.token, body: {} }), 400, 'M_MISSING_PARAM');
      assert.deepEqual((await s.call('GET', `/directory/room/${seg(alias)}`)).body, { room_id: roomId, servers: [SERVER] });
      assert.deepEqual((await s.call('GET', `/rooms/${seg(roomId)}/aliases`, { token: alice.token })).body, { aliases: [alias] });
      expectError(await s.call('DELETE', `/directory/room/${seg(alias)}`, { token: bob.token }), 403, 'M_FORBIDDEN');
      assert.equal((await s.call('DELETE', `/directory/room/${seg(alias)}`, { token: admin.token })).status, 200);
      expectError(await s.call('GET', `/directory/room/${seg(alias)}`), 404, 'M_NOT_FOUND');

      assert.deepEqual((await s.call('GET', `/directory/list/room/${seg(roomId)}`)).body, { visibility: 'private' });
      expectError(await s.call('PUT', `/directory/list/room/${seg(roomId)}`, { token: bob.token, body: { visibility: 'public' } }), 403, 'M_FORBIDDEN');
      expectError(await s.call('PUT', `/directory/list/room/${seg(roomId)}`, { token: alice.token, body: { visibility: 'secret' } }), 400, 'M_INVALID_PARAM');
      await s.call('PUT', `/directory/list/room/${seg(roomId)}`, { token: alice.token, body: { visibility: 'public' } });
      await s.call('PUT', `/rooms/${seg(roomId)}/state/m.room.name`, { token: alice.token, body: { name: 'Findable Place' } });
      const listed = await s.call('GET', '/publicRooms?limit=50');
      assert.ok(listed.body.chunk.some((r: any) => r.room_id === roomId && r.name === 'Findable Place'));
      const searched = await s.call('POST', '/publicRooms', { token: bob.token, body: { filter: { generic_search_term: 'findable' }, limit: 5 } });
      assert.deepEqual(searched.body.chunk.map((r: any) => r.room_id), [roomId]);
      expectError(await s.call('POST', '/publicRooms', { body: {} }), 401, 'M_MISSING_TOKEN');
      expectError(await s.call('POST', '/publicRooms', { token: bob.token, body: { limit: 'ten' } }), 400, 'M_BAD_JSON');
    });

    test('errors: tokens, unknown rooms and events, bad bodies, versions, sizes, wrong methods', async () => {
      const roomId = await create();
      const r = `/rooms/${seg(roomId)}`;
      expectError(await s.call('GET', `${r}/state`), 401, 'M_MISSING_TOKEN');
      expectError(await s.call('GET', `${r}/state`, { token: 'nope' }), 401, 'M_UNKNOWN_TOKEN');
      expectError(await s.call('GET', `/rooms/${seg(`!missing:${SERVER}`)}/state`, { token: alice.token }), 404, 'M_NOT_FOUND');
      expectError(await s.call('PUT', `/rooms/${seg(`!missing:${SERVER}`)}/send/m.room.message/x`, { token: alice.token, body: {} }), 404, 'M_NOT_FOUND');
      expectError(await s.call('GET', `${r}/event/${seg('$missing')}`, { token: alice.token }), 404, 'M_NOT_FOUND');
      expectError(await s.call('PUT', `${r}/send/m.room.message/x1`, { token: bob.token, body: { body: 'not in room' } }), 403, 'M_FORBIDDEN');
      expectError(await s.call('PUT', `${r}/send/m.room.message/x2`, { token: alice.token, body: '{not json' }), 400, 'M_NOT_JSON');
      expectError(await s.call('PUT', `${r}/send/m.room.message/x3`, { token: alice.token, body: '[1,2]' }), 400, 'M_BAD_JSON');
      expectError(await s.call('PUT', `${r}/send/m.room.message/x4`, { token: alice.token, body: { n: 1.5 } }), 400, 'M_BAD_JSON');
      expectError(await s.call('PUT', `${r}/send/m.room.message/x5`, { token: alice.token, body: { body: 'x'.repeat(70_000) } }), 413, 'M_TOO_LARGE');
      expectError(await s.call('POST', '/createRoom', { token: alice.token, body: { room_version: '42' } }), 400, 'M_UNSUPPORTED_ROOM_VERSION');
      expectError(await s.call('POST', '/createRoom', { token: alice.token, body: { preset: 'party' } }), 400, 'M_INVALID_PARAM');
      expectError(await s.call('POST', '/createRoom', { token: alice.token, body: { invite: 'bob' } }), 400, 'M_BAD_JSON');
      expectError(await s.call('POST', '/createRoom', { token: alice.token, body: { initial_state: [{ type: 'x' }] } }), 400, 'M_BAD_JSON');
      await create({ room_alias_name: `taken-${backend.name}` });
      expectError(await s.call('POST', '/createRoom', { token: bob.token, body: { room_alias_name: `taken-${backend.name}` } }), 400, 'M_ROOM_IN_USE');
      expectError(await s.call('POST', `${r}/forget`, { token: alice.token, body: {} }), 400, 'M_UNKNOWN');
      expectError(await s.call('GET', `${r}/send/m.room.message/x6`, { token: alice.token }), 405, 'M_UNRECOGNIZED');
      expectError(await s.call('POST', `/join/${seg('#nowhere:elsewhere.org')}`, { token: alice.token, body: {} }), 404, 'M_NOT_FOUND');
    });
  });
}
