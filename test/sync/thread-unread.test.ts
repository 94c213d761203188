// Unread counts per thread over HTTP on SQLite and PostgreSQL: with the timeline filter's
// `unread_thread_notifications`, `unread_notifications` counts the main timeline (thread roots
// included) and `unread_thread_notifications` each thread; without it, everything. A receipt for a
// thread clears that thread only, one for `main` the main timeline only, an unthreaded one all.
// Each count is checked as an incremental sync makes it (from the events at hand) and as an
// initial sync with a short timeline does (from the push-rule pass's rows).

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from './sync-client.js';

const THREADED = { room: { timeline: { unread_thread_notifications: true } } };
const rel = (relType: string, eventId: string) => ({ 'm.relates_to': { rel_type: relType, event_id: eventId } });
const counts = (n: number, h = 0) => ({ notification_count: n, highlight_count: h });

for (const { backend, skip } of await serverBackends()) {
  describe(`unread counts per thread on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { rate_limiting: { enabled: false } } } });
    const user = clients(hs);
    let alice: Client;
    let bob: Client;
    let carol: Client;
    let roomId: string;
    const ids: Record<string, string> = {};
    /** bob's incremental tokens: with and without the flag. */
    const since = { threaded: '', plain: '' };

    const inThread = (who: Client, root: string, body: string, extra: object = {}) => who.send(roomId, { msgtype: 'm.text', body, ...rel('m.thread', root), ...extra });
    const receipt = (eventId: string, body: object = {}) => bob.call('POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(eventId)}`, body);
    /** Waits until the push-rule pass has stored bob's notification of the event. */
    const evaluated = (eventId: string) =>
      eventually(async () => (await bob.ok('GET', '/notifications?limit=100')).notifications.some((n: any) => n.event.event_id === eventId), `${eventId} is evaluated`);

    /** The room's counts as an incremental sync and, once the pass is done, an initial sync show them. */
    const check = async (last: string, expected: { main: object; threads?: Record<string, object>; total: object }, what: string) => {
      const threaded = await bob.sync({ since: since.threaded, filter: THREADED });
      since.threaded = threaded.next_batch;
      const plain = await bob.sync({ since: since.plain });
      since.plain = plain.next_batch;
      await evaluated(last);
      const initialThreaded = await bob.sync({ filter: { room: { timeline: { limit: 1, unread_thread_notifications: true } } } });
      const initialPlain = await bob.sync({ filter: { room: { timeline: { limit: 1 } } } });
      for (const [how, s] of [['incremental', threaded], ['initial', initialThreaded]] as const) {
        const room = s.rooms.join[roomId];
        assert.ok(room !== undefined, `${what} (${how}): the room is in the sync`);
        assert.deepEqual(room.unread_notifications, expected.main, `${what} (${how}): main timeline`);
        assert.deepEqual(room.unread_thread_notifications, expected.threads, `${what} (${how}): threads`);
      }
      for (const [how, s] of [['incremental', plain], ['initial', initialPlain]] as const) {
        const room = s.rooms.join[roomId];
        assert.deepEqual(room.unread_notifications, expected.total, `${what} (${how}, no flag): everything`);
        assert.equal(room.unread_thread_notifications, undefined, `${what} (${how}, no flag): no thread counts`);
      }
    };

    before(async () => {
      alice = await user('alice');
      bob = await user('bob');
      carol = await user('carol');
      // Three members, so that plain messages notify (.m.rule.message).
      roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      await carol.join(roomId);
      since.threaded = (await bob.sync({ filter: THREADED })).next_batch;
      since.plain = (await bob.sync()).next_batch;
    });

    test('messages in two threads and the main timeline, a mention in a thread', async () => {
      ids['A'] = await alice.text(roomId, 'root A');
      ids['B'] = await alice.text(roomId, 'root B');
      ids['a1'] = await inThread(alice, ids['A']!, 'in A, first');
      ids['a2'] = await inThread(alice, ids['A']!, 'in A, second');
      ids['b1'] = await inThread(carol, ids['B']!, 'in B, for bob', { 'm.mentions': { user_ids: [bob.userId] } });
      // An edit does not notify (.m.rule.suppress_edits); a reference to a thread's event is in
      // that thread (the spec follows relations to find it).
      ids['a1-edit'] = await alice.send(roomId, { msgtype: 'm.text', body: '* edited', 'm.new_content': { msgtype: 'm.text', body: 'edited' }, ...rel('m.replace', ids['a1']!) });
      ids['b-ref'] = await carol.send(roomId, { msgtype: 'm.text', body: 'about that', ...rel('m.reference', ids['b1']!) });
      ids['m1'] = await carol.text(roomId, 'main, from carol');
      // bob's own messages never count.
      await inThread(bob, ids['A']!, 'bob in A');
      await check(ids['m1']!, { main: counts(3), threads: { [ids['A']!]: counts(2), [ids['B']!]: counts(2, 1) }, total: counts(7, 1) }, 'unread');
    });

    test('a receipt in a thread clears that thread only', async () => {
      assert.equal((await receipt(ids['a1']!, { thread_id: ids['A'] })).status, 200);
      await check(ids['m1']!, { main: counts(3), threads: { [ids['A']!]: counts(1), [ids['B']!]: counts(2, 1) }, total: counts(6, 1) }, 'A read up to a1');
      assert.equal((await receipt(ids['a2']!, { thread_id: ids['A'] })).status, 200);
      await check(ids['m1']!, { main: counts(3), threads: { [ids['B']!]: counts(2, 1) }, total: counts(5, 1) }, 'A read');
    });

    test("a receipt for 'main' clears the main timeline only", async () => {
      assert.equal((await receipt(ids['m1']!, { thread_id: 'main' })).status, 200);
      await check(ids['m1']!, { main: counts(0), threads: { [ids['B']!]: counts(2, 1) }, total: counts(2, 1) }, 'main read');
      // Newer events count again, each in its own thread.
      ids['a3'] = await inThread(alice, ids['A']!, 'in A, third');
      ids['m2'] = await carol.text(roomId, 'main again');
      await check(ids['m2']!, { main: counts(1), threads: { [ids['A']!]: counts(1), [ids['B']!]: counts(2, 1) }, total: counts(4, 1) }, 'news');
    });

    test('an unthreaded receipt clears the main timeline and every thread up to its event', async () => {
      // One on b1 reads A, B, a1, a2 and b1, but neither the reference after it nor anything later.
      assert.equal((await receipt(ids['b1']!)).status, 200);
      await check(ids['m2']!, { main: counts(1), threads: { [ids['A']!]: counts(1), [ids['B']!]: counts(1) }, total: counts(3) }, 'read up to b1');
      assert.equal((await receipt(ids['m2']!)).status, 200);
      await check(ids['m2']!, { main: counts(0), total: counts(0) }, 'all read');
    });

    test('bad thread ids are refused', async () => {
      for (const threadId of ['', 5, 'thread']) {
        const r = await receipt(ids['m2']!, { thread_id: threadId });
        assert.deepEqual([r.status, r.body.errcode], [400, 'M_INVALID_PARAM'], JSON.stringify(threadId));
      }
    });
  });
}
