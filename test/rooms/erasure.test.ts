// Deactivation with `erase: true`: the user is marked erased, their profile is emptied, and their
// messages are served redacted (the room version's algorithm, without redacted_because) to anyone
// who was not joined when they were sent, in /messages, /event, /context and sync. Who was joined
// then still sees them whole. Their member events are served redacted to everyone. The mark
// outlives a restart. Over HTTP on SQLite and PostgreSQL.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type HearthServer } from '../../src/context.js';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, clients, enc, timelineOf } from '../sync/sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`erased users' events on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: Client;
    let bob: Client;
    let eve: Client;
    let gina: Client;
    let harry: Client;
    let dave: Client;
    let frank: Client;
    let roomId: string;
    let openRoom: string;
    let eveTexts: string[];
    let eveJoin: string;
    let ginaText: string;
    let aliceText: string;
    let eveInOpen: string;

    async function deactivate(c: Client, erase: boolean): Promise<void> {
      const first = await c.call('POST', '/account/deactivate', { erase });
      assert.equal(first.status, 401, JSON.stringify(first.body));
      const auth = { type: 'm.login.password', identifier: { type: 'm.id.user', user: c.userId }, password: 'secret', session: first.body.session };
      const done = await c.call('POST', '/account/deactivate', { erase, auth });
      assert.equal(done.status, 200, JSON.stringify(done.body));
    }

    before(async () => {
      const user = clients(hs);
      [alice, bob, eve, gina, harry, dave, frank] = await Promise.all(['alice', 'bob', 'eve', 'gina', 'harry', 'dave', 'frank'].map((n) => user(n)));
      await eve.ok('PUT', `/profile/${enc(eve.userId)}/displayname`, { displayname: 'Eve Evans' });
      await eve.ok('PUT', `/profile/${enc(eve.userId)}/avatar_url`, { avatar_url: 'mxc://localhost/eve' });
      roomId = await alice.createRoom({ preset: 'public_chat' });
      for (const c of [bob, eve, gina, harry]) await c.join(roomId);
      eveJoin = (await alice.ok('GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(eve.userId)}?format=event`)).event_id;
      eveTexts = [await eve.text(roomId, 'eve secret one'), await eve.text(roomId, 'eve secret two')];
      ginaText = await gina.text(roomId, 'gina stays');
      aliceText = await alice.text(roomId, 'alice talks');
      await harry.leave(roomId);
      await dave.join(roomId);

      openRoom = await alice.createRoom({ preset: 'public_chat', initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'world_readable' } }] });
      await eve.join(openRoom);
      eveInOpen = await eve.text(openRoom, 'eve in the open');

      await deactivate(eve, true);
      await deactivate(gina, false);
    });

    const byId = (events: any[], id: string) => events.find((e) => e.event_id === id);
    const messages = async (c: Client, room = roomId) => (await c.ok('GET', `/rooms/${enc(room)}/messages?dir=b&limit=100`)).chunk as any[];
    const event = (c: Client, id: string, room = roomId) => c.ok('GET', `/rooms/${enc(room)}/event/${enc(id)}`);
    const syncTimeline = async (c: Client, section = 'join') =>
      timelineOf(await c.sync({ filter: { room: { include_leave: true, timeline: { limit: 100 } } }, timeout: 0 }), roomId, section);

    function assertWhole(e: any, body: string, where: string): void {
      assert.ok(e !== undefined, `${where}: event missing`);
      assert.equal(e.content.body, body, where);
    }
    function assertPruned(e: any, where: string): void {
      assert.ok(e !== undefined, `${where}: event missing`);
      assert.equal(e.type, 'm.room.message', where);
      assert.deepEqual(e.content, {}, where);
      assert.equal(e.unsigned?.redacted_because, undefined, where);
    }

    test('who was joined when the messages were sent sees them whole: /messages, /event, /context, sync', async () => {
      for (const c of [alice, bob]) {
        const page = await messages(c);
        assertWhole(byId(page, eveTexts[0]!), 'eve secret one', `${c.userId} /messages`);
        assertWhole(byId(page, eveTexts[1]!), 'eve secret two', `${c.userId} /messages`);
        assertWhole(await event(c, eveTexts[0]!), 'eve secret one', `${c.userId} /event`);
        const ctx = await c.ok('GET', `/rooms/${enc(roomId)}/context/${enc(eveTexts[0]!)}?limit=4`);
        assertWhole(ctx.event, 'eve secret one', `${c.userId} /context`);
        assertWhole(byId(ctx.events_after, eveTexts[1]!), 'eve secret two', `${c.userId} /context after`);
        assertWhole(byId(await syncTimeline(c), eveTexts[1]!), 'eve secret two', `${c.userId} sync`);
      }
      // Joined then, gone since: still whole.
      assertWhole(byId(await messages(harry), eveTexts[0]!), 'eve secret one', 'harry /messages');
      assertWhole(await event(harry, eveTexts[1]!), 'eve secret two', 'harry /event');
      assertWhole(byId(await syncTimeline(harry, 'leave'), eveTexts[0]!), 'eve secret one', 'harry sync');
    });

    test('who joined later gets them redacted: /messages, /event, /context, sync; others\' messages stay whole', async () => {
      const page = await messages(dave);
      for (const id of eveTexts) assertPruned(byId(page, id), 'dave /messages');
      assertWhole(byId(page, ginaText), 'gina stays', 'dave /messages, a deactivated but not erased sender');
      assertWhole(byId(page, aliceText), 'alice talks', 'dave /messages');
      assertPruned(await event(dave, eveTexts[0]!), 'dave /event');
      const ctx = await dave.ok('GET', `/rooms/${enc(roomId)}/context/${enc(aliceText)}?limit=10`);
      for (const id of eveTexts) assertPruned(byId(ctx.events_before, id), 'dave /context before');
      assertWhole(byId(ctx.events_before, ginaText), 'gina stays', 'dave /context before');
      assertPruned((await dave.ok('GET', `/rooms/${enc(roomId)}/context/${enc(eveTexts[1]!)}?limit=2`)).event, 'dave /context event');
      const timeline = await syncTimeline(dave);
      for (const id of eveTexts) assertPruned(byId(timeline, id), 'dave sync');
      assertWhole(byId(timeline, ginaText), 'gina stays', 'dave sync');
    });

    test('in a world_readable room, a reader who never joined gets them redacted; a member then, whole', async () => {
      assertPruned(byId(await messages(frank, openRoom), eveInOpen), 'frank /messages');
      assertPruned(await event(frank, eveInOpen, openRoom), 'frank /event');
      assertWhole(byId(await messages(alice, openRoom), eveInOpen), 'eve in the open', 'alice /messages');
    });

    test('the erased user\'s member events are redacted for everyone, and their profile is empty', async () => {
      for (const c of [alice, bob, dave]) {
        const join = await event(c, eveJoin);
        assert.deepEqual(join.content, { membership: 'join' }, `${c.userId} sees eve's join`);
      }
      const members = (await bob.ok('GET', `/rooms/${enc(roomId)}/members`)).chunk as any[];
      const eveMember = members.find((e) => e.state_key === eve.userId);
      assert.deepEqual(eveMember.content, { membership: 'leave' });
      assert.equal(eveMember.unsigned.prev_content, undefined);
      // Gina, deactivated without erasure, keeps hers.
      const ginaJoin = (await messages(bob)).find((e) => e.type === 'm.room.member' && e.state_key === gina.userId && e.content.membership === 'join');
      assert.equal(typeof ginaJoin.content.displayname, 'string');

      // Nothing left in the profile: the whole profile is 404 (as for any empty one), each field {}.
      const eveProfile = await alice.call('GET', `/profile/${enc(eve.userId)}`);
      assert.deepEqual([eveProfile.status, eveProfile.body.errcode], [404, 'M_NOT_FOUND']);
      assert.deepEqual(await alice.ok('GET', `/profile/${enc(eve.userId)}/displayname`), {});
      assert.deepEqual(await alice.ok('GET', `/profile/${enc(eve.userId)}/avatar_url`), {});
      const ginaProfile = await alice.ok('GET', `/profile/${enc(gina.userId)}`);
      assert.equal(typeof ginaProfile.displayname, 'string');
    });

    describe('after a restart', () => {
      let second: HearthServer;
      let base: string;
      before(async () => {
        second = await createServer(hs.config, { logger: false });
        const [listener] = await second.listen([{ host: '127.0.0.1', port: 0 }]);
        base = listener!.url;
      });
      after(async () => {
        await second?.close();
      });

      test('the erased mark is read back: a later joiner still gets the messages redacted', async () => {
        const path = `/rooms/${enc(roomId)}/event/${enc(eveTexts[0]!)}`;
        const res = await new HttpClient(base, { token: dave.user.accessToken }).get(path);
        assert.equal(res.status, 200);
        assertPruned(res.body, 'dave /event after a restart');
        const whole = await new HttpClient(base, { token: bob.user.accessToken }).get(path);
        assertWhole(whole.body, 'eve secret one', 'bob /event after a restart');
      });
    });
  });
}
