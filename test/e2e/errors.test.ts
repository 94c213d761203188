// Every kind of failure a client can meet, against a real server on SQLite and PostgreSQL: the
// status, the errcode, an `error` message, JSON, and the CORS headers a browser needs to read it.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { ApiClient, type CallOptions, type Reply, enc, request } from './support/client.js';

const CLIENT_PREFIXES = ['/_matrix/client/v3', '/_matrix/client/r0', '/_chat/client/v3', '/_chat/client/r0'];

/** The reply is the spec's error: this status and errcode, a message, JSON, readable cross-origin. */
function assertError(reply: Reply, status: number, errcodes: string | readonly string[], what: string): void {
  const allowed = typeof errcodes === 'string' ? [errcodes] : errcodes;
  const detail = `${what}: ${reply.status} ${JSON.stringify(reply.body)}`;
  assert.equal(reply.status, status, detail);
  assert.equal(typeof reply.body, 'object', detail);
  assert.ok(allowed.includes(reply.body.errcode), `${detail} (expected ${allowed.join(' or ')})`);
  assert.equal(typeof reply.body.error, 'string', `${detail}: error is a message`);
  assert.ok(reply.body.error.length > 0, detail);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/, `${what}: content type`);
  assert.equal(reply.headers.get('access-control-allow-origin'), '*', `${what}: CORS origin`);
}

for (const { backend, skip } of await serverBackends()) {
  describe(`error replies on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: ApiClient;
    let bob: ApiClient;
    let carol: ApiClient;
    let roomId: string;
    let messageId: string;

    const anon = (method: string, path: string, body?: unknown, options: CallOptions = {}) =>
      request(hs.baseUrl, method, path, body, options);
    const room = (path = '') => `/rooms/${enc(roomId)}${path}`;

    before(async () => {
      const client = async (name: string) => {
        const u = await hs.registerUser(name, `${name}-pw`);
        return new ApiClient(hs.baseUrl, '/_matrix/client/v3', u.userId, u.accessToken, u.deviceId);
      };
      [alice, bob, carol] = await Promise.all([client('alice'), client('bob'), client('carol')]);
      roomId = (await alice.ok('POST', '/createRoom', { preset: 'private_chat', name: 'Errors', invite: [bob.userId] })).room_id;
      await bob.ok('POST', `/join/${enc(roomId)}`, {});
      messageId = await alice.send(roomId, { msgtype: 'm.text', body: 'hi' }, 'txn-1');
    });

    test('malformed JSON is 400 M_NOT_JSON', async () => {
      const cases: [string, string, string | Uint8Array][] = [
        ['POST', '/createRoom', '{"name": '],
        ['PUT', `${room('/send/m.room.message/txn-bad')}`, 'not json at all'],
        ['PUT', `/user/${enc(alice.userId)}/account_data/org.example.x`, '{"a": 1,}'],
        ['PUT', `${room('/state/m.room.topic')}`, "{'topic': 'single quotes'}"],
        // Not UTF-8.
        ['POST', '/createRoom', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])],
      ];
      for (const [method, path, rawBody] of cases) {
        assertError(await alice.call(method, path, undefined, { rawBody }), 400, 'M_NOT_JSON', `${method} ${path}`);
      }
      // Routes that need no token read bodies the same way.
      assertError(await anon('POST', '/_matrix/client/v3/login', undefined, { rawBody: '{bad' }), 400, 'M_NOT_JSON', 'login');
      assertError(await anon('POST', '/_chat/client/r0/register', undefined, { rawBody: '[' }), 400, 'M_NOT_JSON', 'register');
      // A JSON body sent without a content type (as some clients do) is still read.
      const plain = await alice.call('PUT', room('/send/m.room.message/txn-plain'), undefined, {
        rawBody: '{"msgtype":"m.text","body":"typeless"}',
        headers: { 'content-type': 'text/plain' },
      });
      assert.equal(plain.status, 200, JSON.stringify(plain.body));
    });

    test('JSON that is not an object, or fields of the wrong type or value, is 400 M_BAD_JSON or M_INVALID_PARAM', async () => {
      const bad = ['M_BAD_JSON', 'M_INVALID_PARAM'];
      const cases: [ApiClient, string, string, unknown][] = [
        [alice, 'POST', '/createRoom', [1, 2, 3]],
        [alice, 'POST', '/createRoom', 'a string'],
        [alice, 'PUT', room('/send/m.room.message/txn-array'), []],
        [alice, 'POST', '/createRoom', { name: 5 }],
        [alice, 'POST', '/createRoom', { invite: bob.userId }],
        [alice, 'POST', '/createRoom', { preset: 'everyone_welcome' }],
        [alice, 'POST', '/createRoom', { visibility: 'secret' }],
        [alice, 'POST', '/createRoom', { initial_state: [{ type: 'm.room.topic', content: 'no object' }] }],
        [alice, 'POST', room('/invite'), { user_id: 'not a user id' }],
        [alice, 'POST', room('/invite'), { user_id: 42 }],
        [alice, 'PUT', room('/redact/' + enc(messageId) + '/txn-r'), { reason: 7 }],
        [alice, 'PUT', '/sendToDevice/org.example.x/txn-td', { messages: 'everyone' }],
        [bob, 'PUT', room(`/typing/${enc(bob.userId)}`), { typing: 'yes' }],
        [bob, 'PUT', room(`/typing/${enc(bob.userId)}`), { typing: true, timeout: 'soon' }],
        [bob, 'PUT', `/profile/${enc(bob.userId)}/displayname`, { displayname: 5 }],
        [bob, 'POST', '/user/' + enc(bob.userId) + '/filter', { room: { timeline: { limit: 'ten' } } }],
      ];
      for (const [who, method, path, body] of cases) {
        assertError(await who.call(method, path, body), 400, bad, `${method} ${path} ${JSON.stringify(body)}`);
      }
      const queries = [
        `${room('/messages')}?dir=sideways`,
        `${room('/messages')}?limit=many`,
        `${room('/messages')}?from=not-a-token`,
        '/sync?timeout=-5',
        '/sync?timeout=soon',
        '/sync?full_state=maybe',
        '/sync?set_presence=asleep',
        '/sync?since=garbage',
        `/sync?filter=${enc('{"room": 5}')}`,
      ];
      for (const q of queries) assertError(await alice.call('GET', q), 400, bad, `GET ${q}`);
      // A filter parameter that is not JSON at all has its own code.
      for (const q of [`${room('/messages')}?filter=${enc('{not json')}`, `/sync?filter=${enc('{not json')}`]) assertError(await alice.call('GET', q), 400, 'M_NOT_JSON', `GET ${q}`);
      // A missing required field has its own code.
      assertError(await bob.call('PUT', room(`/typing/${enc(bob.userId)}`), {}), 400, ['M_MISSING_PARAM', 'M_BAD_JSON'], 'typing without typing');
      assertError(await alice.call('POST', room('/invite'), {}), 400, ['M_MISSING_PARAM', 'M_BAD_JSON'], 'invite without user_id');
    });

    test('a body over the limit is 413 M_TOO_LARGE, and so is an event over 64 KiB', async () => {
      const huge = JSON.stringify({ msgtype: 'm.text', body: 'x'.repeat(1024 * 1024 + 10) });
      assertError(await alice.call('PUT', room('/send/m.room.message/txn-huge'), undefined, { rawBody: huge }), 413, 'M_TOO_LARGE', 'a 1 MiB body');
      assertError(await anon('POST', '/_chat/client/v3/login', undefined, { rawBody: huge }), 413, 'M_TOO_LARGE', 'a 1 MiB login');
      const big = { msgtype: 'm.text', body: 'y'.repeat(70 * 1024) };
      assertError(await alice.call('PUT', room('/send/m.room.message/txn-big'), big), 413, 'M_TOO_LARGE', 'a 70 KiB event');
      assertError(await alice.call('PUT', room('/state/org.example.big/'), big), 413, 'M_TOO_LARGE', 'a 70 KiB state event');
      // A body streamed without a length is held to the same limit.
      const bytes = new TextEncoder().encode(huge);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.slice(i, i + 64 * 1024));
          controller.close();
        },
      });
      const res = await alice.call('PUT', room('/send/m.room.message/txn-stream'), undefined, { rawBody: stream });
      assertError(res, 413, 'M_TOO_LARGE', 'a streamed 1 MiB body');
      // Nothing of it was stored.
      const page = await alice.ok('GET', `${room('/messages')}?dir=b&limit=5`);
      for (const e of page.chunk) assert.ok(JSON.stringify(e).length < 60 * 1024);
    });

    test('an unknown endpoint is 404 M_UNRECOGNIZED', async () => {
      const paths = [
        '/_matrix/client/v3/no_such_endpoint',
        '/_chat/client/v3/rooms',
        `/_matrix/client/v3/rooms/${enc(roomId)}/no_such_thing`,
        '/_matrix/client/v42/sync',
        '/_matrix/nothing/here',
        '/_chat/client/unstable/org.example.feature',
        '/not-matrix-at-all',
      ];
      for (const path of paths) {
        assertError(await alice.call('GET', path), 404, 'M_UNRECOGNIZED', `GET ${path}`);
        assertError(await anon('POST', path, {}), 404, 'M_UNRECOGNIZED', `POST ${path} without a token`);
      }
    });

    test('a malformed URL is 400 M_UNRECOGNIZED in the same shape', async () => {
      for (const path of [`/_matrix/client/v3/rooms/%E0%A4%A/state`, `/_chat/client/v3/profile/%ZZ`]) {
        assertError(await alice.call('GET', path), 400, 'M_UNRECOGNIZED', `GET ${path}`);
      }
    });

    test('a known path with the wrong method is 405 M_UNRECOGNIZED', async () => {
      for (const prefix of CLIENT_PREFIXES) {
        assertError(await alice.call('GET', `${prefix}/createRoom`), 405, 'M_UNRECOGNIZED', `GET ${prefix}/createRoom`);
        assertError(await alice.call('DELETE', `${prefix}/createRoom`), 405, 'M_UNRECOGNIZED', `DELETE ${prefix}/createRoom`);
        assertError(await alice.call('POST', `${prefix}/sync`, {}), 405, 'M_UNRECOGNIZED', `POST ${prefix}/sync`);
      }
      assertError(await alice.call('PUT', '/account/whoami', {}), 405, 'M_UNRECOGNIZED', 'PUT whoami');
      assertError(await alice.call('GET', room('/send/m.room.message/txn-get')), 405, 'M_UNRECOGNIZED', 'GET send');
      assertError(await alice.call('POST', room('/state/m.room.topic'), {}), 405, 'M_UNRECOGNIZED', 'POST state');
      // The method is judged before the token: no token needed to learn the method is wrong.
      assertError(await anon('DELETE', '/_matrix/client/v3/sync'), 405, 'M_UNRECOGNIZED', 'DELETE sync without a token');
      // Methods no route serves at all are wrong methods too.
      assertError(await alice.call('PATCH', '/createRoom', {}), 405, 'M_UNRECOGNIZED', 'PATCH createRoom');
      assertError(await alice.call('PATCH', '/_chat/client/v3/account/whoami'), 405, 'M_UNRECOGNIZED', 'PATCH whoami');
      const head = await alice.call('HEAD', '/createRoom');
      assert.equal(head.status, 405, 'HEAD createRoom');
      assert.equal(head.headers.get('access-control-allow-origin'), '*');
      // HEAD of a GET route is answered.
      assert.equal((await alice.call('HEAD', '/account/whoami')).status, 200);
    });

    test('a missing token is 401 M_MISSING_TOKEN', async () => {
      const cases: [string, string, unknown?][] = [
        ['GET', '/_matrix/client/v3/sync'],
        ['GET', '/_chat/client/v3/account/whoami'],
        ['GET', '/_matrix/client/r0/joined_rooms'],
        ['POST', '/_matrix/client/v3/createRoom', {}],
        ['PUT', `/_chat/client/v3/rooms/${enc(roomId)}/send/m.room.message/txn-anon`, { msgtype: 'm.text', body: 'x' }],
        ['GET', `/_matrix/client/v3/rooms/${enc(roomId)}/messages`],
        ['POST', '/_matrix/client/v3/logout'],
      ];
      for (const [method, path, body] of cases) assertError(await anon(method, path, body), 401, 'M_MISSING_TOKEN', `${method} ${path}`);
      // A header that is not a bearer token is no token.
      assertError(await anon('GET', '/_matrix/client/v3/account/whoami', undefined, { headers: { authorization: 'Basic YWxpY2U6cHc=' } }), 401, 'M_MISSING_TOKEN', 'Basic auth');
    });

    test('an invalid token is 401 M_UNKNOWN_TOKEN, in the header, in the query and after logout', async () => {
      const bogus = 'syt_bogus_token_that_was_never_issued';
      assertError(await anon('GET', '/_matrix/client/v3/account/whoami', undefined, { token: bogus }), 401, 'M_UNKNOWN_TOKEN', 'header');
      assertError(await anon('GET', `/_chat/client/v3/account/whoami?access_token=${bogus}`), 401, 'M_UNKNOWN_TOKEN', 'query');
      assertError(await anon('GET', '/_matrix/client/v3/sync', undefined, { token: bogus }), 401, 'M_UNKNOWN_TOKEN', 'sync');
      // A token stops working once its session logs out.
      const login = await request(hs.baseUrl, 'POST', '/_matrix/client/v3/login', {
        type: 'm.login.password',
        identifier: { type: 'm.id.user', user: 'carol' },
        password: 'carol-pw',
      });
      assert.equal(login.status, 200);
      const token = login.body.access_token as string;
      assert.equal((await anon('GET', '/_matrix/client/v3/account/whoami', undefined, { token })).status, 200);
      assert.equal((await anon('POST', '/_matrix/client/v3/logout', undefined, { token })).status, 200);
      assertError(await anon('GET', '/_matrix/client/v3/account/whoami', undefined, { token }), 401, 'M_UNKNOWN_TOKEN', 'after logout');
      assertError(await anon('POST', '/_matrix/client/v3/createRoom', {}, { token }), 401, 'M_UNKNOWN_TOKEN', 'createRoom after logout');
    });

    test('an action the user may not take is 403 M_FORBIDDEN', async () => {
      const cases: [ApiClient, string, string, unknown?][] = [
        // carol is not in the room.
        [carol, 'PUT', room('/send/m.room.message/txn-c'), { msgtype: 'm.text', body: 'let me in' }],
        [carol, 'POST', `/join/${enc(roomId)}`, {}],
        [carol, 'GET', `${room('/messages')}?dir=b`],
        [carol, 'GET', room('/state')],
        [carol, 'POST', room('/invite'), { user_id: carol.userId }],
        // bob is in the room at power 0.
        [bob, 'PUT', room('/state/m.room.power_levels'), { users: { [bob.userId]: 100 } }],
        [bob, 'PUT', room('/state/m.room.name'), { name: "bob's room" }],
        [bob, 'POST', room('/kick'), { user_id: alice.userId }],
        [bob, 'POST', room('/ban'), { user_id: alice.userId }],
        [bob, 'PUT', room(`/redact/${enc(messageId)}/txn-r`), {}],
        // Other people's data.
        [bob, 'PUT', room(`/typing/${enc(alice.userId)}`), { typing: true }],
        [bob, 'PUT', `/profile/${enc(alice.userId)}/displayname`, { displayname: 'not alice' }],
        [bob, 'GET', `/user/${enc(alice.userId)}/account_data/m.direct`],
        [bob, 'PUT', `/user/${enc(alice.userId)}/account_data/m.direct`, {}],
        [bob, 'GET', `/user/${enc(alice.userId)}/filter/0`],
      ];
      for (const [who, method, path, body] of cases) {
        assertError(await who.call(method, path, body), 403, 'M_FORBIDDEN', `${who.userId} ${method} ${path}`);
      }
      // The room is unchanged by all of it.
      const state = (await alice.ok('GET', room('/state'))) as any[];
      assert.equal(state.find((e) => e.type === 'm.room.name').content.name, 'Errors');
      assert.equal(state.filter((e) => e.type === 'm.room.member' && e.content.membership === 'join').length, 2);
    });

    test('an unknown room, event, alias or state is 404 M_NOT_FOUND', async () => {
      const nowhere = enc('!nowhere:localhost');
      const cases: [string, string, unknown?][] = [
        ['POST', `/join/${nowhere}`, {}],
        ['GET', `/rooms/${nowhere}/state`],
        ['GET', `/rooms/${nowhere}/messages?dir=b`],
        ['PUT', `/rooms/${nowhere}/send/m.room.message/txn-nowhere`, { msgtype: 'm.text', body: 'anyone?' }],
        ['POST', `/join/${enc('#nowhere:localhost')}`, {}],
        ['GET', `/directory/room/${enc('#nowhere:localhost')}`],
        ['GET', room(`/event/${enc('$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')}`)],
        ['GET', room(`/context/${enc('$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')}`)],
        ['GET', room('/state/m.room.topic')],
        ['GET', room(`/state/m.room.member/${enc('@nobody:localhost')}`)],
        ['POST', room(`/receipt/m.read/${enc('$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')}`), {}],
        ['PUT', room(`/redact/${enc('$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')}/txn-nf`), {}],
        ['GET', `/user/${enc(alice.userId)}/account_data/org.example.never_set`],
        ['GET', `/user/${enc(alice.userId)}/rooms/${enc(roomId)}/account_data/org.example.never_set`],
        ['GET', `/profile/${enc('@nobody:localhost')}`],
        ['GET', `/user/${enc(alice.userId)}/filter/987654`],
      ];
      for (const [method, path, body] of cases) {
        assertError(await alice.call(method, path, body), 404, 'M_NOT_FOUND', `${method} ${path}`);
      }
      // An event someone may not see is not found for them either, so its existence does not leak.
      assertError(await carol.call('GET', room(`/event/${enc(messageId)}`)), 404, 'M_NOT_FOUND', 'a stranger asking for an event');
    });

    test('CORS: preflights are answered for any path, and every reply carries the headers', async () => {
      for (const path of ['/_matrix/client/v3/sync', `/_chat/client/v3/rooms/${enc(roomId)}/send/m.room.message/t1`, '/_matrix/client/v3/no_such_endpoint']) {
        const res = await anon('OPTIONS', path, undefined, {
          headers: {
            origin: 'https://app.example.org',
            'access-control-request-method': 'PUT',
            'access-control-request-headers': 'authorization, content-type',
          },
        });
        assert.ok(res.status === 200 || res.status === 204, `OPTIONS ${path}: ${res.status}`);
        assert.equal(res.headers.get('access-control-allow-origin'), '*');
        const methods = (res.headers.get('access-control-allow-methods') ?? '').split(/,\s*/);
        for (const m of ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS']) assert.ok(methods.includes(m), `${m} allowed: ${methods.join(',')}`);
        const headers = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
        for (const h of ['authorization', 'content-type', 'x-requested-with']) assert.ok(headers.includes(h), `${h} allowed: ${headers.join(',')}`);
      }
      // Successful replies carry them too (errors are checked in every test above).
      const ok = await alice.call('GET', '/account/whoami', undefined, { headers: { origin: 'https://app.example.org' } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('access-control-allow-origin'), '*');
      const versions = await anon('GET', '/_matrix/client/versions');
      assert.equal(versions.status, 200);
      assert.equal(versions.headers.get('access-control-allow-origin'), '*');
    });
  });
}
