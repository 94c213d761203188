// Users the reader ignores (m.ignored_user_list): their messages are left out of /messages and
// /context, their state events are kept, and pagination still walks past them; over HTTP on
// SQLite and PostgreSQL.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, enc } from '../sync/sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`ignored senders in room reads on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: Client;
    let bob: Client;
    let roomId: string;
    const aliceTexts: string[] = [];
    const bobTexts: string[] = [];
    let bobTopic: string;

    before(async () => {
      alice = new Client(hs, await hs.registerUser('alice', 'secret'));
      bob = new Client(hs, await hs.registerUser('bob', 'secret'));
      roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      // Alice lets Bob set the topic, so he has a state event among his messages.
      const levels = await alice.ok('GET', `/rooms/${enc(roomId)}/state/m.room.power_levels/`);
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.power_levels/`, { ...levels, users: { ...levels.users, [bob.userId]: 50 } });
      for (let i = 0; i < 4; i++) {
        aliceTexts.push(await alice.text(roomId, `alice ${i}`));
        bobTexts.push(await bob.text(roomId, `bob ${i}a`));
        bobTexts.push(await bob.text(roomId, `bob ${i}b`));
        if (i === 1) bobTopic = (await bob.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.topic/`, { topic: 'by bob' })).event_id;
      }
    });

    const messages = (params: Record<string, string>) => alice.ok('GET', `/rooms/${enc(roomId)}/messages?${new URLSearchParams(params).toString()}`);
    const ignoreBob = (ignored: object) =>
      alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/m.ignored_user_list`, { ignored_users: ignored });

    test('before ignoring, /messages has Bob\'s messages', async () => {
      const page = await messages({ dir: 'b', limit: '100' });
      const ids = page.chunk.map((e: any) => e.event_id);
      for (const id of bobTexts) assert.ok(ids.includes(id));
    });

    test('/messages leaves out the ignored user\'s messages, keeps his state events, and pages past them', async () => {
      await ignoreBob({ [bob.userId]: {} });
      const whole = await messages({ dir: 'b', limit: '100' });
      const ids = whole.chunk.map((e: any) => e.event_id as string);
      for (const id of bobTexts) assert.ok(!ids.includes(id), `Bob's message ${id} served`);
      for (const id of aliceTexts) assert.ok(ids.includes(id));
      assert.ok(ids.includes(bobTopic), 'Bob\'s state event is kept');
      assert.ok(whole.chunk.some((e: any) => e.type === 'm.room.member' && e.state_key === bob.userId), 'Bob\'s join is kept');

      // Page by page, backwards then forwards: the same events, every token moving on.
      for (const dir of ['b', 'f'] as const) {
        const seen: string[] = [];
        let from: string | undefined;
        for (let guard = 0; guard < 100; guard++) {
          const page = await messages({ dir, limit: '2', ...(from !== undefined ? { from } : {}) });
          assert.ok(page.chunk.length <= 2);
          for (const e of page.chunk) {
            assert.notEqual(e.type === 'm.room.message' && e.sender, bob.userId, 'an ignored message in a page');
            seen.push(e.event_id);
          }
          if (page.end === undefined) break;
          assert.notEqual(page.end, from, 'end must advance');
          from = page.end;
        }
        assert.deepEqual(new Set(seen), new Set(ids), `dir=${dir}`);
        assert.equal(seen.length, ids.length, `dir=${dir}: no event twice`);
      }
    });

    test('/context leaves the ignored user\'s messages out around an event and does not serve one', async () => {
      const ctx = await alice.ok('GET', `/rooms/${enc(roomId)}/context/${enc(aliceTexts[2]!)}?limit=6`);
      const around = [...ctx.events_before, ...ctx.events_after];
      assert.ok(around.length > 0);
      for (const e of around) assert.ok(!(e.type === 'm.room.message' && e.sender === bob.userId), `ignored message ${e.event_id}`);
      assert.ok(around.some((e: any) => e.event_id === aliceTexts[1]) && around.some((e: any) => e.event_id === aliceTexts[3]));

      const his = await alice.call('GET', `/rooms/${enc(roomId)}/context/${enc(bobTexts[0]!)}`);
      assert.equal(his.status, 404);
      assert.equal(his.body.errcode, 'M_NOT_FOUND');
      // Bob himself still reads his messages.
      const own = await bob.ok('GET', `/rooms/${enc(roomId)}/context/${enc(bobTexts[0]!)}`);
      assert.equal(own.event.event_id, bobTexts[0]);
    });

    test('no longer ignored: the messages come back', async () => {
      await ignoreBob({});
      const page = await messages({ dir: 'b', limit: '100' });
      const ids = page.chunk.map((e: any) => e.event_id);
      for (const id of bobTexts) assert.ok(ids.includes(id));
      const ctx = await alice.ok('GET', `/rooms/${enc(roomId)}/context/${enc(bobTexts[0]!)}`);
      assert.equal(ctx.event.event_id, bobTexts[0]);
    });
  });
}
