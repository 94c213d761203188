// Two people using a real server over HTTP, on SQLite and on PostgreSQL, the way a client does:
// alice speaks under /_chat/ and bob under /_matrix/. Each step builds on the one before; syncs are
// incremental from the token the user's previous sync gave, unless a step says otherwise.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { type ApiClient, enc, ephemeralOf, registerAndLogin, timeWake, timelineOf } from './support/client.js';

const ids = (events: readonly any[]) => events.map((e) => e.event_id as string);

for (const { backend, skip } of await serverBackends()) {
  describe(`two users over HTTP on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: ApiClient;
    let bob: ApiClient;
    let roomId: string;
    let aliceSince: string;
    let bobSince: string;
    let lastMessage: string;

    /** An incremental sync (no wait) from the user's last token, which it then advances. */
    const aliceSync = async (params: Record<string, string | number | object> = {}) => {
      const s = await alice.sync({ since: aliceSince, timeout: 0, ...params });
      aliceSince = s.next_batch;
      return s;
    };
    const bobSync = async (params: Record<string, string | number | object> = {}) => {
      const s = await bob.sync({ since: bobSince, timeout: 0, ...params });
      bobSince = s.next_batch;
      return s;
    };
    const room = (path = '') => `/rooms/${enc(roomId)}${path}`;

    test('both register with the dummy flow and log in with a password', async () => {
      alice = await registerAndLogin(hs.baseUrl, '/_chat/client/v3', 'alice', 'alice-password');
      bob = await registerAndLogin(hs.baseUrl, '/_matrix/client/v3', 'bob', 'bob-password');
      assert.equal(alice.userId, '@alice:localhost');
      assert.equal(bob.userId, '@bob:localhost');
      assert.deepEqual(await alice.ok('GET', '/account/whoami'), { user_id: alice.userId, device_id: alice.deviceId, is_guest: false });
      assert.deepEqual(await bob.ok('GET', '/account/whoami'), { user_id: bob.userId, device_id: bob.deviceId, is_guest: false });
      // The device is named as the login asked.
      const device = await bob.ok('GET', `/devices/${enc(bob.deviceId)}`);
      assert.equal(device.display_name, "bob's test client");
      // Clients read push rules before their first sync: the defaults, for each kind.
      const rules = await alice.ok('GET', '/pushrules/');
      for (const kind of ['override', 'content', 'room', 'sender', 'underride']) assert.ok(Array.isArray(rules.global[kind]), kind);
      assert.equal(rules.global.override[0].rule_id, '.m.rule.master');
      assert.ok(rules.global.override.some((r: any) => r.rule_id === '.m.rule.invite_for_me' && r.conditions.some((c: any) => c.pattern === alice.userId)));
      // A wrong password is refused.
      const wrong = await bob.call('POST', '/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: 'bob' }, password: 'nope' }, { token: null });
      assert.equal(wrong.status, 403);
      assert.equal(wrong.body.errcode, 'M_FORBIDDEN');
    });

    test('alice creates a private room inviting bob, and bob sees the invite in his sync', async () => {
      const first = await bob.sync();
      bobSince = first.next_batch;
      aliceSince = (await alice.sync()).next_batch;

      roomId = (await alice.ok('POST', '/createRoom', {
        preset: 'private_chat',
        name: 'The flow',
        topic: 'How two people talk',
        invite: [bob.userId],
      })).room_id;
      assert.match(roomId, /^![A-Za-z0-9]+:localhost$/);

      const s = await bobSync();
      const invited = s.rooms.invite[roomId];
      assert.ok(invited, `rooms.invite has the room: ${JSON.stringify(s.rooms)}`);
      assert.equal(s.rooms.join[roomId], undefined);
      const stripped = invited.invite_state.events as any[];
      const byType = (type: string, key = '') => stripped.find((e) => e.type === type && e.state_key === key);
      assert.equal(byType('m.room.name')?.content.name, 'The flow');
      assert.equal(byType('m.room.topic')?.content.topic, 'How two people talk');
      assert.equal(byType('m.room.join_rules')?.content.join_rule, 'invite');
      assert.equal(byType('m.room.create')?.sender, alice.userId);
      const invite = byType('m.room.member', bob.userId);
      assert.equal(invite?.content.membership, 'invite');
      assert.equal(invite?.sender, alice.userId);
      for (const e of stripped) assert.equal(typeof e.sender, 'string');
    });

    test('bob joins; both see the join and the room moves to rooms.join for bob', async () => {
      assert.deepEqual(await bob.ok('POST', `/join/${enc(roomId)}`, {}), { room_id: roomId });
      const s = await bobSync();
      assert.equal(s.rooms.invite[roomId], undefined);
      const joined = s.rooms.join[roomId];
      assert.ok(joined, 'rooms.join has the room');
      // The room is new in rooms.join, so its timeline starts before the join: the invite, then the join.
      const mine = timelineOf(s, roomId).filter((e) => e.type === 'm.room.member' && e.state_key === bob.userId);
      assert.deepEqual(mine.map((e) => e.content.membership), ['invite', 'join']);
      assert.equal(joined.summary['m.joined_member_count'], 2);

      // The room is new to alice since her last sync: she gets it whole, bob's invite and join included.
      const a = await aliceSync();
      const seen = timelineOf(a, roomId).filter((e) => e.type === 'm.room.member' && e.state_key === bob.userId);
      assert.deepEqual(seen.map((e) => e.content.membership), ['invite', 'join']);
      assert.equal(timelineOf(a, roomId)[0].type, 'm.room.create');
      assert.deepEqual(await bob.ok('GET', '/joined_rooms'), { joined_rooms: [roomId] });
    });

    test("alice's message reaches bob's sync with every field, and alice's own with its transaction id", async () => {
      const before = Date.now();
      lastMessage = await alice.send(roomId, { msgtype: 'm.text', body: 'Hello bob' }, 'txn-hello');
      assert.match(lastMessage, /^\$[A-Za-z0-9_-]{43}$/);

      const s = await bobSync();
      const events = timelineOf(s, roomId);
      assert.deepEqual(ids(events), [lastMessage]);
      const [e] = events;
      assert.equal(e.sender, alice.userId);
      assert.equal(e.type, 'm.room.message');
      assert.deepEqual(e.content, { msgtype: 'm.text', body: 'Hello bob' });
      assert.equal(typeof e.origin_server_ts, 'number');
      assert.ok(e.origin_server_ts >= before - 5 && e.origin_server_ts <= Date.now() + 5, `origin_server_ts ${e.origin_server_ts} is now`);
      assert.equal(typeof e.unsigned?.age, 'number');
      assert.ok(e.unsigned.age >= 0 && e.unsigned.age < 10_000);
      assert.equal(e.unsigned.transaction_id, undefined, 'only the sender sees its transaction id');
      assert.equal(e.state_key, undefined);

      const a = await aliceSync();
      const mine = timelineOf(a, roomId).find((x) => x.event_id === lastMessage);
      assert.equal(mine?.unsigned?.transaction_id, 'txn-hello');
    });

    test('an incremental sync returns only what is new', async () => {
      // Nothing happened since the last sync: the room has no new timeline events.
      const quiet = await bobSync();
      assert.deepEqual(timelineOf(quiet, roomId), []);

      const second = await alice.send(roomId, { msgtype: 'm.text', body: 'second' }, 'txn-second');
      const third = await alice.send(roomId, { msgtype: 'm.text', body: 'third' }, 'txn-third');
      const s = await bobSync();
      assert.deepEqual(ids(timelineOf(s, roomId)), [second, third]);
      assert.equal(s.rooms.join[roomId].timeline.limited, false);
      assert.deepEqual(timelineOf(await bobSync(), roomId), []);
      lastMessage = third;
    });

    test('a long-polling sync wakes within 100 ms of a send', async (t) => {
      let eventId = '';
      const wake = await timeWake(bob, bobSince, async () => {
        eventId = await alice.send(roomId, { msgtype: 'm.text', body: 'wake up' }, 'txn-wake');
      }, 150);
      bobSince = wake.sync.next_batch;
      assert.deepEqual(ids(timelineOf(wake.sync, roomId)), [eventId]);
      assert.ok(wake.sinceStart < 100, `the poll woke ${wake.sinceStart.toFixed(1)} ms after the send started`);
      t.diagnostic(`woke ${wake.sinceStart.toFixed(1)} ms after the send started`);
      lastMessage = eventId;
    });

    test('a long-poll wakes as quickly for typing, receipts, to-device messages, account data and invites', async () => {
      // Measured from when the change was made (its request answered): an invite is a whole new room.
      const wakeOn = async (what: string, client: ApiClient, since: string, act: () => Promise<unknown>) => {
        const wake = await timeWake(client, since, act);
        assert.ok(wake.sinceDone < 100, `${what}: the poll woke ${wake.sinceDone.toFixed(1)} ms after the change was made`);
        return wake.sync;
      };

      await aliceSync();
      await bobSync();
      let s = await wakeOn('typing', alice, aliceSince, () => bob.ok('PUT', room(`/typing/${enc(bob.userId)}`), { typing: true, timeout: 10_000 }));
      aliceSince = s.next_batch;
      assert.deepEqual(ephemeralOf(s, roomId).find((e) => e.type === 'm.typing')?.content, { user_ids: [bob.userId] });

      s = await wakeOn('a receipt', alice, aliceSince, () => bob.ok('POST', room(`/receipt/m.read/${enc(lastMessage)}`), {}));
      aliceSince = s.next_batch;
      assert.ok(ephemeralOf(s, roomId).find((e) => e.type === 'm.receipt')?.content[lastMessage]?.['m.read']?.[bob.userId]);

      // Bob's own typing and receipt are news to his sync too: take them first.
      await bobSync();
      s = await wakeOn('a to-device message', bob, bobSince, () =>
        alice.ok('PUT', '/sendToDevice/org.example.knock/txn-wake-td', { messages: { [bob.userId]: { '*': { knock: 1 } } } }),
      );
      bobSince = s.next_batch;
      assert.deepEqual(s.to_device.events, [{ sender: alice.userId, type: 'org.example.knock', content: { knock: 1 } }]);

      s = await wakeOn('account data', bob, bobSince, () => bob.ok('PUT', `/user/${enc(bob.userId)}/account_data/org.example.seen`, { at: 1 }));
      bobSince = s.next_batch;
      assert.deepEqual(s.account_data.events, [{ type: 'org.example.seen', content: { at: 1 } }]);

      let side = '';
      s = await wakeOn('an invite', bob, bobSince, async () => {
        side = (await alice.ok('POST', '/createRoom', { preset: 'private_chat', name: 'Side room', invite: [bob.userId] })).room_id;
      });
      bobSince = s.next_batch;
      assert.ok(s.rooms.invite[side], `the invite woke the poll: ${JSON.stringify(s.rooms)}`);
      await bob.ok('PUT', room(`/typing/${enc(bob.userId)}`), { typing: false });
      aliceSince = (await aliceSync()).next_batch;
    });

    test('/messages pages backwards through 30+ messages without gaps or repeats, ending at the creation', async () => {
      const sent: string[] = [];
      for (let i = 0; i < 32; i++) sent.push(await alice.send(roomId, { msgtype: 'm.text', body: `page ${i}` }, `txn-page-${i}`));
      lastMessage = sent[sent.length - 1]!;
      const now = await bobSync();
      // The sync shows the newest ones and says there is more before them.
      const timeline = now.rooms.join[roomId].timeline;
      assert.equal(timeline.limited, true);
      assert.equal(ids(timeline.events).at(-1), lastMessage);

      const seen: any[] = [];
      let from: string = bobSince;
      let pages = 0;
      for (;;) {
        const page = await bob.ok('GET', `${room('/messages')}?dir=b&limit=7&from=${enc(from)}`);
        pages++;
        assert.equal(page.start, from, 'start is the token the page was asked from');
        assert.ok(page.chunk.length <= 7);
        seen.push(...page.chunk);
        if (page.end === undefined) break;
        assert.notEqual(page.end, from);
        assert.ok(page.chunk.length > 0, 'a page with an end token has events');
        from = page.end;
        assert.ok(pages < 30, 'paging ends');
      }
      const seenIds = ids(seen);
      assert.equal(new Set(seenIds).size, seenIds.length, 'no event twice');
      // Newest first: the 32 sends in reverse, with nothing between them.
      assert.deepEqual(seenIds.slice(0, 32), [...sent].reverse());
      assert.equal(seen.at(-1).type, 'm.room.create', 'paging reaches the start of the room');
      // Every earlier message is there, in order.
      const bodies = seen.filter((e) => e.type === 'm.room.message').map((e) => e.content.body);
      assert.deepEqual(bodies.slice(32), ['wake up', 'third', 'second', 'Hello bob']);
      for (const e of seen) assert.equal(e.room_id, roomId);

      // Forwards from the end of history gives the same events oldest first.
      const forward = await bob.ok('GET', `${room('/messages')}?dir=f&limit=100&from=${enc(from)}`);
      const forwardIds = ids(forward.chunk);
      assert.deepEqual(forwardIds.slice(-32), sent);
    });

    test('a redacted event is served without its content and with unsigned.redacted_because', async () => {
      const victim = await alice.send(roomId, { msgtype: 'm.text', body: 'a secret' }, 'txn-secret');
      const redaction = (await alice.ok('PUT', room(`/redact/${enc(victim)}/txn-redact`), { reason: 'oops' })).event_id as string;
      assert.match(redaction, /^\$/);

      const s = await bobSync();
      const r = timelineOf(s, roomId).find((e) => e.event_id === redaction);
      assert.equal(r?.type, 'm.room.redaction');
      assert.equal(r.redacts ?? r.content.redacts, victim);
      assert.equal(r.content.reason, 'oops');

      const served = await bob.ok('GET', room(`/event/${enc(victim)}`));
      assert.equal(served.type, 'm.room.message');
      assert.equal(served.sender, alice.userId);
      assert.deepEqual(served.content, {});
      assert.equal(served.unsigned.redacted_because.event_id, redaction);
      assert.equal(served.unsigned.redacted_because.content.reason, 'oops');

      const page = await bob.ok('GET', `${room('/messages')}?dir=b&limit=2&from=${enc(bobSince)}`);
      assert.deepEqual(ids(page.chunk), [redaction, victim]);
      assert.deepEqual(page.chunk[1].content, {});
      assert.equal(page.chunk[1].unsigned.redacted_because.event_id, redaction);
      // A sync that shows the event again shows it redacted.
      const fresh = await bob.sync({ filter: { room: { timeline: { limit: 2 } } } });
      const again = timelineOf(fresh, roomId).find((e) => e.event_id === victim);
      assert.deepEqual(again?.content, {});
      assert.equal(again.unsigned.redacted_because.event_id, redaction);
      // Bob may not redact alice's message: he lacks the power.
      const denied = await bob.call('PUT', room(`/redact/${enc(lastMessage)}/txn-bob-redact`), {});
      assert.equal(denied.status, 403);
      assert.equal(denied.body.errcode, 'M_FORBIDDEN');
    });

    test('state changes (topic, space child, room emotes) show in /state and in sync', async () => {
      const child = '!child:localhost';
      const emotes = { images: { wave: { url: 'mxc://localhost/wave', body: 'wave' } }, pack: { display_name: 'Flow pack' } };
      const topicId = (await alice.ok('PUT', room('/state/m.room.topic'), { topic: 'A new topic' })).event_id;
      const childId = (await alice.ok('PUT', room(`/state/m.space.child/${enc(child)}`), { via: ['localhost'], order: 'a' })).event_id;
      const emotesId = (await alice.ok('PUT', room('/state/im.ponies.room_emotes/'), emotes)).event_id;

      const s = await bobSync();
      const got = timelineOf(s, roomId);
      assert.deepEqual(ids(got), [topicId, childId, emotesId]);
      assert.deepEqual(got.map((e) => [e.type, e.state_key]), [
        ['m.room.topic', ''],
        ['m.space.child', child],
        ['im.ponies.room_emotes', ''],
      ]);
      assert.equal(got[0].content.topic, 'A new topic');
      assert.equal(got[0].unsigned.prev_content?.topic, 'How two people talk');

      const state = (await bob.ok('GET', room('/state'))) as any[];
      const find = (type: string, key = '') => state.filter((e) => e.type === type && e.state_key === key);
      assert.equal(find('m.room.topic').length, 1);
      assert.equal(find('m.room.topic')[0].content.topic, 'A new topic');
      assert.deepEqual(find('m.space.child', child)[0].content, { via: ['localhost'], order: 'a' });
      assert.deepEqual(find('im.ponies.room_emotes')[0].content, emotes);
      assert.equal(find('m.room.name')[0].content.name, 'The flow');
      assert.deepEqual(await bob.ok('GET', room(`/state/m.space.child/${enc(child)}`)), { via: ['localhost'], order: 'a' });
      assert.deepEqual(await bob.ok('GET', room('/state/im.ponies.room_emotes')), emotes);
      // Bob, at power 0, may not change the topic (state needs 50 by default).
      const denied = await bob.call('PUT', room('/state/m.room.topic'), { topic: "bob's" });
      assert.equal(denied.status, 403);
      assert.equal(denied.body.errcode, 'M_FORBIDDEN');
    });

    test('a profile change shows in member events, in the sync timeline and in /members', async () => {
      await bob.ok('PUT', `/profile/${enc(bob.userId)}/displayname`, { displayname: 'Bobby' });
      const a = await aliceSync();
      const changes = timelineOf(a, roomId).filter((e) => e.type === 'm.room.member' && e.state_key === bob.userId);
      assert.equal(changes.length, 1);
      assert.deepEqual(changes[0].content, { membership: 'join', displayname: 'Bobby' });
      assert.equal(changes[0].unsigned.prev_content?.displayname, 'bob');

      const members = await alice.ok('GET', room('/members'));
      const bobMember = members.chunk.find((e: any) => e.state_key === bob.userId);
      assert.equal(bobMember.content.displayname, 'Bobby');
      assert.equal(bobMember.content.membership, 'join');
      const joined = await alice.ok('GET', room('/joined_members'));
      assert.equal(joined.joined[bob.userId].display_name, 'Bobby');
      assert.deepEqual(await alice.ok('GET', `/profile/${enc(bob.userId)}/displayname`), { displayname: 'Bobby' });
      await bobSync();
    });

    test('typing and read receipts arrive in the ephemeral section', async () => {
      // From a known start: bob not typing, alice up to date.
      await bob.ok('PUT', room(`/typing/${enc(bob.userId)}`), { typing: false });
      await aliceSync();
      await bob.ok('PUT', room(`/typing/${enc(bob.userId)}`), { typing: true, timeout: 10_000 });
      let a = await aliceSync();
      const typing = ephemeralOf(a, roomId).find((e) => e.type === 'm.typing');
      assert.deepEqual(typing?.content, { user_ids: [bob.userId] });

      await bob.ok('PUT', room(`/typing/${enc(bob.userId)}`), { typing: false });
      await bob.ok('POST', room(`/receipt/m.read/${enc(lastMessage)}`), {});
      a = await aliceSync();
      const ephemeral = ephemeralOf(a, roomId);
      assert.deepEqual(ephemeral.find((e) => e.type === 'm.typing')?.content, { user_ids: [] });
      const receipt = ephemeral.find((e) => e.type === 'm.receipt');
      assert.ok(receipt, `a receipt in ${JSON.stringify(ephemeral)}`);
      const read = receipt.content[lastMessage]?.['m.read']?.[bob.userId];
      assert.equal(typeof read?.ts, 'number');
      // Once delivered, neither comes again.
      a = await aliceSync();
      assert.deepEqual(ephemeralOf(a, roomId), []);
    });

    test('a to-device message is delivered exactly once', async () => {
      const messages = { [bob.userId]: { [bob.deviceId]: { text: 'psst' } } };
      await alice.ok('PUT', `/sendToDevice/org.example.whisper/txn-td-1`, { messages });
      // The same transaction again is not a second message.
      await alice.ok('PUT', `/sendToDevice/org.example.whisper/txn-td-1`, { messages });

      const unacked = bobSince;
      const s = await bobSync();
      assert.deepEqual(s.to_device.events, [{ sender: alice.userId, type: 'org.example.whisper', content: { text: 'psst' } }]);
      // Syncing with the token that delivered it acknowledges it: it never comes again.
      const next = await bobSync();
      assert.deepEqual(next.to_device.events, []);
      const again = await bob.sync({ since: unacked, timeout: 0 });
      assert.deepEqual(again.to_device.events, []);
      // Alice, who sent it, receives nothing.
      assert.deepEqual((await aliceSync()).to_device.events, []);
    });

    test('account data, global and per room, is stored and synced', async () => {
      const direct = { [bob.userId]: [roomId] };
      const emotes = { images: { heart: { url: 'mxc://localhost/heart' } } };
      await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/m.direct`, direct);
      await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/im.ponies.user_emotes`, emotes);
      await alice.ok('PUT', `/user/${enc(alice.userId)}/rooms/${enc(roomId)}/account_data/org.example.fold`, { folded: true });
      await alice.ok('PUT', `/user/${enc(alice.userId)}/rooms/${enc(roomId)}/tags/u.work`, { order: 0.5 });

      assert.deepEqual(await alice.ok('GET', `/user/${enc(alice.userId)}/account_data/m.direct`), direct);
      assert.deepEqual(await alice.ok('GET', `/user/${enc(alice.userId)}/rooms/${enc(roomId)}/account_data/org.example.fold`), { folded: true });
      assert.deepEqual(await alice.ok('GET', `/user/${enc(alice.userId)}/rooms/${enc(roomId)}/tags`), { tags: { 'u.work': { order: 0.5 } } });

      const a = await aliceSync();
      const global = Object.fromEntries(a.account_data.events.map((e: any) => [e.type, e.content]));
      assert.deepEqual(global['m.direct'], direct);
      assert.deepEqual(global['im.ponies.user_emotes'], emotes);
      const perRoom = Object.fromEntries(a.rooms.join[roomId].account_data.events.map((e: any) => [e.type, e.content]));
      assert.deepEqual(perRoom['org.example.fold'], { folded: true });
      assert.deepEqual(perRoom['m.tag'], { tags: { 'u.work': { order: 0.5 } } });

      // Another user neither reads nor receives it.
      const other = await bob.call('GET', `/user/${enc(alice.userId)}/account_data/m.direct`);
      assert.equal(other.status, 403);
      const b = await bobSync();
      assert.deepEqual(b.account_data.events, []);
      assert.equal(b.rooms.join[roomId], undefined, 'nothing new in the room for bob');
    });

    test('the same transaction id twice gives the same event, sent once', async () => {
      const first = await alice.send(roomId, { msgtype: 'm.text', body: 'only once' }, 'txn-dup');
      const second = await alice.send(roomId, { msgtype: 'm.text', body: 'only once' }, 'txn-dup');
      assert.equal(second, first);
      const s = await bobSync();
      assert.deepEqual(ids(timelineOf(s, roomId)), [first]);
      const page = await bob.ok('GET', `${room('/messages')}?dir=b&limit=3&from=${enc(bobSince)}`);
      assert.equal(ids(page.chunk).filter((id) => id === first).length, 1);
      assert.equal(page.chunk[0].event_id, first);
      // The transaction belongs to the device: alice on another device with the same id sends anew.
      const login = await alice.ok('POST', '/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: 'alice' }, password: 'alice-password' }, { token: null });
      assert.notEqual(login.device_id, alice.deviceId);
      const other = await alice.ok('PUT', room('/send/m.room.message/txn-dup'), { msgtype: 'm.text', body: 'other device' }, { token: login.access_token });
      assert.notEqual(other.event_id, first);
      lastMessage = other.event_id;
      await aliceSync();
    });

    test('bob leaves: the room moves to rooms.leave and later messages do not reach him', async () => {
      await bob.ok('POST', room('/leave'), {});
      const s = await bobSync();
      assert.equal(s.rooms.join[roomId], undefined);
      const left = s.rooms.leave[roomId];
      assert.ok(left, `rooms.leave has the room: ${JSON.stringify(s.rooms)}`);
      const leave = timelineOf(s, roomId, 'leave').find((e) => e.type === 'm.room.member' && e.state_key === bob.userId);
      assert.equal(leave?.content.membership, 'leave');
      assert.ok(ids(timelineOf(s, roomId, 'leave')).includes(lastMessage), 'what came before the leave is there');

      const a = await aliceSync();
      const seen = timelineOf(a, roomId).filter((e) => e.type === 'm.room.member' && e.state_key === bob.userId);
      assert.deepEqual(seen.map((e) => e.content.membership), ['leave']);

      await alice.send(roomId, { msgtype: 'm.text', body: 'after bob left' }, 'txn-after');
      const later = await bobSync();
      assert.equal(later.rooms.join[roomId], undefined);
      assert.equal(later.rooms.leave[roomId], undefined);
      assert.deepEqual(await bob.ok('GET', '/joined_rooms'), { joined_rooms: [] });
      const denied = await bob.call('PUT', room('/send/m.room.message/txn-gone'), { msgtype: 'm.text', body: 'hello?' });
      assert.equal(denied.status, 403);
    });

    test("an initial sync gives the room's current state and its latest events", async () => {
      const last = await alice.send(roomId, { msgtype: 'm.text', body: 'the end' }, 'txn-end');
      const s = await alice.sync({ filter: { room: { timeline: { limit: 3 } } } });
      const joined = s.rooms.join[roomId];
      assert.equal(joined.timeline.limited, true);
      assert.equal(joined.timeline.events.length, 3);
      assert.equal(ids(joined.timeline.events).at(-1), last);
      // The state before the timeline, with everything set along the way.
      const all = [...joined.state.events, ...joined.timeline.events];
      const current = (type: string, key = '') => all.filter((e) => e.type === type && e.state_key === key).at(-1);
      assert.equal(current('m.room.topic')?.content.topic, 'A new topic');
      assert.equal(current('m.room.name')?.content.name, 'The flow');
      assert.deepEqual(current('m.space.child', '!child:localhost')?.content, { via: ['localhost'], order: 'a' });
      assert.equal(current('m.room.member', bob.userId)?.content.membership, 'leave');
      assert.equal(joined.summary['m.joined_member_count'], 1);
      for (const e of joined.state.events) assert.equal(typeof e.state_key, 'string');
      // /messages from the timeline's prev_batch continues just before it.
      const page = await alice.ok('GET', `${room('/messages')}?dir=b&limit=1&from=${enc(joined.timeline.prev_batch)}`);
      const newest = await alice.ok('GET', `${room('/messages')}?dir=b&limit=4&from=${enc(s.next_batch)}`);
      assert.deepEqual(ids(newest.chunk).slice(0, 3), ids(joined.timeline.events).reverse());
      assert.deepEqual(ids(page.chunk), [newest.chunk[3].event_id]);
    });
  });
}
