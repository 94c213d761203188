// The legacy event stream, GET /events (and its room_id peeking form), and GET /events/{eventId},
// over HTTP on SQLite and PostgreSQL: what a stream delivers from a token, what it leaves out, how
// `limit` splits it, how a waiting request wakes and ends, and the errors of bad requests.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer, useTestServer } from '../support/server.js';
import { Client, clients, enc } from '../sync/sync-client.js';

/** Resolves once `count` requests are waiting on the server's notifier. */
async function waiting(hs: TestServer, count: number): Promise<void> {
  const deadline = Date.now() + 5000;
  while (hs.server.core.notifier.waiting < count) {
    if (Date.now() > deadline) throw new Error(`never saw ${count} waiting requests`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

function query(params: Record<string, string | number>): string {
  return new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
}

async function events(c: Client, params: Record<string, string | number>): Promise<any> {
  return c.ok('GET', `/events?${query(params)}`);
}

/** Reads the stream from `from` without waiting until an answer comes back empty. */
async function drain(c: Client, from: string, params: Record<string, string | number> = {}): Promise<{ chunk: any[]; end: string; answers: number }> {
  const chunk: any[] = [];
  let end = from;
  for (let answers = 1; answers <= 50; answers++) {
    const r = await events(c, { ...params, from: end, timeout: 0 });
    assert.equal(r.start, end, 'start names the token given');
    end = r.end;
    if (r.chunk.length === 0) return { chunk, end, answers };
    chunk.push(...r.chunk);
  }
  throw new Error('the stream never ran dry');
}

/**
 * A token for "now": the end of an /initialSync, after one /events call brought the user online
 * (their own presence change is news to a stream that starts before it).
 */
async function now(c: Client): Promise<string> {
  await events(c, { timeout: 0 });
  return (await c.ok('GET', '/initialSync?limit=0')).end as string;
}

const roomEvents = (chunk: readonly any[]) => chunk.filter((e) => e.event_id !== undefined);
const bodies = (chunk: readonly any[]) => roomEvents(chunk).filter((e) => e.type === 'm.room.message').map((e) => e.content.body as string);

for (const { backend, skip } of await serverBackends()) {
  describe(`legacy event stream on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { guests_disabled: false } } });
    const user = clients(hs);

    test('from a token: room events, typing, receipts and account data, in client format with room ids', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const from = await now(alice);
      const sent = await bob.text(roomId, 'hello');
      await bob.ok('PUT', `/rooms/${enc(roomId)}/typing/${enc(bob.userId)}`, { typing: true, timeout: 10_000 });
      await bob.ok('POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(sent)}`, {});
      await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/org.example.config`, { colour: 'green' });
      await alice.ok('PUT', `/user/${enc(alice.userId)}/rooms/${enc(roomId)}/tags/u.work`, { order: 0.5 });

      const { chunk } = await drain(alice, from);
      const message = chunk.find((e) => e.event_id === sent);
      assert.deepEqual(
        { type: message.type, room_id: message.room_id, sender: message.sender, content: message.content },
        { type: 'm.room.message', room_id: roomId, sender: bob.userId, content: { msgtype: 'm.text', body: 'hello' } },
      );
      const typing = chunk.find((e) => e.type === 'm.typing');
      assert.deepEqual(typing, { type: 'm.typing', room_id: roomId, content: { user_ids: [bob.userId] } });
      const receipt = chunk.find((e) => e.type === 'm.receipt');
      assert.equal(receipt.room_id, roomId);
      assert.equal(typeof receipt.content[sent]['m.read'][bob.userId].ts, 'number');
      assert.deepEqual(chunk.find((e) => e.type === 'org.example.config'), { type: 'org.example.config', content: { colour: 'green' } });
      assert.deepEqual(chunk.find((e) => e.type === 'm.tag'), { type: 'm.tag', content: { tags: { 'u.work': { order: 0.5 } } }, room_id: roomId });
    });

    test('limit splits the room events; each end continues after the last event given', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({});
      const from = await now(alice);
      for (let i = 1; i <= 5; i++) await alice.text(roomId, `m${i}`);
      const pages: string[][] = [];
      let token = from;
      for (;;) {
        const r = await events(alice, { from: token, limit: 2, timeout: 0 });
        token = r.end;
        const page = bodies(r.chunk);
        if (page.length === 0) break;
        assert.ok(roomEvents(r.chunk).length <= 2);
        pages.push(page);
      }
      assert.deepEqual(pages, [['m1', 'm2'], ['m3', 'm4'], ['m5']]);
    });

    test('without from, a waiting request answers with what comes after it started', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      await bob.text(roomId, 'before');
      const before = hs.server.core.notifier.waiting;
      const poll = events(alice, { timeout: 30_000 });
      await waiting(hs, before + 1);
      const sent = await bob.text(roomId, 'after');
      let r = await poll;
      const seen = [...r.chunk];
      // Presence news (bob active) may come first: read on until the message is there.
      for (let i = 0; i < 10 && !seen.some((e) => e.event_id === sent); i++) {
        r = await events(alice, { from: r.end, timeout: 30_000 });
        seen.push(...r.chunk);
      }
      assert.deepEqual(bodies(seen), ['after']);
    });

    test('a request with nothing for the user answers an empty chunk once its timeout passes', async () => {
      const loner = await user('loner');
      const carol = await user('carol');
      const elsewhere = await carol.createRoom({ preset: 'public_chat' });
      const from = await now(loner);
      const before = hs.server.core.notifier.waiting;
      const poll = events(loner, { from, timeout: 500 });
      await waiting(hs, before + 1);
      await carol.text(elsewhere, 'not for the loner');
      const r = await poll;
      assert.deepEqual(r.chunk, []);
      assert.equal(r.start, from);
      assert.deepEqual((await drain(loner, r.end)).chunk, []);
    });

    test('what the user may not see is left out: other rooms, rooms left, ignored users; invites come in', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const shared = await bob.createRoom({ preset: 'public_chat' });
      await alice.join(shared);
      await carol.join(shared);
      const notHers = await carol.createRoom({ preset: 'public_chat' });
      await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/m.ignored_user_list`, { ignored_users: { [carol.userId]: {} } });
      const from = await now(alice);
      await carol.text(notHers, 'elsewhere');
      await carol.text(shared, 'from someone ignored');
      await bob.text(shared, 'while she is in');
      await alice.leave(shared);
      await bob.text(shared, 'after she left');
      const privateRoom = await bob.createRoom({ preset: 'private_chat' });
      await bob.invite(privateRoom, alice.userId);

      const { chunk } = await drain(alice, from);
      assert.deepEqual(bodies(chunk), ['while she is in']);
      const own = roomEvents(chunk).filter((e) => e.type === 'm.room.member' && e.state_key === alice.userId);
      assert.deepEqual(
        own.map((e) => [e.room_id, e.content.membership]),
        [
          [shared, 'leave'],
          [privateRoom, 'invite'],
        ],
      );
    });

    test('room_id: a joined room alone, a world-readable room by peeking, any other room 403', async () => {
      const alice = await user('alice');
      const carol = await user('carol');
      const mine = await alice.createRoom({});
      const other = await alice.createRoom({});
      const open = await carol.createRoom({
        preset: 'public_chat',
        initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'world_readable' } }],
      });
      const closed = await carol.createRoom({ preset: 'private_chat' });
      const from = await now(alice);
      await alice.text(mine, 'in mine');
      await alice.text(other, 'in the other');
      await carol.text(open, 'for anyone');

      assert.deepEqual(bodies((await drain(alice, from, { room_id: mine })).chunk), ['in mine']);
      const peeked = (await drain(alice, from, { room_id: open })).chunk;
      assert.deepEqual(bodies(peeked), ['for anyone']);
      assert.ok(roomEvents(peeked).every((e) => e.room_id === open));
      for (const roomId of [closed, '!unknown:localhost']) {
        const r = await alice.call('GET', `/events?${query({ room_id: roomId, timeout: 0 })}`);
        assert.deepEqual([r.status, r.body.errcode], [403, 'M_FORBIDDEN'], roomId);
      }

      const guest = await request(hs.baseUrl, 'POST', '/_matrix/client/v3/register?kind=guest', {});
      const token = guest.body.access_token as string;
      const bare = await request(hs.baseUrl, 'GET', '/_matrix/client/v3/events?timeout=0', undefined, { token });
      assert.deepEqual([bare.status, bare.body.errcode], [400, 'M_MISSING_PARAM']);
      const guestPeek = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/events?${query({ room_id: open, from, timeout: 0 })}`, undefined, { token });
      assert.equal(guestPeek.status, 200, JSON.stringify(guestPeek.body));
      assert.deepEqual(bodies(guestPeek.body.chunk), ['for anyone']);
    });

    test('bad parameters are 400 M_INVALID_PARAM; no token is 401; every prefix answers', async () => {
      const alice = await user('alice');
      for (const q of ['from=garbage', 'timeout=soon', 'timeout=-5', 'limit=-1', 'limit=x']) {
        const r = await alice.call('GET', `/events?${q}`);
        assert.deepEqual([r.status, r.body.errcode], [400, 'M_INVALID_PARAM'], q);
      }
      const anonymous = await request(hs.baseUrl, 'GET', '/_matrix/client/v3/events?timeout=0');
      assert.deepEqual([anonymous.status, anonymous.body.errcode], [401, 'M_MISSING_TOKEN']);
      for (const prefix of ['/_chat/client/r0', '/_chat/client/v3', '/_matrix/client/r0']) {
        const r = await request(hs.baseUrl, 'GET', `${prefix}/events?timeout=0`, undefined, { token: alice.user.accessToken });
        assert.equal(r.status, 200, prefix);
        assert.deepEqual(Object.keys(r.body).sort(), ['chunk', 'end', 'start']);
      }
    });

    test('a client going away ends the wait', async () => {
      const alice = await user('alice');
      const before = hs.server.core.notifier.waiting;
      const controller = new AbortController();
      const poll = alice.call('GET', '/events?timeout=60000', undefined, { signal: controller.signal }).catch((err: unknown) => err);
      await waiting(hs, before + 1);
      controller.abort();
      assert.ok((await poll) instanceof Error);
      const deadline = Date.now() + 5000;
      while (hs.server.core.notifier.waiting > before) {
        assert.ok(Date.now() < deadline, 'the server still waits for a client that left');
        await new Promise((r) => setTimeout(r, 5));
      }
    });

    describe('GET /events/{eventId}', () => {
      let alice: Client;
      let bob: Client;
      let roomId: string;
      let eventId: string;
      before(async () => {
        alice = await user('alice');
        bob = await user('bob');
        roomId = await alice.createRoom({ preset: 'private_chat' });
        eventId = await alice.text(roomId, 'secret');
      });

      test('answers as GET /rooms/{roomId}/event/{eventId} does', async () => {
        const legacy = await alice.ok('GET', `/events/${enc(eventId)}`);
        const current = await alice.ok('GET', `/rooms/${enc(roomId)}/event/${enc(eventId)}`);
        delete legacy.unsigned.age;
        delete current.unsigned.age;
        assert.deepEqual(legacy, current);
        assert.equal(legacy.content.body, 'secret');
      });

      test('an event the user may not see, or none, is 404 M_NOT_FOUND', async () => {
        for (const [who, id] of [
          [bob, eventId],
          [alice, '$does-not-exist'],
        ] as const) {
          const r = await who.call('GET', `/events/${enc(id)}`);
          assert.deepEqual([r.status, r.body.errcode], [404, 'M_NOT_FOUND'], id);
        }
      });
    });
  });

  describe(`legacy event stream at shutdown on ${backend}`, { skip }, () => {
    test('stopping the server answers a waiting request at once', async () => {
      const hs = await startTestServer({ backend });
      try {
        const alice = new Client(hs, await hs.registerUser('alice', 'secret'));
        const poll = alice.ok('GET', '/events?timeout=120000');
        await waiting(hs, 1);
        await hs.close();
        const r = await poll;
        assert.deepEqual(r.chunk, []);
      } finally {
        await hs.close();
      }
    });
  });
}
