// Relations over HTTP on SQLite and PostgreSQL: reactions (one per user and key), edits, threads
// and references; GET /relations with its filters, directions, pages and recursion; GET /threads;
// the aggregations bundled with served events (event, messages, sync); redactions taking relations
// out; who may read them.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

const rel = (relType: string, eventId: string, more: object = {}) => ({ 'm.relates_to': { rel_type: relType, event_id: eventId, ...more } });

for (const { backend, skip } of await serverBackends()) {
  describe(`relations on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { rate_limiting: { enabled: false } } } });
    const user = clients(hs);
    let alice: Client;
    let bob: Client;
    let carol: Client;
    let outsider: Client;
    let roomId: string;
    const ids: Record<string, string> = {};
    const nameOf = (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0] ?? id;
    const put = (who: Client, type: string, content: object, txn = `t${Math.random().toString(36).slice(2)}`) =>
      who.call('PUT', `/rooms/${enc(roomId)}/send/${enc(type)}/${txn}`, content);
    const send = async (who: Client, type: string, content: object) => {
      const r = await put(who, type, content);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.event_id as string;
    };
    const relations = (who: Client, path: string, params = '') => who.http.request('GET', `/_matrix/client/v1/rooms/${enc(roomId)}/relations/${path}${params}`);
    const names = (chunk: { event_id: string }[]) => chunk.map((e) => nameOf(e.event_id));

    before(async () => {
      alice = await user('alice');
      bob = await user('bob');
      carol = await user('carol');
      outsider = await user('outsider');
      roomId = await alice.createRoom({ preset: 'private_chat' });
      for (const u of [bob, carol]) {
        await alice.invite(roomId, u.userId);
        await u.join(roomId);
      }
      ids['M'] = await alice.text(roomId, 'the root');
      ids['up-bob'] = await send(bob, 'm.reaction', rel('m.annotation', ids['M'], { key: '👍' }));
      ids['up-alice'] = await send(alice, 'm.reaction', rel('m.annotation', ids['M'], { key: '👍' }));
      ids['edit1'] = await send(alice, 'm.room.message', { msgtype: 'm.text', body: '* first edit', 'm.new_content': { msgtype: 'm.text', body: 'first edit' }, ...rel('m.replace', ids['M']) });
      ids['T1'] = await send(bob, 'm.room.message', { msgtype: 'm.text', body: 'thread one', ...rel('m.thread', ids['M']) });
      ids['edit2'] = await send(alice, 'm.room.message', { msgtype: 'm.text', body: '* second edit', 'm.new_content': { msgtype: 'm.text', body: 'second edit' }, ...rel('m.replace', ids['M']) });
      ids['bob-edit'] = await send(bob, 'm.room.message', { msgtype: 'm.text', body: '* not his', 'm.new_content': { msgtype: 'm.text', body: 'not his' }, ...rel('m.replace', ids['M']) });
      ids['T2'] = await send(alice, 'm.room.message', { msgtype: 'm.text', body: 'thread two', ...rel('m.thread', ids['M']) });
      ids['ref'] = await send(alice, 'm.room.message', { msgtype: 'm.text', body: 'see above', ...rel('m.reference', ids['M']) });
      ids['T1-edit'] = await send(bob, 'm.room.message', { msgtype: 'm.text', body: '* thread one!', 'm.new_content': { msgtype: 'm.text', body: 'thread one!' }, ...rel('m.replace', ids['T1']) });
    });

    test('a reaction twice is refused; a retry with the same transaction id gets the first answer', async () => {
      const again = await put(bob, 'm.reaction', rel('m.annotation', ids['M']!, { key: '👍' }));
      assert.deepEqual([again.status, again.body.errcode], [400, 'M_DUPLICATE_ANNOTATION']);
      const first = await put(carol, 'm.reaction', rel('m.annotation', ids['M']!, { key: '🎉' }), 'same-txn');
      const retry = await put(carol, 'm.reaction', rel('m.annotation', ids['M']!, { key: '🎉' }), 'same-txn');
      assert.deepEqual([retry.status, retry.body.event_id], [200, first.body.event_id]);
      ids['party-carol'] = first.body.event_id;
      // Another key, or the same key on another event, is fine.
      ids['down-bob'] = await send(bob, 'm.reaction', rel('m.annotation', ids['M']!, { key: '👎' }));
    });

    test('a thread cannot start from an event that relates to another', async () => {
      const r = await put(alice, 'm.room.message', { msgtype: 'm.text', body: 'no', ...rel('m.thread', ids['up-bob']!) });
      assert.deepEqual([r.status, r.body.errcode], [400, 'M_UNKNOWN']);
    });

    test('the root carries its thread, latest edit and references, wherever it is served', async () => {
      const check = (event: any, participated: boolean) => {
        const bundled = event.unsigned['m.relations'];
        assert.ok(bundled, JSON.stringify(event.unsigned));
        assert.equal(bundled['m.thread'].count, 2);
        assert.equal(bundled['m.thread'].latest_event.event_id, ids['T2']);
        assert.equal(bundled['m.thread'].latest_event.content.body, 'thread two');
        assert.equal(bundled['m.thread'].current_user_participated, participated);
        assert.equal(bundled['m.replace'].event_id, ids['edit2'], 'the newest edit by the original sender');
        assert.equal(bundled['m.replace'].content['m.new_content'].body, 'second edit');
        assert.deepEqual(bundled['m.reference'], { chunk: [{ event_id: ids['ref'] }] });
        assert.equal(bundled['m.annotation'], undefined);
      };
      check(await bob.ok('GET', `/rooms/${enc(roomId)}/event/${enc(ids['M']!)}`), true);
      check(await carol.ok('GET', `/rooms/${enc(roomId)}/event/${enc(ids['M']!)}`), false);
      const messages = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=50`);
      check(messages.chunk.find((e: any) => e.event_id === ids['M']), true);
      const sync = await alice.sync({ timeout: 0, filter: JSON.stringify({ room: { timeline: { limit: 50 } } }) });
      check(sync.rooms.join[roomId].timeline.events.find((e: any) => e.event_id === ids['M']), true);
      // A thread event carries its own edit.
      const t1 = await alice.ok('GET', `/rooms/${enc(roomId)}/event/${enc(ids['T1']!)}`);
      assert.equal(t1.unsigned['m.relations']['m.replace'].event_id, ids['T1-edit']);
      // An event nothing relates to carries nothing.
      const plain = await alice.ok('GET', `/rooms/${enc(roomId)}/event/${enc(ids['ref']!)}`);
      assert.equal(plain.unsigned['m.relations'], undefined);
    });

    test('a search hit and a notification of an edited message carry its newest edit', async () => {
      // Found by its newest edit's text (not its old one, nor as the edit itself).
      const search = await bob.ok('POST', '/search', { search_categories: { room_events: { search_term: 'second edit', keys: ['content.body'] } } });
      assert.deepEqual(search.search_categories.room_events.results.map((r: any) => r.result.event_id), [ids['M']]);
      const hit = search.search_categories.room_events.results[0];
      assert.equal(hit.result.unsigned['m.relations']['m.replace'].content['m.new_content'].body, 'second edit');
      // The push-rule pass stores notifications behind the sends: waited for, not timed.
      let notified: any;
      await eventually(async () => {
        const list = await bob.ok('GET', '/notifications?limit=100');
        notified = list.notifications.find((n: any) => n.event.event_id === ids['M']);
        return notified !== undefined;
      }, "the root in bob's notifications", 15_000);
      assert.ok(notified, "the root is in bob's notifications");
      assert.equal(notified.event.unsigned['m.relations']['m.replace'].event_id, ids['edit2']);
      // Edits notify no one (.m.rule.suppress_edits), though other messages of theirs do.
      // (T2 comes after both edits: once it is notified, they were evaluated.)
      let list: any;
      await eventually(async () => (list = await bob.ok('GET', '/notifications?limit=100')).notifications.some((n: any) => n.event.event_id === ids['T2']), 'T2 is evaluated');
      assert.deepEqual(list.notifications.filter((n: any) => [ids['edit1'], ids['edit2']].includes(n.event.event_id)), []);
    });

    test('GET /relations: newest first by default, by type and event type, both directions, in pages', async () => {
      const all = await relations(alice, enc(ids['M']!), '?limit=50');
      assert.equal(all.status, 200, JSON.stringify(all.body));
      const expected = ['down-bob', 'party-carol', 'ref', 'T2', 'bob-edit', 'edit2', 'T1', 'edit1', 'up-alice', 'up-bob'];
      assert.deepEqual(names(all.body.chunk), expected);
      assert.equal(all.body.next_batch, undefined);
      assert.equal(all.body.recursion_depth, undefined);
      const reactions = await relations(alice, `${enc(ids['M']!)}/m.annotation`, '?limit=50');
      assert.deepEqual(names(reactions.body.chunk), ['down-bob', 'party-carol', 'up-alice', 'up-bob']);
      const typed = await relations(alice, `${enc(ids['M']!)}/m.annotation/m.reaction`, '?dir=f&limit=50');
      assert.deepEqual(names(typed.body.chunk), ['up-bob', 'up-alice', 'party-carol', 'down-bob']);
      const none = await relations(alice, `${enc(ids['M']!)}/m.annotation/m.room.message`);
      assert.deepEqual(none.body.chunk, []);
      const seen: string[] = [];
      let from: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await relations(alice, enc(ids['M']!), `?limit=3${from !== undefined ? `&from=${enc(from)}` : ''}`);
        assert.ok(page.body.chunk.length <= 3);
        seen.push(...names(page.body.chunk));
        if (from !== undefined) assert.equal(page.body.prev_batch, from);
        from = page.body.next_batch;
        if (from === undefined) break;
      }
      assert.deepEqual(seen, expected);
      const recursed = await relations(alice, enc(ids['M']!), '?limit=50&recurse=true');
      // T1's edit was sent before the last two reactions.
      assert.deepEqual(names(recursed.body.chunk), [...expected.slice(0, 2), 'T1-edit', ...expected.slice(2)]);
      assert.equal(recursed.body.recursion_depth, 3);
    });

    test('GET /threads: threads by their newest event, all or those the user took part in', async () => {
      ids['N'] = await carol.text(roomId, 'another root');
      ids['N1'] = await carol.send(roomId, { msgtype: 'm.text', body: 'in N', ...rel('m.thread', ids['N']!) });
      const threads = (who: Client, params = '') => who.ok('GET', `/_matrix/client/v1/rooms/${enc(roomId)}/threads${params}`);
      assert.deepEqual(names((await threads(alice)).chunk), ['N', 'M']);
      assert.deepEqual(names((await threads(carol, '?include=participated')).chunk), ['N']);
      assert.deepEqual(names((await threads(bob, '?include=participated')).chunk), ['M']);
      const first = await threads(alice, '?limit=1');
      assert.deepEqual(names(first.chunk), ['N']);
      assert.equal(first.chunk[0].unsigned['m.relations']['m.thread'].latest_event.event_id, ids['N1']);
      assert.deepEqual(names((await threads(alice, `?limit=1&from=${enc(first.next_batch)}`)).chunk), ['M']);
      const bad = await alice.http.request('GET', `/_matrix/client/v1/rooms/${enc(roomId)}/threads?include=mine`);
      assert.deepEqual([bad.status, bad.body.errcode], [400, 'M_INVALID_PARAM']);
    });

    test('a redacted relation leaves the aggregations and the list; the same reaction may then be sent again', async () => {
      await alice.ok('PUT', `/rooms/${enc(roomId)}/redact/${enc(ids['T2']!)}/r1`, {});
      await bob.ok('PUT', `/rooms/${enc(roomId)}/redact/${enc(ids['up-bob']!)}/r2`, {});
      const root = await alice.ok('GET', `/rooms/${enc(roomId)}/event/${enc(ids['M']!)}`);
      assert.equal(root.unsigned['m.relations']['m.thread'].count, 1);
      assert.equal(root.unsigned['m.relations']['m.thread'].latest_event.event_id, ids['T1']);
      const reactions = await relations(alice, `${enc(ids['M']!)}/m.annotation`, '?limit=50');
      assert.deepEqual(names(reactions.body.chunk), ['down-bob', 'party-carol', 'up-alice']);
      ids['up-bob-again'] = await send(bob, 'm.reaction', rel('m.annotation', ids['M']!, { key: '👍' }));
    });

    test('a relation sent in another room does not count', async () => {
      const elsewhere = await bob.createRoom({});
      const txn = `x${Math.random().toString(36).slice(2)}`;
      await bob.ok('PUT', `/rooms/${enc(elsewhere)}/send/m.room.message/${txn}`, { msgtype: 'm.text', body: 'sneaky', ...rel('m.thread', ids['M']!) });
      const root = await alice.ok('GET', `/rooms/${enc(roomId)}/event/${enc(ids['M']!)}`);
      assert.equal(root.unsigned['m.relations']['m.thread'].count, 1);
      const threads = await relations(alice, `${enc(ids['M']!)}/m.thread`, '?limit=50');
      assert.deepEqual(names(threads.body.chunk), ['T1']);
    });

    test('who may read relations; bad parameters', async () => {
      const hidden = await relations(outsider, enc(ids['M']!));
      assert.equal(hidden.status, 404);
      const unknown = await relations(alice, enc('$nothing:localhost'));
      assert.equal(unknown.status, 404);
      for (const params of ['?dir=x', '?limit=0', '?from=nonsense', '?recurse=maybe']) {
        const r = await relations(alice, enc(ids['M']!), params);
        assert.deepEqual([r.status, r.body.errcode], [400, 'M_INVALID_PARAM'], params);
      }
    });
  });
}
