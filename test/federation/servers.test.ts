// Two Hearth servers talking over real TLS: hs1.test on 127.0.0.2 (naming `chat`, found through SRV
// `_chat._tcp`) and hs2.test on 127.0.0.3 (naming `matrix`, SRV `_matrix-fed._tcp`), certificates
// from a test CA, names from a DNS server the test runs. Each finds the other, fetches its signing
// key, checks its request signatures and answers it; forged requests are refused; a transaction
// of PDUs signed by hs2 lands in hs1's room and is deduplicated when sent again.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FederationClient } from '../../src/federation/client.js';
import { FederationRemoteEvents } from '../../src/federation/remote-events.js';
import { stateKey } from '../../src/protocol/events.js';
import { hashAndSignEventWithId, type PduDraft } from '../../src/protocol/hashes.js';
import type { JsonObject, JsonValue } from '../../src/protocol/json.js';
import { requestAuthorization } from '../../src/protocol/request-auth.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { generateSigningKey, verifyJsonSignature } from '../../src/protocol/signing.js';
import { enc, request } from '../e2e/support/client.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`two servers over TLS on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;
    let alice: TestUser;

    before(async () => {
      net = await startFederationNet();
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend });
      alice = await hs1.registerUser('alice', 'alice-password');
      await request(hs1.baseUrl, 'PUT', `/_chat/client/v3/profile/${enc(alice.userId)}/displayname`, { displayname: 'Alice of hs1' }, { token: alice.accessToken });
    });

    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await net?.close();
    });

    const client = (hs: TestServer): FederationClient => hs.server.services.federation!;

    /** The room of the transaction test, for the tests after it. */
    const shared = {} as {
      roomId: string;
      joinId: string;
      messageId: string;
      build: (draft: Omit<PduDraft, 'room_id' | 'origin_server_ts'>) => ReturnType<typeof hashAndSignEventWithId>;
      auth: (...keys: [string, string][]) => string[];
      tips: () => Promise<{ event_id: string; depth: number }[]>;
    };

    test('each finds the other and its version, whatever naming each speaks', async () => {
      const fromHs2 = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: '/federation/v1/version' });
      assert.equal(fromHs2.status, 200);
      assert.equal((fromHs2.body as { server: { name: string } }).server.name, 'Hearth');
      const fromHs1 = await client(hs1).request({ destination: 'hs2.test', method: 'GET', path: '/federation/v1/version' });
      assert.equal(fromHs1.status, 200);
    });

    test('a signed query is answered once the key of its origin is fetched and checked', async () => {
      const res = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: '/federation/v1/query/profile', query: { user_id: alice.userId } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { displayname: 'Alice of hs1' });
      // hs1 fetched hs2's key over TLS and keeps it.
      const stored = await hs1.server.core.db.selectFrom('server_keys').select(['key_id', 'public_key']).where('server_name', '=', 'hs2.test').execute();
      assert.deepEqual(stored.map((k) => k.key_id), [hs2.server.core.signingKey.keyId]);
      // An alias on another server is not hs1's to answer.
      const other = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: '/federation/v1/query/directory', query: { room_alias: '#x:hs2.test' } });
      assert.equal(other.status, 400);
    });

    test('requests with a forged, misdirected or missing signature get 401 M_UNAUTHORIZED', async () => {
      const uri = `/_matrix/federation/v1/query/profile?user_id=${enc(alice.userId)}`;
      const signed = { method: 'GET', uri, origin: 'hs2.test', destination: 'hs1.test' };
      const forger = generateSigningKey('forged');
      const cases: [string, Record<string, string>][] = [
        ['another key', { authorization: requestAuthorization('X-Matrix', signed, { ...forger, keyId: hs2.server.core.signingKey.keyId }) }],
        ['an unknown key', { authorization: requestAuthorization('X-Matrix', signed, forger) }],
        ['another uri', { authorization: requestAuthorization('X-Matrix', { ...signed, uri: `${uri}&x=1` }, hs2.server.core.signingKey) }],
        ['another destination', { authorization: requestAuthorization('X-Chat', { ...signed, destination: 'hs3.test' }, hs2.server.core.signingKey) }],
        ['no header', {}],
        ['a malformed header', { authorization: 'X-Matrix origin=hs2.test' }],
      ];
      for (const [what, headers] of cases) {
        const res = await request(hs1.baseUrl, 'GET', uri, undefined, { token: null, headers });
        assert.equal(res.status, 401, what);
        assert.equal(res.body?.errcode, 'M_UNAUTHORIZED', what);
      }
      // The genuine one, sent the same way, passes.
      const ok = await request(hs1.baseUrl, 'GET', uri, undefined, { token: null, headers: { authorization: requestAuthorization('X-Matrix', signed, hs2.server.core.signingKey) } });
      assert.equal(ok.status, 200);
    });

    test('the notary vouches for the other server with both signatures', async () => {
      const res = await request(hs1.baseUrl, 'GET', '/_matrix/key/v2/query/hs2.test', undefined, { token: null });
      assert.equal(res.status, 200);
      const [keys] = res.body!.server_keys as JsonObject[];
      const key2 = hs2.server.core.signingKey;
      assert.ok(verifyJsonSignature(keys!, 'hs2.test', key2.keyId, key2.publicKey));
      const key1 = hs1.server.core.signingKey;
      assert.ok(verifyJsonSignature(keys!, 'hs1.test', key1.keyId, key1.publicKey));
    });

    test("a transaction of hs2's PDUs joins its user to hs1's room and speaks there, once", async () => {
      const created = await request(hs1.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', room_version: '10' }, { token: alice.accessToken });
      const roomId = created.body!.room_id as string;
      const bob = '@bob:hs2.test';
      const version = getRoomVersion('10')!;
      const key2 = hs2.server.core.signingKey;

      // The room as hs1 holds it: its state's ids and its forward extremities.
      const db = hs1.server.core.db;
      const state = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(roomId)}/state`, undefined, { token: alice.accessToken });
      const stateIds = new Map((state.body as unknown as JsonObject[]).map((e) => [stateKey(e['type'] as string, e['state_key'] as string), e['event_id'] as string]));
      const readTips = () =>
        db
          .selectFrom('forward_extremities as f')
          .innerJoin('rooms as r', 'r.room_nid', 'f.room_nid')
          .innerJoin('events as e', 'e.event_nid', 'f.event_nid')
          .select(['e.event_id', 'e.depth'])
          .where('r.room_id', '=', roomId)
          .execute();
      const tips = await readTips();
      const build = (draft: Omit<PduDraft, 'room_id' | 'origin_server_ts'>) =>
        hashAndSignEventWithId({ ...draft, room_id: roomId, origin_server_ts: Date.now() } as PduDraft, 'hs2.test', key2, version);
      const auth = (...keys: [string, string][]) => keys.map(([t, k]) => stateIds.get(stateKey(t, k))!);
      Object.assign(shared, { roomId, build, tips: readTips, auth: (...keys: [string, string][]) => keys.map(([t, k]) => (t === 'm.room.member' ? join.eventId : stateIds.get(stateKey(t, k))!)) });
      const join = build({
        type: 'm.room.member',
        state_key: bob,
        sender: bob,
        content: { membership: 'join', displayname: 'Bob of hs2' },
        prev_events: tips.map((t) => t.event_id),
        auth_events: auth(['m.room.create', ''], ['m.room.join_rules', ''], ['m.room.power_levels', '']),
        depth: Math.max(...tips.map((t) => Number(t.depth))) + 1,
      });
      const message = build({
        type: 'm.room.message',
        sender: bob,
        content: { msgtype: 'm.text', body: 'hello from hs2' },
        prev_events: [join.eventId],
        auth_events: [...auth(['m.room.create', ''], ['m.room.power_levels', '']), join.eventId],
        depth: Math.max(...tips.map((t) => Number(t.depth))) + 2,
      });

      Object.assign(shared, { joinId: join.eventId, messageId: message.eventId });
      const txn = { origin: 'hs2.test', origin_server_ts: Date.now(), pdus: [join.pdu, message.pdu] as unknown as JsonValue[] };
      const sent = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: '/federation/v1/send/txn-1', body: txn });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      assert.deepEqual(sent.body, { pdus: { [join.eventId]: {}, [message.eventId]: {} } });

      // Alice sees Bob join and speak.
      const messages = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(roomId)}/messages?dir=b&limit=5`, undefined, { token: alice.accessToken });
      const chunk = messages.body!.chunk as JsonObject[];
      assert.deepEqual(chunk.slice(0, 2).map((e) => e['event_id']), [message.eventId, join.eventId]);
      const members = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(roomId)}/joined_members`, undefined, { token: alice.accessToken });
      assert.ok(bob in (members.body!.joined as JsonObject));

      // The same transaction again: the same answer, nothing stored twice.
      const again = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: '/federation/v1/send/txn-1', body: txn });
      assert.deepEqual(again.body, sent.body);
      const count = await db.selectFrom('events').select((eb) => eb.fn.countAll<number>().as('n')).where('event_id', 'in', [join.eventId, message.eventId]).executeTakeFirstOrThrow();
      assert.equal(Number(count.n), 2);

      // Bob's typing reaches Alice; a typing EDU for someone of another server is dropped.
      const edus = [
        { edu_type: 'm.typing', content: { room_id: roomId, user_id: bob, typing: true } },
        { edu_type: 'm.typing', content: { room_id: roomId, user_id: '@mallory:hs3.test', typing: true } },
      ];
      const typed = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: '/federation/v1/send/txn-2', body: { origin: 'hs2.test', origin_server_ts: Date.now(), pdus: [], edus } });
      assert.deepEqual(typed.body, { pdus: {} });
      assert.deepEqual(hs1.server.services.typing.typingIn(roomId), [bob]);
    });

    test("forged and unauthorized PDUs in hs2's transactions are refused; a tampered one is kept redacted", async () => {
      const { roomId, build, auth, tips } = shared;
      const now = await tips();
      const prev = now.map((t) => t.event_id);
      const depth = Math.max(...now.map((t) => Number(t.depth))) + 1;
      const message = (body: string, sender = '@bob:hs2.test') =>
        build({ type: 'm.room.message', sender, content: { msgtype: 'm.text', body }, prev_events: prev, auth_events: auth(['m.room.create', ''], ['m.room.power_levels', ''], ['m.room.member', sender]), depth });
      // Signed with a key that is not hs2's.
      const forger = generateSigningKey('forged');
      const badSignature = hashAndSignEventWithId(
        { type: 'm.room.message', sender: '@bob:hs2.test', content: { msgtype: 'm.text', body: 'forged' }, prev_events: prev, auth_events: auth(['m.room.create', ''], ['m.room.power_levels', ''], ['m.room.member', '@bob:hs2.test']), depth, room_id: roomId, origin_server_ts: Date.now() } as PduDraft,
        'hs2.test',
        forger,
        getRoomVersion('10')!,
      );
      // Its content changed after signing: the hash no longer matches.
      const tampered = message('original');
      const tamperedPdu = { ...(tampered.pdu as unknown as JsonObject), content: { msgtype: 'm.text', body: 'tampered' } };
      // A user of hs2 who never joined.
      const stranger = message('let me in', '@mallory:hs2.test');
      // A user of another server, sent by hs2.
      const impostor = message('not mine to send', '@carol:hs3.test');
      // A room hs2 has no member in.
      const other = await request(hs1.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', room_version: '10' }, { token: alice.accessToken });
      const otherId = other.body!.room_id as string;
      const otherState = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(otherId)}/state`, undefined, { token: alice.accessToken });
      const otherIds = new Map((otherState.body as unknown as JsonObject[]).map((e) => [e['type'] as string, e['event_id'] as string]));
      const intruder = hashAndSignEventWithId(
        { type: 'm.room.message', sender: '@bob:hs2.test', content: { msgtype: 'm.text', body: 'intruding' }, prev_events: [otherIds.get('m.room.name') ?? otherIds.get('m.room.history_visibility')!], auth_events: [otherIds.get('m.room.create')!, otherIds.get('m.room.power_levels')!], depth: 20, room_id: otherId, origin_server_ts: Date.now() } as PduDraft,
        'hs2.test',
        hs2.server.core.signingKey,
        getRoomVersion('10')!,
      );

      const pdus = [badSignature.pdu, tamperedPdu, stranger.pdu, impostor.pdu, intruder.pdu] as unknown as JsonValue[];
      const sent = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: '/federation/v1/send/forged-1', body: { origin: 'hs2.test', origin_server_ts: Date.now(), pdus } });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      const results = (sent.body as { pdus: Record<string, { error?: string }> }).pdus;
      for (const refused of [stranger.eventId, intruder.eventId]) assert.ok(results[refused]?.error !== undefined, `${refused}: ${JSON.stringify(results)}`);
      // Dropped before they have an id worth answering for, or refused with an error.
      for (const dropped of [badSignature.eventId, impostor.eventId]) assert.ok(results[dropped] === undefined || results[dropped]!.error !== undefined, JSON.stringify(results));

      // None of them is served; the tampered one, if served, has no content.
      const read = async (room: string) => {
        const res = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(room)}/messages?dir=b&limit=20`, undefined, { token: alice.accessToken });
        return res.body!.chunk as JsonObject[];
      };
      const bodies = [...(await read(roomId)), ...(await read(otherId))].map((e) => (e['content'] as JsonObject)['body']);
      for (const body of ['forged', 'tampered', 'original', 'let me in', 'not mine to send', 'intruding']) assert.ok(!bodies.includes(body), `${body} is served`);
    });

    test('hs2 reads the room back from hs1: by id, state, auth chain, backfill, missing events', async () => {
      const remote = new FederationRemoteEvents({ client: client(hs2) });
      const [pdu] = await remote.events('hs1.test', shared.roomId, [shared.messageId]);
      assert.equal((pdu as JsonObject)['type'], 'm.room.message');
      assert.deepEqual((pdu as JsonObject)['content'], { msgtype: 'm.text', body: 'hello from hs2' });
      const ids = await remote.stateIdsAt('hs1.test', shared.roomId, shared.messageId);
      // The state before the message holds Bob's join and the room's creation.
      assert.ok(ids.pduIds.includes(shared.joinId));
      assert.ok(ids.authChainIds.length > 0);
      const back = await remote.backfill('hs1.test', shared.roomId, [shared.messageId], 3);
      assert.deepEqual(back.map((e) => (e as JsonObject)['type']).slice(0, 2), ['m.room.message', 'm.room.member']);
      const missing = await remote.missingEvents('hs1.test', shared.roomId, [shared.joinId], [shared.messageId], 10);
      assert.deepEqual(missing, []);
      const auth = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: `/federation/v1/event_auth/${enc(shared.roomId)}/${enc(shared.messageId)}` });
      assert.equal(auth.status, 200);
      assert.equal(((auth.body as JsonObject)['auth_chain'] as JsonObject[])[0]!['type'], 'm.room.create');
      // Parameters are checked.
      const noEvent = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: `/federation/v1/state_ids/${enc(shared.roomId)}` });
      assert.equal(noEvent.status, 400);
      assert.equal((noEvent.body as JsonObject)['errcode'], 'M_MISSING_PARAM');
    });

    test("once the room's server ACL denies hs2, its PDUs, EDUs and reads are refused", async () => {
      const acl = await request(hs1.baseUrl, 'PUT', `/_chat/client/v3/rooms/${enc(shared.roomId)}/state/m.room.server_acl/`, { allow: ['*'], deny: ['hs2.test'] }, { token: alice.accessToken });
      assert.equal(acl.status, 200);
      const read = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: `/federation/v1/event/${enc(shared.messageId)}` });
      assert.equal(read.status, 403);
      assert.equal((read.body as JsonObject)['errcode'], 'M_FORBIDDEN');
      const tips = await shared.tips();
      const message = shared.build({
        type: 'm.room.message',
        sender: '@bob:hs2.test',
        content: { msgtype: 'm.text', body: 'after the ACL' },
        prev_events: tips.map((t) => t.event_id),
        auth_events: shared.auth(['m.room.create', ''], ['m.room.power_levels', ''], ['m.room.member', '@bob:hs2.test']),
        depth: Math.max(...tips.map((t) => Number(t.depth))) + 1,
      });
      const edus = [{ edu_type: 'm.typing', content: { room_id: shared.roomId, user_id: '@bob:hs2.test', typing: false } }];
      const sent = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: '/federation/v1/send/txn-acl', body: { origin: 'hs2.test', origin_server_ts: Date.now(), pdus: [message.pdu as unknown as JsonValue], edus } });
      assert.equal(sent.status, 200);
      assert.match((sent.body as { pdus: Record<string, { error?: string }> }).pdus[message.eventId]?.error ?? '', /server ACL/);
      const stored = await hs1.server.core.db.selectFrom('events').select('event_id').where('event_id', '=', message.eventId).execute();
      assert.deepEqual(stored, []);
      // Bob still types: the EDU was refused too.
      assert.deepEqual(hs1.server.services.typing.typingIn(shared.roomId), ['@bob:hs2.test']);
    });

    test('a transaction over the limits is refused', async () => {
      const res = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: '/federation/v1/send/txn-big', body: { origin: 'hs2.test', origin_server_ts: 0, pdus: Array.from({ length: 51 }, () => ({})) } });
      assert.equal(res.status, 400);
      assert.equal((res.body as JsonObject)['errcode'], 'M_BAD_JSON');
    });

    test("hs2 joins carol to a room of hs1's through make_join and send_join, then leaves it", async () => {
      const created = await request(hs1.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', room_version: '10' }, { token: alice.accessToken });
      const roomId = created.body!.room_id as string;
      const carol = '@carol:hs2.test';
      const version = getRoomVersion('10')!;
      const key2 = hs2.server.core.signingKey;
      const path = (endpoint: string, id: string) => `/federation/${endpoint}/${enc(roomId)}/${enc(id)}`;
      const joinedMembers = async () => {
        const res = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(roomId)}/joined_members`, undefined, { token: alice.accessToken });
        return Object.keys(res.body!.joined as JsonObject).sort();
      };
      /** The template hs1 made, filled in and signed by hs2. */
      const signTemplate = (template: JsonObject, content: JsonObject = {}) =>
        hashAndSignEventWithId({ ...template, content: { ...(template['content'] as JsonObject), ...content } } as unknown as PduDraft, 'hs2.test', key2, version);

      // A version hs2 does not claim to support is refused with the room's version.
      const old = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: path('v1/make_join', carol), query: { ver: ['1', '2'] } });
      assert.equal(old.status, 400);
      assert.equal((old.body as JsonObject)['errcode'], 'M_INCOMPATIBLE_ROOM_VERSION');
      assert.equal((old.body as JsonObject)['room_version'], '10');

      const made = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: path('v1/make_join', carol), query: { ver: ['9', '10'] } });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      assert.equal((made.body as JsonObject)['room_version'], '10');
      const template = (made.body as JsonObject)['event'] as JsonObject;
      assert.equal(template['sender'], carol);
      const join = signTemplate(template, { displayname: 'Carol of hs2' });
      const sent = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: path('v2/send_join', join.eventId), body: join.pdu as unknown as JsonValue });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      const answer = sent.body as { state: JsonObject[]; auth_chain: JsonObject[] };
      // The state before the join: the room's creation and alice's membership, not carol's.
      const types = answer.state.map((e) => `${e['type'] as string}|${e['state_key'] as string}`);
      assert.ok(types.includes('m.room.create|'));
      assert.ok(types.includes(`m.room.member|${alice.userId}`));
      assert.ok(!types.includes(`m.room.member|${carol}`));
      assert.ok(answer.auth_chain.length > 0);
      assert.deepEqual(await joinedMembers(), [alice.userId, carol].sort());
      // Sent again through v1: the same answer, wrapped as v1 wraps it.
      const v1 = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: path('v1/send_join', join.eventId), body: join.pdu as unknown as JsonValue });
      assert.equal(v1.status, 200, JSON.stringify(v1.body));
      const [code, again] = v1.body as [number, { state: JsonObject[] }];
      assert.equal(code, 200);
      assert.equal(again.state.length, answer.state.length);

      // And out again.
      const makeLeave = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: path('v1/make_leave', carol) });
      assert.equal(makeLeave.status, 200, JSON.stringify(makeLeave.body));
      const leave = signTemplate((makeLeave.body as JsonObject)['event'] as JsonObject);
      const left = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: path('v2/send_leave', leave.eventId), body: leave.pdu as unknown as JsonValue });
      assert.equal(left.status, 200, JSON.stringify(left.body));
      assert.deepEqual(left.body, {});
      assert.deepEqual(await joinedMembers(), [alice.userId]);
      const leftV1 = await client(hs2).request({ destination: 'hs1.test', method: 'PUT', path: path('v1/send_leave', leave.eventId), body: leave.pdu as unknown as JsonValue });
      assert.deepEqual(leftV1.body, [200, {}]);
    });

    test("an admin's federation check of the other server passes every step", async () => {
      const admin = await hs1.registerUser('checker', 'checker-password', { admin: true });
      const res = await request(hs1.baseUrl, 'GET', '/_synapse/admin/v1/federation/check/hs2.test', undefined, { token: admin.accessToken });
      assert.equal(res.status, 200);
      const report = res.body as { ok: boolean; steps: { name: string; ok: boolean; error?: string }[] };
      assert.equal(report.ok, true, JSON.stringify(report.steps.filter((s) => !s.ok)));
      assert.ok(report.steps.some((s) => s.name === 'keys' && s.ok));
      // hs2, asked as a notary for hs1's key, had to reach hs1 for it.
      const reachBack = report.steps.find((s) => s.name === 'reach back') as { ok: boolean; detail: string; skipped?: boolean } | undefined;
      assert.equal(reachBack?.ok, true);
      assert.equal(reachBack?.skipped, undefined);
      assert.match(reachBack!.detail, /holds this server's key ed25519:/);
      const refused = await request(hs1.baseUrl, 'GET', '/_synapse/admin/v1/federation/check/hs2.test', undefined, { token: alice.accessToken });
      assert.equal(refused.status, 403);
    });

    test("hs2 reads hs1's users' device lists and keys, claims a one-time key and lists its public rooms", async () => {
      const upload = (b: unknown) => request(hs1.baseUrl, 'POST', '/_chat/client/v3/keys/upload', b, { token: alice.accessToken });
      const deviceKeys = { user_id: alice.userId, device_id: alice.deviceId, algorithms: ['m.olm.v1.curve25519-aes-sha2'], keys: { [`curve25519:${alice.deviceId}`]: 'curve' }, signatures: {} };
      const oneTimeKey = { key: 'one-time', signatures: { [alice.userId]: { [`ed25519:${alice.deviceId}`]: 'sig' } } };
      const uploaded = await upload({ device_keys: deviceKeys, one_time_keys: { 'signed_curve25519:A1': oneTimeKey } });
      assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
      const query = await client(hs2).request({
        destination: 'hs1.test',
        method: 'POST',
        path: '/federation/v1/user/keys/query',
        body: { device_keys: { [alice.userId]: [], '@someone:hs2.test': [] } },
      });
      assert.equal(query.status, 200);
      const found = (query.body as { device_keys: Record<string, Record<string, JsonObject>> }).device_keys;
      assert.deepEqual(Object.keys(found), [alice.userId]);
      assert.deepEqual(found[alice.userId]![alice.deviceId]!['keys'], deviceKeys.keys);
      const devices = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: `/federation/v1/user/devices/${enc(alice.userId)}` });
      assert.equal(devices.status, 200);
      const list = devices.body as { user_id: string; stream_id: number; devices: { device_id: string; keys: JsonObject }[] };
      assert.equal(list.user_id, alice.userId);
      assert.equal(typeof list.stream_id, 'number');
      assert.deepEqual(list.devices.map((d) => [d.device_id, d.keys['keys']]), [[alice.deviceId, deviceKeys.keys]]);
      const notOurs = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: `/federation/v1/user/devices/${enc('@someone:hs2.test')}` });
      assert.equal(notOurs.status, 400);
      const claim = await client(hs2).request({
        destination: 'hs1.test',
        method: 'POST',
        path: '/federation/v1/user/keys/claim',
        body: { one_time_keys: { [alice.userId]: { [alice.deviceId]: 'signed_curve25519' } } },
      });
      assert.deepEqual(claim.body, { one_time_keys: { [alice.userId]: { [alice.deviceId]: { 'signed_curve25519:A1': oneTimeKey } } } });

      const listed = await request(hs1.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', visibility: 'public', name: 'The lobby' }, { token: alice.accessToken });
      const lobby = listed.body!.room_id as string;
      const get = await client(hs2).request({ destination: 'hs1.test', method: 'GET', path: '/federation/v1/publicRooms', query: { limit: 10 } });
      assert.equal(get.status, 200);
      assert.ok(((get.body as { chunk: JsonObject[] }).chunk).some((r) => r['room_id'] === lobby && r['name'] === 'The lobby'));
      const post = await client(hs2).request({ destination: 'hs1.test', method: 'POST', path: '/federation/v1/publicRooms', body: { limit: 10, filter: { generic_search_term: 'lobby' } } });
      assert.deepEqual(((post.body as { chunk: JsonObject[] }).chunk).map((r) => r['room_id']), [lobby]);
    });

    test("alice on hs1 sees a user's profile and a room alias of hs2's, asked of hs2", async () => {
      const dora = await hs2.registerUser('dora', 'dora-password');
      await request(hs2.baseUrl, 'PUT', `/_chat/client/v3/profile/${enc(dora.userId)}/displayname`, { displayname: 'Dora of hs2' }, { token: dora.accessToken });
      const room = await request(hs2.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', room_alias_name: 'doras' }, { token: dora.accessToken });
      assert.equal(room.status, 200, JSON.stringify(room.body));

      const profile = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/profile/${enc(dora.userId)}`, undefined, { token: alice.accessToken });
      assert.equal(profile.status, 200);
      assert.equal(profile.body!.displayname, 'Dora of hs2');
      const name = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/profile/${enc(dora.userId)}/displayname`, undefined, { token: alice.accessToken });
      assert.deepEqual(name.body, { displayname: 'Dora of hs2' });
      const nobody = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/profile/${enc('@nobody:hs2.test')}`, undefined, { token: alice.accessToken });
      assert.equal(nobody.status, 404);
      const unreachable = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/profile/${enc('@x:nowhere.test')}`, undefined, { token: alice.accessToken });
      assert.equal(unreachable.status, 502);
      assert.equal(unreachable.body!.error, 'Could not reach nowhere.test for the profile');

      const alias = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/directory/room/${enc('#doras:hs2.test')}`, undefined, { token: alice.accessToken });
      assert.equal(alias.status, 200);
      assert.deepEqual(alias.body, { room_id: room.body!.room_id, servers: ['hs2.test'] });
      const unknown = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/directory/room/${enc('#nothing:hs2.test')}`, undefined, { token: alice.accessToken });
      assert.equal(unknown.status, 404);
    });
  });
}
