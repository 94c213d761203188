import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authTypesForEvent, checkAuthEventsList } from '../../src/protocol/auth-events.js';
import { encodeBase64 } from '../../src/protocol/base64.js';
import { checkEventAuth } from '../../src/protocol/event-auth.js';
import { checkEventSignatures } from '../../src/protocol/event-signatures.js';
import { stateKey, type RoomEvent, type StateKey } from '../../src/protocol/events.js';
import { checkContentHash, computeEventId, hashAndSignEventWithId, referenceHash, type PduDraft } from '../../src/protocol/hashes.js';
import { roomVersions, type RoomVersion } from '../../src/protocol/room-versions.js';
import { generateSigningKey, verifyJsonSignature } from '../../src/protocol/signing.js';
import { MAX_PDU_BYTES } from '../../src/protocol/events.js';
import { ReferenceStates } from '../support/reference-states.js';
import { RemoteServer, tamper, verifyKeyLookupFor, type GraphEvent, type RoomGraph } from '../support/remote-server.js';

const alice = '@alice:remote.test';
const bob = '@bob:remote2.test';
const carol = '@carol:remote2.test';

const ID_FORMAT: Record<RoomVersion['eventIdFormat'], RegExp> = {
  v1: /^\$[A-Za-z0-9_-]+:remote2?\.test$/,
  v3: /^\$[A-Za-z0-9+/]{43}$/,
  v4: /^\$[A-Za-z0-9_-]{43}$/,
};

function stateEvents(g: RoomGraph, state: ReadonlyMap<StateKey, string>): Map<StateKey, RoomEvent> {
  const out = new Map<StateKey, RoomEvent>();
  for (const [key, id] of state) out.set(key, g.get(id)!.event);
  return out;
}

/** A room of two servers with a fork and its merge, a redaction and (v8+) a restricted join. */
async function buildRoom(versionId: string) {
  const remote1 = new RemoteServer();
  const remote2 = new RemoteServer({ serverName: 'remote2.test' });
  const g = remote1.room({ version: versionId, creator: alice }).addServer(remote2);
  await g.event({ type: 'm.room.topic', sender: alice, stateKey: '', content: { topic: 'first' } });
  await g.event({ type: 'm.room.member', sender: bob, stateKey: bob, content: { membership: 'join' } });
  const fork = g.extremities();
  const left = await g.event({ type: 'm.room.name', sender: alice, stateKey: '', content: { name: 'left' }, prev: fork });
  const said = await g.event({ type: 'm.room.message', sender: bob, content: { msgtype: 'm.text', body: 'hi' }, prev: fork });
  const right = await g.event({ type: 'm.room.topic', sender: alice, stateKey: '', content: { topic: 'right' }, prev: [said.eventId] });
  assert.deepEqual(new Set(g.extremities()), new Set([left.eventId, right.eventId]));
  const merge = await g.event({ type: 'm.room.redaction', sender: alice, redacts: said.eventId, content: { reason: 'spam' } });
  let restricted: GraphEvent | undefined;
  if (roomVersions[versionId]!.restrictedJoinRule) {
    await g.event({
      type: 'm.room.join_rules', sender: alice, stateKey: '',
      content: { join_rule: 'restricted', allow: [{ type: 'm.room_membership', room_id: '!space:remote.test' }] },
    });
    restricted = await g.event({
      type: 'm.room.member', sender: carol, stateKey: carol,
      content: { membership: 'join', join_authorised_via_users_server: alice }, alsoSignedBy: [remote1],
    });
  }
  return { remote1, remote2, g, left, right, said, merge, restricted };
}

for (const versionId of Object.keys(roomVersions)) {
  const version = roomVersions[versionId]!;

  test(`v${versionId}: every PDU is hashed, signed, correctly identified and referenced, and authorized`, async () => {
    const { remote1, remote2, g, left, right, merge, restricted } = await buildRoom(versionId);
    const lookup = verifyKeyLookupFor(remote1, remote2);
    assert.ok(g.pdus().length >= 9);
    for (const { eventId, pdu, event } of g.events()) {
      assert.equal(checkContentHash(pdu, version), true, `content hash of ${pdu.type}`);
      assert.deepEqual(checkEventSignatures(pdu, version, lookup), { ok: true }, `signatures of ${pdu.type}`);
      assert.equal(computeEventId(pdu, version), eventId);
      assert.match(eventId, ID_FORMAT[version.eventIdFormat]);
      assert.equal('event_id' in pdu, version.eventIdFormat === 'v1');
      for (const ref of [...pdu.prev_events, ...pdu.auth_events]) {
        if (version.eventIdFormat === 'v1') {
          assert.ok(Array.isArray(ref));
          const [id, hashes] = ref as [string, { sha256: string }];
          assert.equal(hashes.sha256, encodeBase64(referenceHash(g.get(id)!.pdu, version)));
        } else {
          assert.equal(typeof ref, 'string');
        }
      }
      // auth_events are the selection from the state before, and they and that state authorize it.
      const before = g.stateBefore(eventId);
      const selected = authTypesForEvent(event, version).flatMap((k) => (before.has(k) ? [before.get(k)!] : []));
      assert.deepEqual(new Set(event.auth_events), new Set(selected));
      const authEvents = event.auth_events.map((id) => g.get(id)!.event);
      assert.deepEqual(checkAuthEventsList(event, authEvents, version), { allowed: true });
      assert.deepEqual(checkEventAuth(event, stateEvents(g, before), version), { allowed: true }, `${pdu.type} by ${pdu.sender}`);
      // v12: the create event has no room_id, and the room id is its id.
      if (version.createEventRoomId && pdu.type === 'm.room.create') {
        assert.equal('room_id' in pdu, false);
        assert.equal(g.roomId, '!' + eventId.slice(1));
      }
    }
    // The merge's state before holds both branches.
    const beforeMerge = g.stateBefore(merge.eventId);
    assert.equal(beforeMerge.get(stateKey('m.room.name', '')), left.eventId);
    assert.equal(beforeMerge.get(stateKey('m.room.topic', '')), right.eventId);
    assert.deepEqual(merge.event.prev_events.toSorted(), [left.eventId, right.eventId].sort());
    assert.equal(version.updatedRedactionRules ? merge.pdu.content.redacts : merge.pdu.redacts, merge.event.redacts);
    if (restricted !== undefined) {
      assert.ok(restricted.pdu.signatures['remote.test'] && restricted.pdu.signatures['remote2.test']);
      const unsigned = { ...restricted.pdu, signatures: { 'remote2.test': restricted.pdu.signatures['remote2.test']! } };
      assert.deepEqual(checkEventSignatures(unsigned, version, lookup), { ok: false, reason: 'no valid signature from remote.test' });
    }
    // The independent computation agrees with the graph everywhere.
    const reference = await ReferenceStates.compute(version, g.events().map((e) => e.event));
    assert.deepEqual(reference.rejected, new Map());
    for (const { eventId } of g.events()) assert.deepEqual(reference.stateAfter(eventId), g.stateAfter(eventId));
    assert.deepEqual(await reference.currentState(), await g.currentState());
  });

  test(`v${versionId}: tampered and forged events fail the right check`, async () => {
    const { remote1, remote2, g, said } = await buildRoom(versionId);
    const lookup = verifyKeyLookupFor(remote1, remote2);
    const badSignature = tamper.signature(said.pdu, version, 'remote2.test');
    assert.deepEqual(checkEventSignatures(badSignature, version, lookup), { ok: false, reason: 'no valid signature from remote2.test' });
    assert.equal(checkContentHash(badSignature, version), true);

    const badContent = tamper.content(said.pdu);
    assert.equal(checkContentHash(badContent, version), false);
    assert.deepEqual(checkEventSignatures(badContent, version, lookup), { ok: true });
    assert.equal(computeEventId(badContent, version), said.eventId);

    const unpublished = await g.event({ type: 'm.room.message', sender: alice, content: { body: 'x' }, key: generateSigningKey() });
    assert.deepEqual(checkEventSignatures(unpublished.pdu, version, lookup), { ok: false, reason: 'no valid signature from remote.test' });
    assert.equal(checkContentHash(unpublished.pdu, version), true);

    const oversize = remote2.forge(said.pdu, version, { content: { msgtype: 'm.text', body: 'x'.repeat(MAX_PDU_BYTES) } });
    assert.ok(Buffer.byteLength(JSON.stringify(oversize.pdu)) > MAX_PDU_BYTES);
    assert.deepEqual(checkEventSignatures(oversize.pdu, version, lookup), { ok: true });
    assert.equal(checkContentHash(oversize.pdu, version), true);

    // Wrong field types are signed like anything else: only a format check catches them.
    const wrongTypes = remote2.forge(said.pdu, version, { depth: '7', origin_server_ts: 'now', prev_events: 'none' });
    assert.equal(typeof wrongTypes.pdu.depth, 'string');
    assert.deepEqual(checkEventSignatures(wrongTypes.pdu, version, lookup), { ok: true });
    assert.equal(checkContentHash(wrongTypes.pdu, version), true);

    // A float has no strict canonical form: from v6 the hash cannot hold.
    const float = remote2.forge(said.pdu, version, { content: { msgtype: 'm.text', body: 'x', n: 1.5 } }, { lenient: true });
    assert.equal(checkContentHash(float.pdu, version), !version.strictCanonicalJson);

    // An event the rules deny is built, but the state before rejects it.
    const denied = await g.event({ type: 'm.room.power_levels', sender: bob, stateKey: '', content: { users: { [bob]: 100 } } });
    assert.equal(checkEventAuth(denied.event, stateEvents(g, g.stateBefore(denied.eventId)), version).allowed, false);
    const reference = await ReferenceStates.compute(version, g.events().map((e) => e.event));
    assert.deepEqual([...reference.rejected.keys()], [denied.eventId]);
    assert.equal(reference.stateAfter(denied.eventId).get(stateKey('m.room.power_levels', '')), g.stateBefore(denied.eventId).get(stateKey('m.room.power_levels', '')));
  });
}

test('keys: the key-server answer is signed by every current key; rotated keys verify until they expired (from v5)', async () => {
  let now = 1_000_000;
  const remote = new RemoteServer({ now: () => now });
  const first = remote.signingKey;
  const extra = remote.addKey();
  let keys = remote.keys();
  assert.equal(keys.server_name, 'remote.test');
  assert.deepEqual(Object.keys(keys.verify_keys).sort(), [first.keyId, extra.keyId].sort());
  assert.deepEqual(keys.old_verify_keys, {});
  assert.equal(keys.valid_until_ts, 1_000_000 + 7 * 24 * 3600 * 1000);
  for (const k of [first, extra]) assert.equal(verifyJsonSignature(keys as never, 'remote.test', k.keyId, keys.verify_keys[k.keyId]!.key), true);

  const g4 = remote.room({ version: '4', creator: alice });
  const g5 = remote.room({ version: '5', creator: alice });
  const byExtra = await g5.event({ type: 'm.room.message', sender: alice, content: {}, key: extra });
  assert.equal(checkEventSignatures(byExtra.pdu, roomVersions['5']!, remote.verifyKeyLookup).ok, true);

  now += 1000;
  const expiredTs = now;
  const next = remote.rotateKey(expiredTs);
  keys = remote.keys();
  assert.deepEqual(keys.old_verify_keys[first.keyId], { key: encodeBase64(first.publicKey), expired_ts: expiredTs });
  assert.ok(keys.verify_keys[next.keyId] && !keys.verify_keys[first.keyId]);
  assert.deepEqual(remote.verifyKeyLookup('remote.test', first.keyId), { publicKey: first.publicKey, validUntilTs: expiredTs });
  assert.equal(remote.verifyKeyLookup('other.test', next.keyId), undefined);

  // The old key signed before it expired; an event it signs later counts only before v5.
  for (const g of [g4, g5]) {
    for (const e of g.events()) assert.equal(checkEventSignatures(e.pdu, g.version, remote.verifyKeyLookup).ok, true);
    const late = await g.event({ type: 'm.room.message', sender: alice, content: {}, key: first, ts: expiredTs + 1 });
    assert.equal(checkEventSignatures(late.pdu, g.version, remote.verifyKeyLookup).ok, !g.version.enforceKeyValidity);
    const current = await g.event({ type: 'm.room.message', sender: alice, content: {} });
    assert.equal(current.pdu.signatures['remote.test']![next.keyId] !== undefined, true);
    assert.equal(checkEventSignatures(current.pdu, g.version, remote.verifyKeyLookup).ok, true);
  }
});

for (const versionId of ['1', '10']) {
  test(`v${versionId}: the remote answers for events, missing events and state ids, and withholds on request`, async () => {
    const remote = new RemoteServer();
    const remote2 = new RemoteServer({ serverName: 'remote2.test' });
    const g = remote.room({ version: versionId, creator: alice }).addServer(remote2);
    const chain: string[] = [];
    for (let i = 0; i < 10; i++) chain.push((await g.event({ type: 'm.room.message', sender: alice, content: { body: `${i}` } })).eventId);

    // Events by id: both servers of the graph have them.
    const got = await remote2.getEvents([chain[0]!, '$unknown:remote.test']);
    assert.deepEqual([...got.keys()], [chain[0]]);
    assert.deepEqual(got.get(chain[0]!), g.get(chain[0]!)!.pdu);

    // get_missing_events: between earliest and latest, exclusive, oldest first, the nearest `limit`.
    const ids = (pdus: { event_id?: string }[]) => pdus.map((p) => (p.event_id !== undefined ? p.event_id : computeEventId(p, g.version)));
    assert.deepEqual(ids(await remote.getMissingEvents(g.roomId, [chain[2]!], [chain[9]!], 10)), chain.slice(3, 9));
    assert.deepEqual(ids(await remote.getMissingEvents(g.roomId, [chain[2]!], [chain[9]!], 3)), chain.slice(6, 9));
    const start = g.events()[0]!.eventId;
    assert.equal((await remote.getMissingEvents(g.roomId, [], [chain[0]!], 100)).length, 5);
    assert.deepEqual(ids(await remote.getMissingEvents(g.roomId, [], [chain[0]!], 100))[0], start);

    // state_ids: the state before the event, and that state's auth chain.
    const topic = await g.event({ type: 'm.room.topic', sender: alice, stateKey: '', content: { topic: 't' } });
    const answer = await remote.stateIdsAt(topic.eventId);
    assert.deepEqual(new Set(answer.pdu_ids), new Set(g.stateBefore(topic.eventId).values()));
    assert.ok(!answer.pdu_ids.includes(topic.eventId));
    assert.ok(answer.auth_chain_ids.includes(start));
    assert.ok(answer.auth_chain_ids.every((id) => g.get(id) !== undefined));

    // Withheld events are neither served nor walked through; release brings them back.
    remote.withhold(chain[5]!);
    assert.deepEqual([...(await remote.getEvents([chain[5]!, chain[6]!])).keys()], [chain[6]]);
    assert.deepEqual(ids(await remote.getMissingEvents(g.roomId, [chain[2]!], [chain[9]!], 10)), chain.slice(6, 9));
    await assert.rejects(remote.stateIdsAt(chain[5]!), { errcode: 'M_NOT_FOUND' });
    assert.ok((await remote.stateIdsAt(chain[6]!)).pdu_ids.length > 0);
    remote.release(chain[5]!);
    assert.equal((await remote.getEvents([chain[5]!])).size, 1);

    assert.deepEqual(
      remote.requests.map((r) => r.method),
      ['getMissingEvents', 'getMissingEvents', 'getMissingEvents', 'getMissingEvents', 'stateIdsAt', 'getEvents', 'getMissingEvents', 'stateIdsAt', 'stateIdsAt', 'getEvents'],
    );
    assert.deepEqual(remote2.requests.map((r) => r.method), ['getEvents']);
  });
}

for (const versionId of ['2', '11']) {
  test(`v${versionId}: a PDU built elsewhere joins the graph; later events cite it and the remote serves it`, async () => {
    const remote = new RemoteServer();
    const g = remote.room({ version: versionId, creator: alice });
    const version = g.version;
    // What the server under test would build for its user's join.
    const local = generateSigningKey();
    const dana = '@dana:hs.test';
    const before = await g.currentState();
    const subject = { type: 'm.room.member', sender: dana, state_key: dana, content: { membership: 'join' } };
    const auth = authTypesForEvent(subject, version).flatMap((k) => (before.has(k) ? [before.get(k)!] : []));
    const draft = {
      ...(version.eventIdFormat === 'v1' ? { event_id: '$join:hs.test' } : {}),
      room_id: g.roomId, ...subject, origin_server_ts: 5, depth: g.pdus().length + 1,
      prev_events: g.references(g.extremities()), auth_events: g.references(auth),
    };
    const { pdu, eventId } = hashAndSignEventWithId(draft as PduDraft, 'hs.test', local, version);
    const joined = await g.insert(pdu);
    assert.equal(joined.eventId, eventId);
    assert.deepEqual(g.extremities(), [eventId]);
    assert.equal(g.stateAfter(eventId).get(stateKey('m.room.member', dana)), eventId);
    const reply = await g.event({ type: 'm.room.message', sender: alice, content: { body: 'welcome' } });
    assert.deepEqual(reply.event.prev_events, [eventId]);
    assert.deepEqual((await remote.getEvents([eventId])).get(eventId), pdu);
    const reference = await ReferenceStates.compute(version, g.events().map((e) => e.event));
    assert.deepEqual(reference.rejected, new Map());
    assert.deepEqual(await reference.currentState(), await g.currentState());
  });
}
