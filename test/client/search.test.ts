// POST /search (room_events) over HTTP against real servers, on both backends: matching and
// ranking, keys, filters, pagination, context, state, groupings, counts and highlights; who may
// find what (rooms never joined, history before a join in joined-only rooms, redacted events);
// search turned off; and the errors of bad requests.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, enc } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';

const PREFIX = '/_chat/client/v3';

function roomEvents(term: string, extra: object = {}): object {
  return { search_categories: { room_events: { search_term: term, ...extra } } };
}

async function search(client: ApiClient, term: string, extra: object = {}, nextBatch?: string): Promise<any> {
  const path = nextBatch === undefined ? '/search' : `/search?next_batch=${enc(nextBatch)}`;
  return (await client.ok('POST', path, roomEvents(term, extra))).search_categories.room_events;
}

const bodies = (r: any): string[] => r.results.map((x: any) => x.result.content.body ?? x.result.content.name ?? x.result.content.topic);

for (const { backend, skip } of await serverBackends()) {
  describe(`search on ${backend}`, { skip }, () => {
    let server: TestServer;
    let alice: ApiClient;
    let bob: ApiClient;
    let shared: string;
    let privateRoom: string;
    let joinedOnly: string;
    const client = async (name: string) => {
      const u = await server.registerUser(name, 'password-123');
      return new ApiClient(server.baseUrl, PREFIX, u.userId, u.accessToken, u.deviceId);
    };

    before(async () => {
      server = await startTestServer({ backend });
      alice = await client('alice');
      bob = await client('bob');
      await alice.ok('PUT', `/profile/${enc(alice.userId)}/displayname`, { displayname: 'Alice Liddell' });
      shared = (await alice.ok('POST', '/createRoom', { name: 'Fox Den', topic: 'all about the red fox', preset: 'private_chat', invite: [bob.userId] })).room_id;
      await bob.ok('POST', `/join/${enc(shared)}`, {});
      await alice.send(shared, { msgtype: 'm.text', body: 'the quick brown fox jumps' }, 's1');
      await bob.send(shared, { msgtype: 'm.text', body: 'lazy dogs sleeping in the sun' }, 's2');
      await alice.send(shared, { msgtype: 'm.text', body: 'fox fox fox: hunting season for the fox' }, 's3');
      await bob.send(shared, { msgtype: 'm.text', body: 'I saw a fox yesterday' }, 's4');
      privateRoom = (await alice.ok('POST', '/createRoom', { preset: 'private_chat' })).room_id;
      await alice.send(privateRoom, { msgtype: 'm.text', body: 'a fox only alice knows about, zebra' }, 'p1');
      joinedOnly = (
        await alice.ok('POST', '/createRoom', {
          preset: 'private_chat',
          initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'joined' } }],
        })
      ).room_id;
      await alice.send(joinedOnly, { msgtype: 'm.text', body: 'walrus said before the join' }, 'j1');
      await alice.ok('POST', `/rooms/${enc(joinedOnly)}/invite`, { user_id: bob.userId });
      await bob.ok('POST', `/join/${enc(joinedOnly)}`, {});
      await alice.send(joinedOnly, { msgtype: 'm.text', body: 'walrus said after the join' }, 'j2');
    });
    after(() => server?.close());

    test('words match; rank orders best first, recent newest first', async () => {
      const ranked = await search(bob, 'fox');
      assert.ok(ranked.results.length >= 4, JSON.stringify(bodies(ranked)));
      assert.equal(ranked.results[0].result.content.body, 'fox fox fox: hunting season for the fox');
      const ranks = ranked.results.map((r: any) => r.rank);
      assert.deepEqual(ranks, [...ranks].sort((a, b) => b - a));
      assert.ok(ranked.results.every((r: any) => r.result.room_id === shared && typeof r.result.event_id === 'string' && r.result.sender !== undefined));
      const recent = await search(bob, 'fox', { order_by: 'recent' });
      const times = recent.results.map((r: any) => r.result.origin_server_ts);
      assert.deepEqual(times, [...times].sort((a, b) => b - a));
      assert.equal(recent.results[0].result.content.body, 'I saw a fox yesterday');
      // Every word must match.
      assert.deepEqual(bodies(await search(bob, 'quick FOX')), ['the quick brown fox jumps']);
      assert.deepEqual(bodies(await search(bob, 'quick zebra')), []);
    });

    test('keys: body, name, topic (all three by default)', async () => {
      const all = await search(bob, 'fox');
      const types = new Set(all.results.map((r: any) => r.result.type));
      assert.ok(types.has('m.room.name') && types.has('m.room.topic') && types.has('m.room.message'), [...types].join());
      assert.deepEqual(bodies(await search(bob, 'fox', { keys: ['content.name'] })), ['Fox Den']);
      assert.deepEqual(bodies(await search(bob, 'fox', { keys: ['content.topic'] })), ['all about the red fox']);
      const onlyBody = await search(bob, 'fox', { keys: ['content.body'] });
      assert.ok(onlyBody.results.every((r: any) => r.result.type === 'm.room.message'));
    });

    test('filters: senders, types, rooms, limit', async () => {
      assert.deepEqual(bodies(await search(bob, 'fox', { filter: { senders: [bob.userId] } })), ['I saw a fox yesterday']);
      assert.ok((await search(bob, 'fox', { filter: { not_senders: [bob.userId] } })).results.every((r: any) => r.result.sender === alice.userId));
      assert.deepEqual(bodies(await search(bob, 'fox', { filter: { types: ['m.room.top*'] } })), ['all about the red fox']);
      assert.ok((await search(bob, 'fox', { filter: { not_types: ['m.room.message'] } })).results.every((r: any) => r.result.type !== 'm.room.message'));
      assert.equal((await search(alice, 'fox', { filter: { rooms: [privateRoom] } })).results.length, 1);
      assert.ok((await search(alice, 'fox', { filter: { not_rooms: [privateRoom] } })).results.every((r: any) => r.result.room_id === shared));
      assert.equal((await search(bob, 'fox', { filter: { limit: 2 } })).results.length, 2);
    });

    test('counts and highlights (prefix matching)', async () => {
      const r = await search(bob, 'hunt');
      assert.deepEqual(bodies(r), ['fox fox fox: hunting season for the fox']);
      assert.equal(r.count, 1);
      assert.ok(r.highlights.includes('hunting'), JSON.stringify(r.highlights));
      // Three messages, the name and the topic in the shared room, one message in alice's own.
      assert.equal((await search(alice, 'fox')).count, 6);
    });

    test('pagination with next_batch, in both orders, until done', async () => {
      const room = (await alice.ok('POST', '/createRoom', { preset: 'private_chat' })).room_id;
      for (let i = 0; i < 23; i++) await alice.send(room, { msgtype: 'm.text', body: `needle number ${i}` }, `n${i}`);
      for (const order of ['rank', 'recent']) {
        const seen: string[] = [];
        let next: string | undefined;
        let pages = 0;
        do {
          const page = await search(alice, 'needle', { order_by: order, filter: { limit: 10 } }, next);
          seen.push(...page.results.map((r: any) => r.result.event_id));
          assert.equal(page.count, 23);
          next = page.next_batch;
          pages++;
        } while (next !== undefined && pages < 10);
        assert.equal(new Set(seen).size, 23, order);
        assert.ok(pages >= 3 && pages <= 4, `${order}: ${pages} pages`);
      }
      const bad = await alice.call('POST', `/search?next_batch=${enc('nonsense!')}`, roomEvents('needle'));
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errcode, 'M_INVALID_PARAM');
    });

    test('event_context, with profiles', async () => {
      const r = await search(bob, 'lazy', { event_context: { before_limit: 1, after_limit: 1, include_profile: true } });
      const [hit] = r.results;
      assert.equal(hit.result.content.body, 'lazy dogs sleeping in the sun');
      assert.deepEqual(hit.context.events_before.map((e: any) => e.content.body), ['the quick brown fox jumps']);
      assert.deepEqual(hit.context.events_after.map((e: any) => e.content.body), ['fox fox fox: hunting season for the fox']);
      assert.equal(typeof hit.context.start, 'string');
      assert.equal(typeof hit.context.end, 'string');
      assert.equal(hit.context.profile_info[alice.userId].displayname, 'Alice Liddell');
      assert.ok(hit.context.profile_info[bob.userId] !== undefined);
    });

    test('include_state and groupings', async () => {
      const r = await search(bob, 'fox', { include_state: true, groupings: { group_by: [{ key: 'room_id' }, { key: 'sender' }] } });
      assert.deepEqual(Object.keys(r.state), [shared]);
      assert.ok(r.state[shared].some((e: any) => e.type === 'm.room.create'));
      assert.deepEqual(Object.keys(r.groups.room_id), [shared]);
      assert.equal(r.groups.room_id[shared].results.length, r.results.length);
      assert.equal(r.groups.room_id[shared].order, 1);
      assert.deepEqual(new Set(Object.keys(r.groups.sender)), new Set([alice.userId, bob.userId]));
      assert.equal(r.groups.sender[bob.userId].results.length, 1);
    });

    test('a user never finds messages of rooms they are not in', async () => {
      assert.deepEqual(bodies(await search(bob, 'zebra')), []);
      assert.equal((await search(bob, 'zebra')).count, 0);
      assert.deepEqual(bodies(await search(alice, 'zebra')), ['a fox only alice knows about, zebra']);
    });

    test('joined-only history: messages from before the join are not found', async () => {
      assert.deepEqual(bodies(await search(bob, 'walrus')), ['walrus said after the join']);
      assert.deepEqual(new Set(bodies(await search(alice, 'walrus'))), new Set(['walrus said before the join', 'walrus said after the join']));
    });

    test('matches hidden by history visibility are skipped across pages, in both orders', async () => {
      const room = (
        await alice.ok('POST', '/createRoom', {
          preset: 'private_chat',
          initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'joined' } }],
        })
      ).room_id;
      for (let i = 0; i < 30; i++) await alice.send(room, { msgtype: 'm.text', body: `narwhal hidden ${i}` }, `h${i}`);
      await alice.ok('POST', `/rooms/${enc(room)}/invite`, { user_id: bob.userId });
      await bob.ok('POST', `/join/${enc(room)}`, {});
      for (let i = 0; i < 3; i++) await alice.send(room, { msgtype: 'm.text', body: `narwhal shown ${i}` }, `v${i}`);
      for (const order of ['rank', 'recent']) {
        const seen: string[] = [];
        let next: string | undefined;
        let pages = 0;
        do {
          const page = await search(bob, 'narwhal', { order_by: order, filter: { limit: 2 } }, next);
          seen.push(...bodies(page));
          next = page.next_batch;
          pages++;
        } while (next !== undefined && pages < 10);
        assert.deepEqual(seen.sort(), ['narwhal shown 0', 'narwhal shown 1', 'narwhal shown 2'], order);
      }
    });

    test('a redacted event is no longer found', async () => {
      const eventId = await alice.send(shared, { msgtype: 'm.text', body: 'ephemeral platypus' }, 'r1');
      assert.deepEqual(bodies(await search(bob, 'platypus')), ['ephemeral platypus']);
      await alice.ok('PUT', `/rooms/${enc(shared)}/redact/${enc(eventId)}/t1`, {});
      const after = await search(bob, 'platypus');
      assert.deepEqual(after.results, []);
      assert.equal(after.count, 0);
    });

    test('an edited message is found by its newest edit, served with it; its old text and the edits are not found', async () => {
      const edit = (target: string, body: string, txn: string, who = alice) =>
        who.send(shared, { msgtype: 'm.text', body: `* ${body}`, 'm.new_content': { msgtype: 'm.text', body }, 'm.relates_to': { rel_type: 'm.replace', event_id: target } }, txn);
      const ids = (r: any): string[] => r.results.map((x: any) => x.result.event_id);
      const original = await alice.send(shared, { msgtype: 'm.text', body: 'the wombat is mauve' }, 'e1');
      assert.deepEqual(ids(await search(bob, 'mauve')), [original]);
      const first = await edit(original, 'the wombat is teal', 'e2');
      const teal = await search(bob, 'teal');
      assert.deepEqual(ids(teal), [original], 'the message, not the edit');
      assert.equal(teal.results[0].result.content.body, 'the wombat is mauve', 'its content is left as it was');
      assert.equal(teal.results[0].result.unsigned['m.relations']['m.replace'].event_id, first);
      assert.deepEqual(ids(await search(bob, 'mauve')), [], 'the old text is gone');
      assert.deepEqual(ids(await search(bob, 'wombat', { order_by: 'recent' })), [original], 'one hit for one message');
      // Another user's edit is not valid: nothing changes.
      await edit(original, 'the wombat is purple', 'e3', bob);
      assert.deepEqual(ids(await search(alice, 'purple')), []);
      assert.deepEqual(ids(await search(alice, 'teal')), [original]);
      // A second edit; redacting it brings the first back.
      const second = await edit(original, 'the wombat is olive', 'e4');
      assert.deepEqual(ids(await search(bob, 'olive')), [original]);
      assert.deepEqual(ids(await search(bob, 'teal')), []);
      await alice.ok('PUT', `/rooms/${enc(shared)}/redact/${enc(second)}/e5`, {});
      assert.deepEqual(ids(await search(bob, 'olive')), []);
      assert.deepEqual(ids(await search(bob, 'teal')), [original]);
      // The message redacted: no version of it is found.
      await alice.ok('PUT', `/rooms/${enc(shared)}/redact/${enc(original)}/e6`, {});
      assert.deepEqual(ids(await search(bob, 'wombat')), []);
    });

    test('r0 and /_matrix answer too', async () => {
      const r = await bob.ok('POST', '/_matrix/client/r0/search', roomEvents('yesterday'));
      assert.deepEqual(bodies(r.search_categories.room_events), ['I saw a fox yesterday']);
    });

    test('bad requests: 400 with the errcode the spec names', async () => {
      const cases: [object, string][] = [
        [{}, 'M_MISSING_PARAM'],
        [{ search_categories: 'x' }, 'M_BAD_JSON'],
        [{ search_categories: { room_events: {} } }, 'M_MISSING_PARAM'],
        [{ search_categories: { room_events: { search_term: 5 } } }, 'M_BAD_JSON'],
        [{ search_categories: { room_events: { search_term: 'a', keys: ['content.nope'] } } }, 'M_INVALID_PARAM'],
        [{ search_categories: { room_events: { search_term: 'a', keys: 'content.body' } } }, 'M_BAD_JSON'],
        [{ search_categories: { room_events: { search_term: 'a', order_by: 'oldest' } } }, 'M_INVALID_PARAM'],
        [{ search_categories: { room_events: { search_term: 'a', filter: { limit: 'ten' } } } }, 'M_BAD_JSON'],
        [{ search_categories: { room_events: { search_term: 'a', groupings: { group_by: [{ key: 'type' }] } } } }, 'M_INVALID_PARAM'],
        [{ search_categories: { room_events: { search_term: 'a', event_context: { before_limit: 'x' } } } }, 'M_BAD_JSON'],
        [{ search_categories: { people: { search_term: 'a' } } }, 'M_INVALID_PARAM'],
      ];
      for (const [body, errcode] of cases) {
        const r = await bob.call('POST', '/search', body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.errcode, errcode, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      }
      const unauthenticated = await new ApiClient(server.baseUrl, PREFIX, '', '', '').call('POST', '/search', roomEvents('fox'), { token: null });
      assert.equal(unauthenticated.status, 401);
    });
  });

  describe(`search turned off on ${backend}`, { skip }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend, config: { sync_api: { search: { enabled: false } } } });
    });
    after(() => server?.close());

    test('a search is refused with 400 M_UNKNOWN, saying why', async () => {
      const u = await server.registerUser('carol', 'password-123');
      const carol = new ApiClient(server.baseUrl, PREFIX, u.userId, u.accessToken, u.deviceId);
      const r = await carol.call('POST', '/search', roomEvents('fox'));
      assert.equal(r.status, 400);
      assert.equal(r.body.errcode, 'M_UNKNOWN');
      assert.match(r.body.error, /disabled/);
    });
  });
}
