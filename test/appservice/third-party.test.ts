// Third-party lookups through a real server to two plain node:http application services that
// bridge "irc" (both) and "gitter" (one): protocol metadata merged with named instances, user and
// location lookups asked of the protocol's services and concatenated, reverse lookups asked of all,
// bad entries dropped, a failing service left out, the fields passed on and the access token not,
// 404 for an unknown protocol, and every lookup only for a logged-in user. Both storage backends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';

interface Asked {
  readonly path: string;
  readonly query: Record<string, string>;
  readonly authorization: string | undefined;
}

/** Answers GETs with what `answers` holds for the path (404 otherwise) and keeps what it was asked. */
class Bridge {
  readonly asked: Asked[] = [];
  url = '';
  private server: Server | undefined;
  constructor(readonly answers: Record<string, { status: number; body: unknown }>) {}

  async start(): Promise<void> {
    this.server = createHttpServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const path = url.pathname.replace(/^\/_(chat|matrix)\/app\/v1/, '');
      this.asked.push({ path, query: Object.fromEntries(url.searchParams), authorization: req.headers.authorization });
      const answer = url.pathname.startsWith('/_matrix/') ? this.answers[path] : undefined;
      res.writeHead(answer?.status ?? 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer?.body ?? { errcode: 'M_UNRECOGNIZED', error: 'no' }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

const IRC_META = (network: string) => ({
  user_fields: ['network', 'nickname'],
  location_fields: ['network', 'channel'],
  icon: 'mxc://example.org/irc',
  field_types: { network: { regexp: '([a-z0-9]+\\.)*[a-z0-9]+', placeholder: 'irc.example.org' } },
  instances: [{ desc: network, icon: 'mxc://example.org/net', fields: { network }, network_id: network }],
});

for (const { backend, skip } of await serverBackends()) {
  describe(`third-party lookups (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-appservice-3pe-'));
    const one = new Bridge({
      '/thirdparty/protocol/irc': { status: 200, body: IRC_META('libera') },
      '/thirdparty/protocol/gitter': { status: 200, body: { user_fields: [], location_fields: [], icon: '', field_types: {}, instances: [] } },
      '/thirdparty/user/irc': { status: 200, body: [{ userid: '@_irc_alice:localhost', protocol: 'irc', fields: { network: 'libera', nickname: 'alice' } }, { protocol: 'irc' }] },
      '/thirdparty/location/irc': { status: 200, body: [{ alias: '#_irc_libera_chat:localhost', protocol: 'irc', fields: { network: 'libera', channel: '#chat' } }] },
      '/thirdparty/user': { status: 200, body: [{ userid: '@_irc_alice:localhost', protocol: 'irc', fields: { network: 'libera', nickname: 'alice' } }] },
      '/thirdparty/location': { status: 200, body: [{ alias: '#_irc_libera_chat:localhost', protocol: 'irc', fields: { network: 'libera', channel: '#chat' } }] },
    });
    const two = new Bridge({
      '/thirdparty/protocol/irc': { status: 200, body: IRC_META('oftc') },
      '/thirdparty/user/irc': { status: 500, body: { errcode: 'M_UNKNOWN', error: 'broken' } },
      '/thirdparty/location/irc': { status: 200, body: [{ alias: '#_oirc_oftc_chat:localhost', protocol: 'irc', fields: { network: 'oftc', channel: '#chat' } }, 'junk'] },
      '/thirdparty/user': { status: 200, body: 'not a list' },
    });
    let hs: TestServer;
    let token: string;
    const get = async (path: string, auth = true) => request(hs.baseUrl, 'GET', `/_chat/client/v3${path}`, undefined, auth ? { token } : {});

    before(async () => {
      await one.start();
      await two.start();
      const files = [join(dir, 'one.yaml'), join(dir, 'two.yaml')];
      writeFileSync(
        files[0]!,
        `id: one\nurl: ${one.url}\nas_token: one-as-token-0123\nhs_token: one-hs-token-0123\nsender_localpart: onebot\nprotocols: [irc, gitter]\n` +
          `namespaces:\n  users:\n    - exclusive: true\n      regex: '@_irc_.*:localhost'\n`,
      );
      writeFileSync(
        files[1]!,
        `id: two\nurl: ${two.url}\nas_token: two-as-token-0123\nhs_token: two-hs-token-0123\nsender_localpart: twobot\nprotocols: [irc]\n` +
          `namespaces:\n  users:\n    - exclusive: true\n      regex: '@_oirc_.*:localhost'\n`,
      );
      hs = await startTestServer({ backend, config: { app_service_config_files: files } });
      token = (await hs.registerUser('alice', 'alice-password')).accessToken;
    });
    after(async () => {
      await hs?.close();
      await one.close();
      await two.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('protocols: each declared one, instances of every service, each named', async () => {
      const r = await get('/thirdparty/protocols');
      assert.equal(r.status, 200);
      const body = r.body as Record<string, { instances: { network_id: string; instance_id: string }[]; user_fields: string[] }>;
      assert.deepEqual(Object.keys(body).sort(), ['gitter', 'irc']);
      assert.deepEqual(body['irc']!.user_fields, ['network', 'nickname']);
      assert.deepEqual(
        body['irc']!.instances.map((i) => [i.network_id, i.instance_id]).sort(),
        [['libera', 'one|libera'], ['oftc', 'two|oftc']],
      );
      const irc = await get('/thirdparty/protocol/irc');
      assert.equal(irc.status, 200);
      assert.deepEqual(irc.body, body['irc']);
      // The hs_token goes as the bearer token, to each service's own url.
      assert.ok(one.asked.every((a) => a.authorization === 'Bearer one-hs-token-0123'));
      assert.ok(two.asked.every((a) => a.authorization === 'Bearer two-hs-token-0123'));
    });

    test('an unknown protocol is 404 M_NOT_FOUND; its lookups find nothing', async () => {
      const r = await get('/thirdparty/protocol/xmpp');
      assert.equal(r.status, 404);
      assert.equal((r.body as { errcode: string }).errcode, 'M_NOT_FOUND');
      const users = await get('/thirdparty/user/xmpp?nickname=x');
      assert.equal(users.status, 200);
      assert.deepEqual(users.body, []);
    });

    test("users and locations: the protocol's services asked with the fields, answers joined, bad entries and failures left out", async () => {
      const users = await get('/thirdparty/user/irc?network=libera&nickname=alice');
      assert.equal(users.status, 200);
      assert.deepEqual(users.body, [{ userid: '@_irc_alice:localhost', protocol: 'irc', fields: { network: 'libera', nickname: 'alice' } }]);
      const asked = one.asked.find((a) => a.path === '/thirdparty/user/irc');
      assert.deepEqual(asked?.query, { network: 'libera', nickname: 'alice' });
      const locations = await get('/thirdparty/location/irc?channel=%23chat');
      assert.equal(locations.status, 200);
      assert.deepEqual((locations.body as { alias: string }[]).map((l) => l.alias).sort(), ['#_irc_libera_chat:localhost', '#_oirc_oftc_chat:localhost']);
      // The client's access token, given as a query parameter, is not passed on.
      await request(hs.baseUrl, 'GET', `/_chat/client/v3/thirdparty/location/irc?channel=x&access_token=${token}`);
      assert.ok(![...one.asked, ...two.asked].some((a) => JSON.stringify(a.query).includes(token)));
    });

    test('reverse lookups ask every service; the id is required', async () => {
      const users = await get('/thirdparty/user?userid=%40_irc_alice%3Alocalhost');
      assert.equal(users.status, 200);
      assert.deepEqual((users.body as { userid: string }[]).map((u) => u.userid), ['@_irc_alice:localhost']);
      assert.deepEqual(two.asked.find((a) => a.path === '/thirdparty/user')?.query, { userid: '@_irc_alice:localhost' });
      const locations = await get('/thirdparty/location?alias=%23_irc_libera_chat%3Alocalhost');
      assert.equal(locations.status, 200);
      assert.equal((locations.body as unknown[]).length, 1);
      const missing = await get('/thirdparty/user');
      assert.equal(missing.status, 400);
      assert.equal((missing.body as { errcode: string }).errcode, 'M_MISSING_PARAM');
    });

    test('lookups need a logged-in user', async () => {
      for (const path of ['/thirdparty/protocols', '/thirdparty/protocol/irc', '/thirdparty/user/irc', '/thirdparty/location?alias=x']) {
        const r = await get(path, false);
        assert.equal(r.status, 401, path);
        assert.equal((r.body as { errcode: string }).errcode, 'M_MISSING_TOKEN', path);
      }
    });
  });
}
