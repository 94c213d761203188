// Custom emoji (MSC2545 as clients use it: im.ponies.room_emotes state packs, im.ponies.user_emotes
// and im.ponies.emote_rooms account data) and widgets (m.widget and im.vector.modular.widgets state)
// over HTTP on SQLite and PostgreSQL: stored and served untouched, in state, sync and account data,
// with the emote images served by the media repository to other members.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

// A 1×1 PNG.
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000970485973000003e8000003e801b57b526b' +
    '0000000d49444154089963f8cfc0f01f00050001ffabce36890000000049454e44ae426082',
  'hex',
);

for (const { backend, skip } of await serverBackends()) {
  describe(`emote packs and widgets on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);
    let alice: Client;
    let bob: Client;
    let roomId: string;
    let mxc: string;

    before(async () => {
      alice = await user('alice');
      bob = await user('bob');
      roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const upload = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload?filename=blobcat.png`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice.user.accessToken}`, 'content-type': 'image/png' },
        body: PNG,
      });
      assert.equal(upload.status, 200);
      mxc = ((await upload.json()) as { content_uri: string }).content_uri;
    });

    test('a room pack is state under its own key, served and synced as sent; its image downloads for another member', async () => {
      const pack = { pack: { display_name: 'Cats', avatar_url: mxc, usage: ['emoticon', 'sticker'] }, images: { blobcat: { url: mxc, body: 'blob cat', info: { w: 1, h: 1, mimetype: 'image/png' } } } };
      const other = { images: { wave: { url: mxc } } };
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/im.ponies.room_emotes/cats`, pack);
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/im.ponies.room_emotes/`, other);
      assert.deepEqual(await bob.ok('GET', `/rooms/${enc(roomId)}/state/im.ponies.room_emotes/cats`), pack);
      assert.deepEqual(await bob.ok('GET', `/rooms/${enc(roomId)}/state/im.ponies.room_emotes/`), other);
      const sync = await bob.sync({ timeout: 0 });
      const events = [...sync.rooms.join[roomId].state.events, ...sync.rooms.join[roomId].timeline.events].filter((e: any) => e.type === 'im.ponies.room_emotes');
      assert.deepEqual(events.map((e: any) => [e.state_key, e.content]).sort(), [['', other], ['cats', pack]]);
      const media = await fetch(`${hs.baseUrl}/_matrix/client/v1/media/download/${mxc.slice('mxc://'.length)}`, { headers: { authorization: `Bearer ${bob.user.accessToken}` } });
      assert.equal(media.status, 200);
      assert.equal(media.headers.get('content-type'), 'image/png');
      assert.deepEqual(Buffer.from(await media.arrayBuffer()), PNG);
      const thumb = await fetch(`${hs.baseUrl}/_matrix/client/v1/media/thumbnail/${mxc.slice('mxc://'.length)}?width=32&height=32&method=scale`, { headers: { authorization: `Bearer ${bob.user.accessToken}` } });
      assert.equal(thumb.status, 200);
    });

    test("a user's own pack and the rooms whose packs they use are account data, in sync", async () => {
      const own = { images: { mine: { url: mxc } }, pack: { display_name: 'Mine' } };
      const rooms = { rooms: { [roomId]: { cats: {} } } };
      await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/im.ponies.user_emotes`, own);
      await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/im.ponies.emote_rooms`, rooms);
      assert.deepEqual(await alice.ok('GET', `/user/${enc(alice.userId)}/account_data/im.ponies.user_emotes`), own);
      const sync = await alice.sync({ timeout: 0 });
      const byType = Object.fromEntries(sync.account_data.events.map((e: any) => [e.type, e.content]));
      assert.deepEqual([byType['im.ponies.user_emotes'], byType['im.ponies.emote_rooms']], [own, rooms]);
      const theirs = await bob.call('GET', `/user/${enc(alice.userId)}/account_data/im.ponies.user_emotes`);
      assert.equal(theirs.status, 403);
    });

    test('widgets are state events kept as sent, whatever capabilities their data names', async () => {
      const widget = {
        type: 'm.custom',
        url: 'https://widgets.example/clock?room=$matrix_room_id',
        name: 'Clock',
        data: { title: 'Clock', 'm.always_on_screen': true },
        waitForIframeLoad: true,
      };
      const jitsi = { type: 'jitsi', url: 'https://jitsi.example/#conf', name: 'Call', data: { domain: 'jitsi.example', conferenceId: 'abc', capabilities: ['m.always_on_screen', 'm.capability.screenshot'] } };
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.widget/clock`, widget);
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/im.vector.modular.widgets/call`, jitsi);
      assert.deepEqual(await bob.ok('GET', `/rooms/${enc(roomId)}/state/m.widget/clock`), widget);
      assert.deepEqual(await bob.ok('GET', `/rooms/${enc(roomId)}/state/im.vector.modular.widgets/call`), jitsi);
      // Removing a widget is empty content.
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.widget/clock`, {});
      assert.deepEqual(await bob.ok('GET', `/rooms/${enc(roomId)}/state/m.widget/clock`), {});
      // A member without the power to send state cannot add one.
      const refused = await bob.call('PUT', `/rooms/${enc(roomId)}/state/im.vector.modular.widgets/mine`, jitsi);
      assert.deepEqual([refused.status, refused.body.errcode], [403, 'M_FORBIDDEN']);
    });
  });
}
