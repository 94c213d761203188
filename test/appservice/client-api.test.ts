// Application services on the client API of a real server: the as_token as access token, acting
// as the service's own user or, with ?user_id=, as a user of its namespaces (and ?device_id=);
// /register and /login of type m.login.application_service; exclusive user and alias namespaces
// (M_EXCLUSIVE); rate-limit exemption by `rate_limited: false`. Both storage backends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { enc, request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-appservice-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const BRIDGE_AS = 'bridge-as-token-0123456789';
const BOT_AS = 'bot-as-token-0123456789';
const bridgeFile = join(dir, 'bridge.yaml');
writeFileSync(
  bridgeFile,
  `id: bridge
url: null
as_token: ${BRIDGE_AS}
hs_token: bridge-hs-token-0123456789
sender_localpart: bridgebot
rate_limited: false
namespaces:
  users:
    - exclusive: true
      regex: '@_bridge_.*:localhost'
    - exclusive: true
      regex: '@tg_.*:localhost'
  aliases:
    - exclusive: true
      regex: '#_bridge_.*:localhost'
`,
);
const botFile = join(dir, 'bot.yaml');
writeFileSync(
  botFile,
  `id: bot
url: null
as_token: ${BOT_AS}
hs_token: bot-hs-token-0123456789
sender_localpart: helperbot
namespaces:
  users:
    - exclusive: false
      regex: '@botuser_.*:localhost'
`,
);

type Reply = Awaited<ReturnType<typeof request>>;
const body = (r: Reply) => r.body as Record<string, unknown>;

for (const { backend, skip } of await serverBackends()) {
  describe(`application services on the client API (${backend})`, { skip }, () => {
    let hs: TestServer;
    const call = (method: string, path: string, payload?: unknown, token?: string) =>
      request(hs.baseUrl, method, `/_chat/client/v3${path}`, payload, token !== undefined ? { token } : {});
    const expectError = (r: Reply, status: number, errcode: string) => {
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(body(r)['errcode'], errcode);
    };

    before(async () => {
      hs = await startTestServer({
        backend,
        config: {
          app_service_config_files: [bridgeFile, botFile],
          // Limits low enough to reach: the bridge (rate_limited: false) is exempt, the bot is not.
          client_api: { rate_limiting: { enabled: true, message: { per_second: 0.001, burst_count: 2 } } },
        },
      });
    });
    after(() => hs?.close());

    test("the as_token acts as the service's own user, made at start", async () => {
      const r = await call('GET', '/account/whoami', undefined, BRIDGE_AS);
      assert.equal(r.status, 200);
      assert.deepEqual(body(r), { user_id: '@bridgebot:localhost', is_guest: false });
      const bot = await call('GET', '/account/whoami', undefined, BOT_AS);
      assert.equal(body(bot)['user_id'], '@helperbot:localhost');
      const q = await request(hs.baseUrl, 'GET', `/_chat/client/v3/account/whoami?access_token=${BRIDGE_AS}`);
      assert.equal(body(q)['user_id'], '@bridgebot:localhost');
    });

    test('/register with m.login.application_service makes users of its namespace, and only those', async () => {
      const made = await call('POST', '/register', { type: 'm.login.application_service', username: '_bridge_alice' }, BRIDGE_AS);
      assert.equal(made.status, 200, JSON.stringify(made.body));
      assert.equal(body(made)['user_id'], '@_bridge_alice:localhost');
      const token = body(made)['access_token'] as string;
      assert.equal(typeof token, 'string');
      assert.equal(body(await call('GET', '/account/whoami', undefined, token))['user_id'], '@_bridge_alice:localhost');

      const quiet = await call('POST', '/register', { type: 'm.login.application_service', username: '_bridge_bob', inhibit_login: true }, BRIDGE_AS);
      assert.equal(quiet.status, 200);
      assert.deepEqual(body(quiet), { user_id: '@_bridge_bob:localhost', home_server: 'localhost' });

      expectError(await call('POST', '/register', { type: 'm.login.application_service', username: 'someone' }, BRIDGE_AS), 400, 'M_EXCLUSIVE');
      // The bot's namespace is not exclusive, but the bridge's users are the bridge's alone.
      expectError(await call('POST', '/register', { type: 'm.login.application_service', username: '_bridge_carol' }, BOT_AS), 400, 'M_EXCLUSIVE');
      expectError(await call('POST', '/register', { type: 'm.login.application_service', username: '_bridge_alice' }, BRIDGE_AS), 400, 'M_USER_IN_USE');
      expectError(await call('POST', '/register', { type: 'm.login.application_service', username: '_bridge_dave' }), 401, 'M_MISSING_TOKEN');
      expectError(await call('POST', '/register', { type: 'm.login.application_service', username: '_bridge_dave' }, token), 401, 'M_UNKNOWN_TOKEN');
      expectError(await call('POST', '/register', { type: 'm.login.application_service' }, BRIDGE_AS), 400, 'M_MISSING_PARAM');
    });

    test('nobody else registers users of an exclusive namespace', async () => {
      expectError(await call('POST', '/register', { username: 'tg_eve', password: 'a good long password', auth: { type: 'm.login.dummy' } }), 400, 'M_EXCLUSIVE');
      expectError(await call('GET', `/register/available?username=tg_eve`), 400, 'M_EXCLUSIVE');
      expectError(await call('GET', `/register/available?username=bridgebot`), 400, 'M_EXCLUSIVE');
      // A non-exclusive namespace reserves nothing.
      const free = await call('GET', `/register/available?username=botuser_free`);
      assert.equal(free.status, 200, JSON.stringify(free.body));
    });

    test('?user_id= acts as a user of the namespace; others are refused', async () => {
      const r = await call('GET', `/account/whoami?user_id=${enc('@_bridge_alice:localhost')}`, undefined, BRIDGE_AS);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(body(r), { user_id: '@_bridge_alice:localhost', is_guest: false });
      const outsider = await hs.registerUser('outsider', 'outsider-password');
      expectError(await call('GET', `/account/whoami?user_id=${enc(outsider.userId)}`, undefined, BRIDGE_AS), 403, 'M_FORBIDDEN');
      expectError(await call('GET', `/account/whoami?user_id=${enc('@_bridge_nobody:localhost')}`, undefined, BRIDGE_AS), 403, 'M_FORBIDDEN');
      expectError(await call('GET', `/account/whoami?user_id=${enc('@_bridge_alice:localhost')}`, undefined, BOT_AS), 403, 'M_FORBIDDEN');
    });

    test('?device_id= acts as one of the user\'s devices, which must exist', async () => {
      const login = await call('POST', '/login', { type: 'm.login.application_service', identifier: { type: 'm.id.user', user: '_bridge_bob' }, device_id: 'BRIDGEDEV' }, BRIDGE_AS);
      assert.equal(login.status, 200, JSON.stringify(login.body));
      assert.equal(body(login)['device_id'], 'BRIDGEDEV');
      const as = `/account/whoami?user_id=${enc('@_bridge_bob:localhost')}`;
      const r = await call('GET', `${as}&org.matrix.msc3202.device_id=BRIDGEDEV`, undefined, BRIDGE_AS);
      assert.deepEqual(body(r), { user_id: '@_bridge_bob:localhost', device_id: 'BRIDGEDEV', is_guest: false });
      const plain = await call('GET', `${as}&device_id=BRIDGEDEV`, undefined, BRIDGE_AS);
      assert.equal(body(plain)['device_id'], 'BRIDGEDEV');
      expectError(await call('GET', `${as}&device_id=NOSUCHDEVICE`, undefined, BRIDGE_AS), 400, 'M_FORBIDDEN');
    });

    test('/login of type m.login.application_service is listed and limited to the namespace', async () => {
      const flows = body(await call('GET', '/login'))['flows'] as { type: string }[];
      assert.ok(flows.some((f) => f.type === 'm.login.application_service'));
      expectError(await call('POST', '/login', { type: 'm.login.application_service', identifier: { type: 'm.id.user', user: 'outsider' } }, BRIDGE_AS), 400, 'M_EXCLUSIVE');
      expectError(await call('POST', '/login', { type: 'm.login.application_service', identifier: { type: 'm.id.user', user: '_bridge_ghost' } }, BRIDGE_AS), 403, 'M_FORBIDDEN');
      expectError(await call('POST', '/login', { type: 'm.login.application_service', identifier: { type: 'm.id.user', user: '_bridge_alice' } }), 401, 'M_MISSING_TOKEN');
    });

    test('events sent as a masqueraded user are that user\'s', async () => {
      const asAlice = `user_id=${enc('@_bridge_alice:localhost')}`;
      const created = await call('POST', `/createRoom?${asAlice}`, { preset: 'public_chat' }, BRIDGE_AS);
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const roomId = body(created)['room_id'] as string;
      const sent = await call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/t1?${asAlice}`, { msgtype: 'm.text', body: 'hello from the bridge' }, BRIDGE_AS);
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      const event = await call('GET', `/rooms/${enc(roomId)}/event/${enc(body(sent)['event_id'] as string)}?${asAlice}`, undefined, BRIDGE_AS);
      assert.equal(body(event)['sender'], '@_bridge_alice:localhost');
    });

    test('aliases of an exclusive namespace are the service\'s to create', async () => {
      const owner = await hs.registerUser('roomowner', 'roomowner-password');
      const room = body(await call('POST', '/createRoom', {}, BRIDGE_AS))['room_id'] as string;
      const alias = enc('#_bridge_room:localhost');
      expectError(await call('PUT', `/directory/room/${alias}`, { room_id: room }, owner.accessToken), 400, 'M_EXCLUSIVE');
      expectError(await call('POST', '/createRoom', { room_alias_name: '_bridge_other' }, owner.accessToken), 400, 'M_EXCLUSIVE');
      const byService = await call('PUT', `/directory/room/${alias}`, { room_id: room }, BRIDGE_AS);
      assert.equal(byService.status, 200, JSON.stringify(byService.body));
      assert.equal(body(await call('GET', `/directory/room/${alias}`))['room_id'], room);
    });

    test('a service without a url cannot be pinged', async () => {
      const r = await request(hs.baseUrl, 'POST', '/_chat/client/v1/appservice/bridge/ping', {}, { token: BRIDGE_AS });
      expectError(r, 400, 'M_URL_NOT_SET');
    });

    test('rate_limited: false exempts the service and its users', async () => {
      const owner = await hs.registerUser('limits', 'limits-password');
      const roomId = body(await call('POST', '/createRoom', { preset: 'public_chat' }, owner.accessToken))['room_id'] as string;
      for (const token of [BRIDGE_AS, BOT_AS]) {
        const joined = await call('POST', `/join/${enc(roomId)}`, {}, token);
        assert.equal(joined.status, 200, JSON.stringify(joined.body));
      }
      const send = (token: string, i: number) => call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/rl-${i}`, { msgtype: 'm.text', body: `n${i}` }, token);
      for (let i = 0; i < 6; i++) assert.equal((await send(BRIDGE_AS, i)).status, 200);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await send(BOT_AS, i)).status);
      assert.ok(statuses.includes(429), `the bot, rate limited, got ${statuses.join(', ')}`);
    });
  });
}

test('a bad registration file stops the server at start, naming the file and the field', async () => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, `id: bad\nurl: null\nas_token: bad-as-token-0123\nhs_token: bad-hs-token-0123\nsender_localpart: badbot\nnamespaces:\n  users:\n    - exclusive: true\n      regex: '@bad_(.*:localhost'\n`);
  await assert.rejects(startTestServer({ config: { app_service_config_files: [bad] } }), (err: Error) => {
    assert.match(err.message, /bad\.yaml: namespaces\.users\[0\]\.regex: invalid regular expression/);
    return true;
  });
  // The same as_token in two files.
  const twin = join(dir, 'twin.yaml');
  writeFileSync(twin, `id: twin\nurl: null\nas_token: ${BRIDGE_AS}\nhs_token: twin-hs-token-0123\nsender_localpart: twinbot\n`);
  await assert.rejects(startTestServer({ config: { app_service_config_files: [bridgeFile, twin] } }), /as_token/);
});
