// Other servers' media over federation: hs1.test (127.0.0.2, naming `chat`, uploads up to 100 kB)
// and hs2.test (127.0.0.3, naming `matrix`) over real TLS. Bob uploads on hs2; alice on hs1
// downloads it and a thumbnail of it, fetched from hs2's federation media API (multipart) once and
// kept: with hs2 stopped, hs1 still serves it. Unknown media is 404; media over hs1's limit is
// refused; quarantined remote media is 404 on hs1. The federation media path takes a signed request.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { request } from '../e2e/support/client.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { serverBackends, type TestServer, type TestUser } from '../support/server.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`media across servers, on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;
    let alice: TestUser;
    let bob: TestUser;
    let png: Buffer;
    let pngId: string;

    const uploadOnHs2 = async (data: Buffer, type: string, name?: string) => {
      const q = name === undefined ? '' : `?filename=${encodeURIComponent(name)}`;
      const res = await fetch(`${hs2.baseUrl}/_matrix/media/v3/upload${q}`, { method: 'POST', headers: { ...hs2.auth(bob), 'content-type': type }, body: data });
      assert.equal(res.status, 200);
      return ((await res.json()) as { content_uri: string }).content_uri.replace('mxc://hs2.test/', '');
    };
    const fromHs1 = (path: string) => fetch(`${hs1.baseUrl}${path}`, { headers: hs1.auth(alice) });

    before(async () => {
      net = await startFederationNet();
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend, config: { media_api: { max_file_size_bytes: 100_000 } } });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend });
      alice = await hs1.registerUser('alice', 'alice-password');
      bob = await hs2.registerUser('bob', 'bob-password');
      png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#29c' } }).png().toBuffer();
      pngId = await uploadOnHs2(png, 'image/png', 'sky.png');
    });
    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await net?.close();
    });

    test("alice on hs1 downloads bob's upload on hs2, with its type and name", async () => {
      const res = await fromHs1(`/_matrix/client/v1/media/download/hs2.test/${pngId}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.equal(res.headers.get('content-disposition'), "inline; filename*=utf-8''sky.png");
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(png));
      const legacy = await fetch(`${hs1.baseUrl}/_matrix/media/v3/download/hs2.test/${pngId}`);
      assert.ok(Buffer.from(await legacy.arrayBuffer()).equals(png));
    });

    test('a thumbnail of it is made on hs1', async () => {
      const res = await fromHs1(`/_matrix/client/v1/media/thumbnail/hs2.test/${pngId}?width=32&height=32&method=crop`);
      assert.equal(res.status, 200);
      const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['png', 32, 32]);
    });

    test('unknown media is 404; media over hs1’s limit is refused', async () => {
      const unknown = await fromHs1('/_matrix/client/v1/media/download/hs2.test/NoSuchMedia');
      assert.equal(unknown.status, 404);
      assert.equal(((await unknown.json()) as { errcode: string }).errcode, 'M_NOT_FOUND');
      const bigId = await uploadOnHs2(randomBytes(200_000), 'application/octet-stream');
      const big = await fromHs1(`/_matrix/client/v1/media/download/hs2.test/${bigId}`);
      assert.equal(big.status, 502);
      assert.equal(((await big.json()) as { errcode: string }).errcode, 'M_TOO_LARGE');
    });

    test('the federation media path takes a signed request', async () => {
      const res = await request(hs2.baseUrl, 'GET', `/_matrix/federation/v1/media/download/${pngId}`);
      assert.equal(res.status, 401);
    });

    test('quarantined remote media is 404 on hs1', async () => {
      const otherId = await uploadOnHs2(Buffer.from('remote text'), 'text/plain');
      assert.equal((await fromHs1(`/_matrix/client/v1/media/download/hs2.test/${otherId}`)).status, 200);
      const root = await hs1.registerUser('root', 'root-password', { admin: true });
      const q = await request(hs1.baseUrl, 'POST', `/_synapse/admin/v1/media/quarantine/hs2.test/${otherId}`, {}, { token: root.accessToken });
      assert.equal(q.status, 200);
      assert.equal((await fromHs1(`/_matrix/client/v1/media/download/hs2.test/${otherId}`)).status, 404);
    });

    test('kept on hs1: served with hs2 stopped', async () => {
      await hs2.close();
      const res = await fromHs1(`/_matrix/client/v1/media/download/hs2.test/${pngId}`);
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(png));
    });
  });
}
