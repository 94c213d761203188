// The admin API's media endpoints on a real server, both storage backends: quarantining one item,
// a room's media and a user's uploads (each then 404 everywhere, thumbnails included, until lifted),
// listing a user's uploads and a room's media, one item's details, and deleting (one item, a
// user's, older than a date): rows and files gone. Only admins, under both prefixes.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { enc, request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`media administration (${backend})`, { skip }, () => {
    let hs: TestServer;
    let admin: TestUser;
    let alice: TestUser;
    let png: Buffer;
    const upload = async (user: TestUser, data: Buffer | string, type: string) => {
      const res = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload`, { method: 'POST', headers: { ...hs.auth(user), 'content-type': type }, body: data });
      assert.equal(res.status, 200);
      return ((await res.json()) as { content_uri: string }).content_uri;
    };
    const idOf = (mxc: string) => mxc.slice('mxc://localhost/'.length);
    const status = async (mxc: string) => (await fetch(`${hs.baseUrl}/_matrix/media/v3/download/localhost/${idOf(mxc)}`).then(async (r) => (await r.arrayBuffer(), r.status)));
    const thumbStatus = async (mxc: string) => (await fetch(`${hs.baseUrl}/_matrix/media/v3/thumbnail/localhost/${idOf(mxc)}?width=8&height=8`).then(async (r) => (await r.arrayBuffer(), r.status)));
    const adminCall = (method: string, path: string, body?: unknown, user = admin, prefix = '/_synapse/admin/v1') => request(hs.baseUrl, method, `${prefix}${path}`, body, { token: user.accessToken });

    before(async () => {
      hs = await startTestServer({ backend });
      admin = await hs.registerUser('root', 'root-password', { admin: true });
      alice = await hs.registerUser('alice', 'alice-password');
      png = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#f0f' } }).png().toBuffer();
    });
    after(async () => {
      await hs?.close();
    });

    test('one item: quarantined (404, thumbnails too), details, lifted', async () => {
      const mxc = await upload(alice, png, 'image/png');
      assert.equal(await thumbStatus(mxc), 200);
      const q = await adminCall('POST', `/media/quarantine/localhost/${idOf(mxc)}`, {});
      assert.equal(q.status, 200);
      assert.equal(await status(mxc), 404);
      assert.equal(await thumbStatus(mxc), 404);
      const info = await adminCall('GET', `/media/localhost/${idOf(mxc)}`, undefined, admin, '/_ext/admin/v1');
      assert.equal(info.status, 200);
      const details = (info.body as { media_info: Record<string, unknown> }).media_info;
      assert.equal(details['quarantined_by'], admin.userId);
      assert.equal(details['media_length'], png.length);
      assert.equal(details['media_type'], 'image/png');
      assert.equal((await adminCall('POST', `/media/unquarantine/localhost/${idOf(mxc)}`, {})).status, 200);
      assert.equal(await status(mxc), 200);
    });

    test("a room's media and a user's uploads are quarantined at once", async () => {
      const inRoom = await upload(alice, png, 'image/png');
      const thumbnail = await upload(alice, png, 'image/png');
      const roomId = (await request(hs.baseUrl, 'POST', '/_matrix/client/v3/createRoom', {}, { token: alice.accessToken })).body['room_id'] as string;
      const sent = await request(hs.baseUrl, 'PUT', `/_matrix/client/v3/rooms/${enc(roomId)}/send/m.room.message/m1`, { msgtype: 'm.image', body: 'pic', url: inRoom, info: { thumbnail_url: thumbnail } }, { token: alice.accessToken });
      assert.equal(sent.status, 200);
      const listed = await adminCall('GET', `/room/${enc(roomId)}/media`);
      assert.deepEqual({ local: [...(listed.body as { local: string[] }).local].sort(), remote: (listed.body as { remote: string[] }).remote }, { local: [inRoom, thumbnail].sort(), remote: [] });
      const byRoom = await adminCall('POST', `/room/${enc(roomId)}/media/quarantine`, {});
      assert.deepEqual(byRoom.body, { num_quarantined: 2 });
      assert.equal(await status(inRoom), 404);
      assert.equal(await status(thumbnail), 404);

      const bob = await hs.registerUser('bob', 'bob-password');
      const first = await upload(bob, 'one', 'text/plain');
      const second = await upload(bob, 'two', 'text/plain');
      const byUser = await adminCall('POST', `/user/${enc(bob.userId)}/media/quarantine`, {});
      assert.deepEqual(byUser.body, { num_quarantined: 2 });
      assert.equal(await status(first), 404);
      assert.equal(await status(second), 404);
    });

    test("a user's uploads listed page by page, then deleted with their files", async () => {
      const carol = await hs.registerUser('carol', 'carol-password');
      const uris = [];
      for (let i = 0; i < 3; i++) uris.push(await upload(carol, `file ${i}`, 'text/plain'));
      const page = await adminCall('GET', `/users/${enc(carol.userId)}/media?limit=2&order_by=created_ts`);
      assert.equal(page.status, 200);
      const body = page.body as { media: { media_id: string; media_length: number }[]; total: number; next_token?: number };
      assert.equal(body.total, 3);
      assert.equal(body.media.length, 2);
      assert.equal(body.next_token, 2);
      const rest = await adminCall('GET', `/users/${enc(carol.userId)}/media?from=2`);
      assert.equal((rest.body as { media: unknown[] }).media.length, 1);
      const file = `${hs.config.media_api.base_path}/local_content/${idOf(uris[0]!).slice(0, 2)}/${idOf(uris[0]!).slice(2, 4)}/${idOf(uris[0]!).slice(4)}`;
      assert.ok(existsSync(file));
      const one = await adminCall('DELETE', `/media/localhost/${idOf(uris[0]!)}`);
      assert.deepEqual(one.body, { deleted_media: [idOf(uris[0]!)], total: 1 });
      assert.ok(!existsSync(file));
      assert.equal(await status(uris[0]!), 404);
      assert.equal((await adminCall('DELETE', `/media/localhost/${idOf(uris[0]!)}`)).status, 404);
      const all = await adminCall('DELETE', `/users/${enc(carol.userId)}/media`);
      assert.equal((all.body as { total: number }).total, 2);
      assert.equal(await status(uris[1]!), 404);
      assert.equal(((await adminCall('GET', `/users/${enc(carol.userId)}/media`)).body as { total: number }).total, 0);
    });

    test('media older than a date and larger than a size are deleted', async () => {
      const small = await upload(alice, 'x', 'text/plain');
      const large = await upload(alice, 'x'.repeat(1000), 'text/plain');
      const later = Date.now() + 1000;
      const res = await adminCall('POST', `/media/delete?before_ts=${later}&size_gt=100`, {});
      assert.equal(res.status, 200);
      assert.ok((res.body as { deleted_media: string[] }).deleted_media.includes(idOf(large)));
      assert.ok(!(res.body as { deleted_media: string[] }).deleted_media.includes(idOf(small)));
      assert.equal(await status(large), 404);
      assert.equal(await status(small), 200);
      assert.equal((await adminCall('POST', '/media/delete', {})).status, 400);
    });

    test('only admins; another server’s media is not deleted here', async () => {
      const mxc = await upload(alice, 'mine', 'text/plain');
      const refused = await adminCall('POST', `/media/quarantine/localhost/${idOf(mxc)}`, {}, alice);
      assert.deepEqual([refused.status, refused.body['errcode']], [403, 'M_FORBIDDEN']);
      const anonymous = await request(hs.baseUrl, 'GET', `/_synapse/admin/v1/users/${enc(alice.userId)}/media`);
      assert.equal(anonymous.status, 401);
      const remote = await adminCall('DELETE', '/media/other.test/abc');
      assert.deepEqual([remote.status, remote.body['errcode']], [400, 'M_INVALID_PARAM']);
      const badOrder = await adminCall('GET', `/users/${enc(alice.userId)}/media?order_by=nonsense`);
      assert.deepEqual([badOrder.status, badOrder.body['errcode']], [400, 'M_INVALID_PARAM']);
    });
  });
}
