// Checks 1–3 on received PDUs, in every room version: PDUs signed by a stand-in remote server (a
// local key pair) pass; malformed or oversize ones, and ones without the signatures their version
// requires, are dropped with a reason naming what failed; a content-hash mismatch gives the
// redacted event.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { MAX_PDU_BYTES, type Pdu } from '../../src/protocol/events.js';
import { hashAndSignEvent, hashAndSignEventWithId, type PduDraft } from '../../src/protocol/hashes.js';
import { eventIdFromReferenceHash } from '../../src/protocol/ids/event-id.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { redactEvent } from '../../src/protocol/redaction.js';
import { roomVersions, type RoomVersion } from '../../src/protocol/room-versions.js';
import { generateSigningKey, signingKeyFromSeed, type SigningKey } from '../../src/protocol/signing.js';
import { StaticKeyRing, type FoundKeys, type KeyRequest, type KeyRing } from '../../src/rooms/input/key-ring.js';
import { checkReceivedPdu, checkReceivedPdus, type PduCheckResult } from '../../src/rooms/input/pdu-checks.js';

const REMOTE = 'remote.test';
const OTHER = 'other.test';
const TS = 1_700_000_000_000;
const FOREVER = Number.MAX_SAFE_INTEGER;

const remoteKey = signingKeyFromSeed('ed25519:r1', new Uint8Array(32).fill(1));
const otherKey = signingKeyFromSeed('ed25519:o1', new Uint8Array(32).fill(2));
/** Same key id as remoteKey, different key: signatures with it are wrong. */
const impostorKey = signingKeyFromSeed('ed25519:r1', new Uint8Array(32).fill(3));

function ringWith(remoteValidUntil = FOREVER): StaticKeyRing {
  return new StaticKeyRing()
    .add(REMOTE, remoteKey.keyId, { publicKey: remoteKey.publicKey, validUntilTs: remoteValidUntil })
    .add(OTHER, otherKey.keyId, { publicKey: otherKey.publicKey, validUntilTs: FOREVER });
}
const ring = ringWith();

const versions = Object.values(roomVersions);
const keysOf = { [REMOTE]: remoteKey, [OTHER]: otherKey } as Record<string, SigningKey>;

/** An event id in the version's format, distinct per seed. */
function idFor(version: RoomVersion, seed: string): string {
  if (version.eventIdFormat === 'v1') return `$${seed}:${REMOTE}`;
  return eventIdFromReferenceHash(createHash('sha256').update(seed).digest(), version.eventIdFormat);
}

function refsFor(version: RoomVersion, seeds: string[]): PduDraft['prev_events'] {
  if (version.eventIdFormat !== 'v1') return seeds.map((s) => idFor(version, s));
  return seeds.map((s): [string, { sha256: string }] => [idFor(version, s), { sha256: 'aGFzaA' }]);
}

/** The room of these PDUs: `!room:remote.test`, or from v12 a create event's id with `!`. */
function roomIdFor(version: RoomVersion): string {
  return version.createEventRoomId ? '!' + idFor(version, 'create').slice(1) : `!room:${REMOTE}`;
}

/** A message PDU of `version` from @alice:remote.test, with `extra` fields on top. */
function draft(version: RoomVersion, extra: Record<string, unknown> = {}): PduDraft {
  return {
    ...(version.eventIdFormat === 'v1' ? { event_id: `$ev1:${REMOTE}` } : {}),
    room_id: roomIdFor(version),
    sender: `@alice:${REMOTE}`,
    type: 'm.room.message',
    content: { msgtype: 'm.text', body: 'hello' },
    origin_server_ts: TS,
    depth: 7,
    prev_events: refsFor(version, ['p1']),
    auth_events: refsFor(version, ['a1', 'a2', 'a3']),
    ...extra,
  } as PduDraft;
}

/** `d` signed by each of `servers` in turn (their keys in `keysOf` unless given). */
function signed(version: RoomVersion, d: PduDraft, servers: string[] = [REMOTE], keys = keysOf): Pdu {
  let pdu = d as Pdu;
  for (const s of servers) pdu = hashAndSignEvent(pdu, s, keys[s]!, version);
  return pdu;
}

/** A deep copy, safe to mutate. */
function copy<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

function assertDropped(result: PduCheckResult, field: string, label: string): void {
  assert.equal(result.ok, false, `${label}: expected the PDU to be dropped`);
  if (!result.ok) assert.ok(result.reason.startsWith(`${field}`), `${label}: reason "${result.reason}" should name ${field}`);
}

function assertAccepted(result: PduCheckResult, label: string): asserts result is Extract<PduCheckResult, { ok: true }> {
  assert.ok(result.ok, `${label}: expected acceptance, got "${result.ok ? '' : result.reason}"`);
}

/** Mutations that break the event format: the field the reason must name, and the change. */
function malformations(version: RoomVersion): [string, string, (e: JsonObject) => void][] {
  const longId = (sigil: string) => `${sigil}${'x'.repeat(256 - 2 - REMOTE.length)}:${REMOTE}`;
  const list: [string, string, (e: JsonObject) => void][] = [
    ['room_id', 'missing', (e) => delete e.room_id],
    ['room_id', 'a number', (e) => (e.room_id = 42)],
    ['room_id', 'no sigil', (e) => (e.room_id = `room:${REMOTE}`)],
    ['room_id', '256 bytes', (e) => (e.room_id = longId('!'))],
    ['sender', 'missing', (e) => delete e.sender],
    ['sender', 'null', (e) => (e.sender = null)],
    ['sender', 'no server', (e) => (e.sender = '@alice')],
    ['sender', '256 bytes', (e) => (e.sender = longId('@'))],
    ['type', 'missing', (e) => delete e.type],
    ['type', 'a number', (e) => (e.type = 7)],
    ['type', '256 bytes', (e) => (e.type = 't'.repeat(256))],
    ['type', '256 bytes of multi-byte characters', (e) => (e.type = 'é'.repeat(128))],
    ['state_key', 'a number', (e) => (e.state_key = 5)],
    ['state_key', 'null', (e) => (e.state_key = null)],
    ['state_key', '256 bytes', (e) => (e.state_key = 's'.repeat(256))],
    ['content', 'missing', (e) => delete e.content],
    ['content', 'a string', (e) => (e.content = 'hello')],
    ['content', 'an array', (e) => (e.content = [])],
    ['origin_server_ts', 'missing', (e) => delete e.origin_server_ts],
    ['origin_server_ts', 'a float', (e) => (e.origin_server_ts = 1.5)],
    ['origin_server_ts', 'a string', (e) => (e.origin_server_ts = String(TS))],
    ['depth', 'missing', (e) => delete e.depth],
    ['depth', 'negative', (e) => (e.depth = -1)],
    ['depth', 'a float', (e) => (e.depth = 2.5)],
    ['depth', 'a string', (e) => (e.depth = '7')],
    ['prev_events', 'missing', (e) => delete e.prev_events],
    ['prev_events', 'an object', (e) => (e.prev_events = {})],
    ['prev_events', '21 entries', (e) => (e.prev_events = refsFor(version, Array.from({ length: 21 }, (_, i) => `p${i}`)) as never)],
    ['auth_events', 'missing', (e) => delete e.auth_events],
    ['auth_events', '11 entries', (e) => (e.auth_events = refsFor(version, Array.from({ length: 11 }, (_, i) => `a${i}`)) as never)],
    ['hashes', 'missing', (e) => delete e.hashes],
    ['hashes', 'sha256 not a string', (e) => (e.hashes = { sha256: 5 })],
    ['signatures', 'missing', (e) => delete e.signatures],
    ['signatures', 'a string', (e) => (e.signatures = 'sig')],
    ['signatures', 'a server mapped to a string', (e) => (e.signatures = { [REMOTE]: 'sig' })],
    ['signatures', 'a signature that is not a string', (e) => (e.signatures = { [REMOTE]: { 'ed25519:r1': 1 } })],
  ];
  if (version.eventIdFormat === 'v1') {
    list.push(
      ['event_id', 'missing', (e) => delete e.event_id],
      ['event_id', 'no server', (e) => (e.event_id = '$abc')],
      ['event_id', 'a bad server name', (e) => (e.event_id = '$abc:bad host')],
      ['event_id', '256 bytes', (e) => (e.event_id = longId('$'))],
      ['prev_events', 'a plain id (v3+ shape)', (e) => (e.prev_events = ['$p:remote.test'])],
      ['prev_events', 'a pair without a hash', (e) => (e.prev_events = [['$p:remote.test']])],
      ['prev_events', 'a 256-byte id', (e) => (e.prev_events = [[longId('$'), { sha256: 'aGFzaA' }]])],
      ['auth_events', 'a hash without sha256', (e) => (e.auth_events = [['$a:remote.test', {}]])],
    );
  } else {
    list.push(
      ['prev_events', 'a pair (v1 shape)', (e) => (e.prev_events = [[idFor(version, 'p'), { sha256: 'aGFzaA' }]])],
      ['prev_events', 'a server-named id', (e) => (e.prev_events = ['$p:remote.test'])],
      ['auth_events', 'an id in the other base64 alphabet', (e) => (e.auth_events = [version.eventIdFormat === 'v3' ? '$' + '_'.repeat(43) : '$' + '/'.repeat(43)])],
    );
  }
  if (version.strictCanonicalJson) {
    list.push(
      ['depth', 'beyond 2^53 − 1', (e) => (e.depth = 2 ** 53)],
      ['origin_server_ts', 'beyond 2^53 − 1', (e) => (e.origin_server_ts = 2 ** 60)],
      ['event', 'a float in content', (e) => ((e.content as JsonObject).n = 1.5)],
    );
  } else {
    list.push(['depth', 'beyond 2^63', (e) => (e.depth = 2 ** 64)]);
  }
  // A redaction names its target at the top level before v11, in content from v11.
  if (version.updatedRedactionRules) {
    list.push(['content.redacts', 'a number in a redaction', (e) => ((e.type = 'm.room.redaction'), ((e.content as JsonObject).redacts = 5))]);
  } else {
    list.push(['redacts', 'a number in a redaction', (e) => ((e.type = 'm.room.redaction'), (e.redacts = 5))]);
  }
  if (version.restrictedJoinRule) {
    list.push([
      'content.join_authorised_via_users_server',
      'not a user id in a join',
      (e) => ((e.type = 'm.room.member'), (e.state_key = `@alice:${REMOTE}`), (e.content = { membership: 'join', join_authorised_via_users_server: 'admin' })),
    ]);
  }
  return list;
}

for (const version of versions) {
  const v = `v${version.id}`;

  test(`${v}: a valid PDU passes with its event id, unredacted`, async () => {
    const { pdu, eventId } = hashAndSignEventWithId(draft(version, { unsigned: { age: 12, secret: 'x' } }), REMOTE, remoteKey, version);
    const result = await checkReceivedPdu(copy(pdu), version, ring);
    assertAccepted(result, v);
    assert.equal(result.eventId, eventId);
    assert.equal(result.redacted, false);
    assert.equal(result.event.event_id, eventId);
    assert.deepEqual(result.event.content, { msgtype: 'm.text', body: 'hello' });
    assert.deepEqual(result.event.prev_events, [idFor(version, 'p1')]);
    // Unsigned data is nobody's signature: only `age` survives.
    assert.deepEqual(result.pdu.unsigned, { age: 12 });
    if (version.eventIdFormat === 'v1') assert.equal(eventId, `$ev1:${REMOTE}`);
    else assert.match(eventId, /^\$[A-Za-z0-9+/_-]{43}$/);
  });

  test(`${v}: each malformed field drops the PDU with a reason naming it`, async () => {
    const base = signed(version, draft(version));
    for (const [field, label, mutate] of malformations(version)) {
      const e = copy(base) as unknown as JsonObject;
      mutate(e);
      assertDropped(await checkReceivedPdu(e, version, ring), field, `${v} ${field} ${label}`);
    }
    // Not an object at all.
    for (const json of [null, 'pdu', 42, [base]]) assertDropped(await checkReceivedPdu(json, version, ring), 'event', `${v} ${JSON.stringify(json)?.slice(0, 20)}`);
  });

  test(`${v}: size limits: 255-byte fields pass, larger events and fields are dropped`, async () => {
    const at255 = draft(version, { type: 't'.repeat(255), state_key: 'é'.repeat(127) + 's' });
    assertAccepted(await checkReceivedPdu(signed(version, at255), version, ring), `${v} 255-byte type and state key`);
    const sender255 = `@${'a'.repeat(255 - 2 - REMOTE.length)}:${REMOTE}`;
    assertAccepted(await checkReceivedPdu(signed(version, draft(version, { sender: sender255 })), version, ring), `${v} 255-byte sender`);

    const big = signed(version, draft(version, { content: { msgtype: 'm.text', body: 'x'.repeat(MAX_PDU_BYTES) } }));
    assertDropped(await checkReceivedPdu(big, version, ring), 'event', `${v} oversize event`);
    // Right at the limit the event passes; one byte more and it is dropped.
    const probe = signed(version, draft(version, { content: { msgtype: 'm.text', body: '' } }));
    const room = MAX_PDU_BYTES - Buffer.byteLength(JSON.stringify(probe));
    const exact = signed(version, draft(version, { content: { msgtype: 'm.text', body: 'x'.repeat(room) } }));
    assert.equal(Buffer.byteLength(JSON.stringify(exact)), MAX_PDU_BYTES);
    assertAccepted(await checkReceivedPdu(exact, version, ring), `${v} event of exactly ${MAX_PDU_BYTES} bytes`);
    const over = signed(version, draft(version, { content: { msgtype: 'm.text', body: 'x'.repeat(room + 1) } }));
    assertDropped(await checkReceivedPdu(over, version, ring), 'event', `${v} event one byte over`);

    const longSender = `@${'a'.repeat(256 - 2 - REMOTE.length)}:${REMOTE}`;
    assertDropped(await checkReceivedPdu(signed(version, draft(version, { sender: longSender })), version, ring), 'sender', `${v} 256-byte sender`);
    assertDropped(await checkReceivedPdu(signed(version, draft(version, { state_key: 's'.repeat(256) })), version, ring), 'state_key', `${v} 256-byte state key`);
  });

  test(`${v}: signatures: the sender's server must sign, with a key the ring knows`, async () => {
    const d = draft(version);
    assertDropped(await checkReceivedPdu(signed(version, d, [OTHER]), version, ring), 'signatures', `${v} only another server signed`);
    const unsignedPdu = { ...signed(version, d), signatures: {} };
    assertDropped(await checkReceivedPdu(unsignedPdu, version, ring), 'signatures', `${v} no signatures`);
    const wrong = signed(version, d, [REMOTE], { [REMOTE]: impostorKey });
    const wrongResult = await checkReceivedPdu(wrong, version, ring);
    assertDropped(wrongResult, 'signatures', `${v} wrong key`);
    assert.match((wrongResult as { reason: string }).reason, /remote\.test/);
    assertDropped(await checkReceivedPdu(signed(version, d), version, new StaticKeyRing()), 'signatures', `${v} unknown key`);
    // A signature from an unknown key beside a good one does not matter.
    const extra = signed(version, d, [REMOTE, REMOTE], { [REMOTE]: remoteKey });
    const alsoUnknown = signed(version, extra, [REMOTE], { [REMOTE]: generateSigningKey() });
    assertAccepted(await checkReceivedPdu(alsoUnknown, version, ring), `${v} a known and an unknown key`);
    // Tampering with what the signature covers.
    assertDropped(await checkReceivedPdu({ ...signed(version, d), depth: 8 }, version, ring), 'signatures', `${v} tampered depth`);
  });

  test(`${v}: a key that expired before origin_server_ts ${version.enforceKeyValidity ? 'drops' : 'still verifies'} the PDU`, async () => {
    const pdu = signed(version, draft(version));
    const expired = await checkReceivedPdu(pdu, version, ringWith(TS - 1));
    if (version.enforceKeyValidity) assertDropped(expired, 'signatures', `${v} expired key`);
    else assertAccepted(expired, `${v} expired key`);
    // Valid up to the event's own timestamp is enough (an old key's expired_ts alike).
    assertAccepted(await checkReceivedPdu(pdu, version, ringWith(TS)), `${v} key valid until origin_server_ts`);
  });

  test(`${v}: the key ring is asked for the keys of the required servers, valid at ${version.enforceKeyValidity ? 'origin_server_ts' : 'any time'}`, async () => {
    const asked: KeyRequest[][] = [];
    const counting: KeyRing = {
      verifyKeys: (requests) => {
        asked.push([...requests]);
        return ring.verifyKeys(requests);
      },
    };
    const pdu = signed(version, draft(version), [REMOTE, OTHER]);
    assertAccepted(await checkReceivedPdu(pdu, version, counting), v);
    // other.test signed too, but nothing requires its signature: its key is not asked for.
    assert.deepEqual(asked, [[{ serverName: REMOTE, keyId: 'ed25519:r1', validAt: version.enforceKeyValidity ? TS : 0 }]]);
  });

  test(`${v}: restricted joins ${version.restrictedJoinRule ? 'need' : 'do not need'} the authorising server's signature`, async () => {
    const join = draft(version, {
      type: 'm.room.member',
      sender: `@bob:${REMOTE}`,
      state_key: `@bob:${REMOTE}`,
      content: { membership: 'join', join_authorised_via_users_server: `@admin:${OTHER}` },
    });
    const senderOnly = await checkReceivedPdu(signed(version, join), version, ring);
    if (version.restrictedJoinRule) {
      assertDropped(senderOnly, 'signatures', `${v} join without the authorising server`);
      assert.match((senderOnly as { reason: string }).reason, /other\.test/);
    } else {
      assertAccepted(senderOnly, `${v} join naming an authoriser`);
    }
    assertAccepted(await checkReceivedPdu(signed(version, join, [REMOTE, OTHER]), version, ring), `${v} join signed by both`);
  });

  test(`${v}: a content-hash mismatch gives the redacted event`, async () => {
    const cases: [string, PduDraft, (r: Extract<PduCheckResult, { ok: true }>) => void][] = [
      ['message', draft(version), (r) => assert.deepEqual(r.event.content, {})],
      [
        'join rules',
        draft(version, { type: 'm.room.join_rules', state_key: '', content: { join_rule: 'restricted', allow: [{ type: 'm.room_membership', room_id: '!x:a' }], note: 'n' } }),
        (r) => assert.deepEqual(Object.keys(r.event.content).sort(), version.restrictedJoinRule ? ['allow', 'join_rule'] : ['join_rule']),
      ],
      [
        'member',
        draft(version, { type: 'm.room.member', state_key: `@alice:${REMOTE}`, content: { membership: 'join', displayname: 'Alice', join_authorised_via_users_server: `@alice:${REMOTE}` } }),
        (r) => assert.deepEqual(r.event.content, version.restrictedJoinRuleFix ? { membership: 'join', join_authorised_via_users_server: `@alice:${REMOTE}` } : { membership: 'join' }),
      ],
      [
        'create',
        draft(version, { type: 'm.room.create', state_key: '', content: { creator: `@alice:${REMOTE}`, room_version: version.id, 'm.federate': true } }),
        (r) => assert.deepEqual(Object.keys(r.event.content).sort(), version.updatedRedactionRules ? ['creator', 'm.federate', 'room_version'] : ['creator']),
      ],
      [
        'redaction',
        draft(version, {
          type: 'm.room.redaction',
          content: { reason: 'spam', ...(version.updatedRedactionRules ? { redacts: idFor(version, 'target') } : {}) },
          ...(version.updatedRedactionRules ? {} : { redacts: idFor(version, 'target') }),
        }),
        // v11 keeps content.redacts; before, the top-level `redacts` goes with the redaction.
        (r) => assert.equal(r.event.redacts, version.updatedRedactionRules ? idFor(version, 'target') : undefined),
      ],
    ];
    for (const [label, d, check] of cases) {
      const { pdu, eventId } = hashAndSignEventWithId(d, REMOTE, remoteKey, version);
      // A field the hash covers but the signature does not: the content, or an extra top-level key.
      const tampered = copy(pdu) as unknown as JsonObject;
      tampered.x_extra = 'added on the way';
      const result = await checkReceivedPdu(tampered, version, ring);
      assertAccepted(result, `${v} ${label}`);
      assert.equal(result.redacted, true, `${v} ${label}`);
      assert.equal(result.eventId, eventId, `${v} ${label}: the redacted event keeps its id`);
      assert.equal('x_extra' in result.pdu, false);
      assert.deepEqual(result.pdu, redactEvent(pdu, version));
      check(result);
    }
    // Changed content on a message: same outcome.
    const message = signed(version, draft(version));
    const changed = { ...copy(message), content: { msgtype: 'm.text', body: 'changed' } };
    const result = await checkReceivedPdu(changed, version, ring);
    assertAccepted(result, `${v} changed body`);
    assert.equal(result.redacted, true);
    assert.deepEqual(result.event.content, {});
    // The signature covers `hashes`: a changed hash breaks the signature before the hash check.
    const badHash = { ...copy(message), hashes: { sha256: '!!' } };
    assertDropped(await checkReceivedPdu(badHash, version, ring), 'signatures', `${v} changed hash`);
  });
}

test('v1–v2: the server that named the event id must sign too', async () => {
  for (const version of [roomVersions['1']!, roomVersions['2']!]) {
    const d = draft(version, { event_id: `$ev:${OTHER}` });
    const result = await checkReceivedPdu(signed(version, d), version, ring);
    assertDropped(result, 'signatures', `v${version.id} event id from another server`);
    assert.match((result as { reason: string }).reason, /other\.test/);
    const both = await checkReceivedPdu(signed(version, d, [REMOTE, OTHER]), version, ring);
    assertAccepted(both, `v${version.id} signed by both`);
    assert.equal(both.eventId, `$ev:${OTHER}`);
  }
});

test("an invite from a third-party invite needs no signature from the sender's server (its `signed` block is checked by the auth rules)", async () => {
  for (const version of versions) {
    const invite = draft(version, {
      type: 'm.room.member',
      state_key: `@carol:${OTHER}`,
      content: { membership: 'invite', third_party_invite: { display_name: 'c…', signed: { mxid: `@carol:${OTHER}`, token: 't' } } },
    });
    // Relayed and signed by another server than the sender's.
    const result = await checkReceivedPdu(signed(version, invite, [OTHER]), version, ring);
    // v1–v2 still need the server that named the event id (remote.test here).
    if (version.eventIdFormat === 'v1') assertDropped(result, 'signatures', `v${version.id}`);
    else assertAccepted(result, `v${version.id}`);
  }
});

test('v3+: an event_id the sender added is ignored, the id is the reference hash', async () => {
  for (const version of versions.filter((x) => x.eventIdFormat !== 'v1')) {
    const { pdu, eventId } = hashAndSignEventWithId(draft(version, { event_id: `$claimed:${REMOTE}` }), REMOTE, remoteKey, version);
    const result = await checkReceivedPdu(pdu, version, ring);
    assertAccepted(result, `v${version.id}`);
    assert.equal(result.eventId, eventId);
    assert.notEqual(result.eventId, `$claimed:${REMOTE}`);
  }
});

test('redacts in the other place than the version reads it is ignored', async () => {
  for (const version of versions) {
    const misplaced = version.updatedRedactionRules
      ? draft(version, { type: 'm.room.redaction', redacts: 5, content: {} })
      : draft(version, { type: 'm.room.redaction', content: { redacts: 5 } });
    const result = await checkReceivedPdu(signed(version, misplaced), version, ring);
    assertAccepted(result, `v${version.id}`);
    assert.equal(result.event.redacts, undefined);
  }
});

test('the room and the origin of a membership handshake can be required', async () => {
  const version = roomVersions['10']!;
  const pdu = signed(version, draft(version));
  assertAccepted(await checkReceivedPdu(pdu, version, ring, { roomId: `!room:${REMOTE}`, origin: REMOTE }), 'matching');
  assertDropped(await checkReceivedPdu(pdu, version, ring, { roomId: `!other:${REMOTE}` }), 'room_id', 'another room');
  assertDropped(await checkReceivedPdu(pdu, version, ring, { origin: OTHER }), 'sender', 'another origin');
});

test('a batch asks the key ring once, merges requests, and keeps the order of its PDUs', async () => {
  const v10 = roomVersions['10']!;
  const v4 = roomVersions['4']!;
  const asked: KeyRequest[][] = [];
  const counting: KeyRing = {
    verifyKeys: (requests) => {
      asked.push([...requests]);
      return ring.verifyKeys(requests);
    },
  };
  const later = signed(v10, draft(v10, { origin_server_ts: TS + 5 }));
  const results = await checkReceivedPdus(
    [
      { json: signed(v10, draft(v10)), version: v10 },
      { json: { nonsense: true }, version: v10 },
      { json: later, version: v10 },
      { json: signed(v4, draft(v4)), version: v4 },
      { json: signed(v10, draft(v10), [OTHER]), version: v10 },
    ],
    counting,
  );
  assert.deepEqual(results.map((r) => r.ok), [true, false, true, true, false]);
  assert.equal(asked.length, 1);
  // One request per key, at the latest time any PDU needs it.
  assert.deepEqual(asked[0], [{ serverName: REMOTE, keyId: 'ed25519:r1', validAt: TS + 5 }]);
  // Nothing to verify: no call at all.
  asked.length = 0;
  await checkReceivedPdus([{ json: 1, version: v10 }], counting);
  assert.equal(asked.length, 0);
});

test('a key ring that fails drops the PDUs that needed it, without throwing', async () => {
  const version = roomVersions['10']!;
  const failing: KeyRing = { verifyKeys: (): Promise<FoundKeys> => Promise.reject(new Error('notary unreachable')) };
  const [a, b] = await checkReceivedPdus(
    [
      { json: signed(version, draft(version)), version },
      { json: {}, version },
    ],
    failing,
  );
  assertDropped(a!, 'signatures', 'failing ring');
  assert.match((a as { reason: string }).reason, /notary unreachable/);
  assertDropped(b!, 'room_id', 'malformed, before any key');
});

test('random mutations of a valid PDU never throw: always accepted or dropped with a reason', async () => {
  const topKeys = ['event_id', 'room_id', 'sender', 'type', 'state_key', 'content', 'origin_server_ts', 'depth', 'prev_events', 'auth_events', 'hashes', 'signatures', 'unsigned', 'redacts', 'origin', 'x'];
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('set' as const), key: fc.constantFrom(...topKeys), value: fc.jsonValue({ maxDepth: 3 }) }),
    fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...topKeys) }),
    fc.record({ kind: fc.constant('content' as const), key: fc.constantFrom('body', 'membership', 'redacts', 'join_authorised_via_users_server', 'x'), value: fc.jsonValue({ maxDepth: 2 }) }),
    fc.record({ kind: fc.constant('nested' as const), key: fc.constantFrom('prev_events', 'auth_events', 'signatures', 'hashes'), value: fc.jsonValue({ maxDepth: 2 }) }),
    fc.record({ kind: fc.constant('number' as const), key: fc.constantFrom('depth', 'origin_server_ts'), value: fc.double() }),
  );
  const bases = new Map(versions.map((version) => {
    const member = draft(version, { type: 'm.room.member', state_key: `@alice:${REMOTE}`, content: { membership: 'join', join_authorised_via_users_server: `@admin:${OTHER}` } });
    return [version.id, [signed(version, draft(version)), signed(version, member, [REMOTE, OTHER])]] as const;
  }));
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...versions), fc.integer({ min: 0, max: 1 }), fc.array(mutation, { minLength: 1, maxLength: 4 }), async (version, which, mutations) => {
      type Loose = Record<string, unknown>;
      const e = copy(bases.get(version.id)![which]!) as unknown as Loose;
      for (const m of mutations) {
        if (m.kind === 'set') e[m.key] = m.value;
        else if (m.kind === 'delete') delete e[m.key];
        else if (m.kind === 'number') e[m.key] = m.value;
        else if (m.kind === 'content') {
          if (typeof e.content === 'object' && e.content !== null && !Array.isArray(e.content)) (e.content as Loose)[m.key] = m.value;
        } else {
          const target = e[m.key];
          if (Array.isArray(target)) (target as unknown[])[0] = m.value;
          else if (typeof target === 'object' && target !== null) (target as Loose)[REMOTE] = m.value;
        }
      }
      const result = await checkReceivedPdu(e, version, ring);
      if (result.ok) {
        assert.equal(typeof result.eventId, 'string');
        assert.equal(result.event.event_id, result.eventId);
      } else {
        assert.equal(typeof result.reason, 'string');
        assert.ok(result.reason.length > 0);
      }
    }),
    { numRuns: 400 },
  );
  // Anything at all, not only JSON.
  await fc.assert(
    fc.asyncProperty(fc.anything(), fc.constantFrom(...versions), async (json, version) => {
      const result = await checkReceivedPdu(json, version, ring);
      assert.equal(typeof result.ok, 'boolean');
    }),
    { numRuns: 200 },
  );
});
