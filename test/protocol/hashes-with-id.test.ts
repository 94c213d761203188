// hashAndSignEventWithId gives what hashAndSignEvent, computeEventId and referenceHash give
// separately, for every room version and for drafts with and without signatures and unsigned data.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeBase64, encodeBase64 } from '../../src/protocol/base64.js';
import { HearthError } from '../../src/protocol/errors.js';
import { computeEventId, hashAndSignEvent, hashAndSignEventWithId, referenceHash, verifyEventSignature, type PduDraft } from '../../src/protocol/hashes.js';
import { roomVersions } from '../../src/protocol/room-versions.js';
import { signingKeyFromSeed } from '../../src/protocol/signing.js';

const KEY = signingKeyFromSeed('ed25519:1', decodeBase64('YJDBA9Xnr2sVqXD9Vj7XVUnmFZcZrlw8Md7kMW+3XA1'));
const versionIds = Object.keys(roomVersions);

const text = fc.string({ maxLength: 12 });
const jsonValue = fc.oneof(text, fc.integer({ min: -1000, max: 1000 }), fc.boolean(), fc.constant(null));
const content = fc.dictionary(fc.constantFrom('body', 'msgtype', 'membership', 'name', 'join_rule', 'x', 'ü'), jsonValue);

const draft = fc.record(
  {
    room_id: fc.constant('!room:hs.test'),
    sender: fc.constantFrom('@a:hs.test', '@b:other.test'),
    type: fc.constantFrom('m.room.message', 'm.room.member', 'm.room.join_rules', 'm.room.create', 'x.custom'),
    state_key: fc.constantFrom('', '@a:hs.test'),
    content,
    origin_server_ts: fc.integer({ min: 0, max: 2 ** 42 }),
    depth: fc.integer({ min: 1, max: 10_000 }),
    prev_events: fc.constant(['$prev']),
    auth_events: fc.constant(['$auth1', '$auth2']),
    event_id: fc.constantFrom('$opaque:hs.test', '$x:y'),
    unsigned: fc.record({ age_ts: fc.integer({ min: 0, max: 1000 }) }),
    signatures: fc.constant({ 'other.test': { 'ed25519:a': 'c2lnbmF0dXJl' } }),
  },
  { requiredKeys: ['room_id', 'sender', 'type', 'content', 'origin_server_ts', 'depth', 'prev_events', 'auth_events', 'event_id'] },
);

test('the event, its id and its reference hash match the separate functions in every room version', () => {
  fc.assert(
    fc.property(draft, fc.constantFrom(...versionIds), (d, id) => {
      const version = roomVersions[id]!;
      const input = d as unknown as PduDraft;
      const together = hashAndSignEventWithId(input, 'hs.test', KEY, version);
      const signed = hashAndSignEvent(input, 'hs.test', KEY, version);
      assert.deepEqual(together.pdu, signed);
      assert.equal(together.eventId, computeEventId(signed, version));
      assert.equal(encodeBase64(together.referenceHash), encodeBase64(referenceHash(signed, version)));
      assert.ok(verifyEventSignature(together.pdu, 'hs.test', KEY.keyId, KEY.publicKey, version));
    }),
    { numRuns: 300 },
  );
});

test('a v1-format event keeps the id it was given; an invalid one is refused as before', () => {
  const version = roomVersions['1']!;
  const base = { room_id: '!r:hs', sender: '@a:hs', type: 'm.room.message', content: {}, origin_server_ts: 1, depth: 1, prev_events: [], auth_events: [] };
  const ok = hashAndSignEventWithId({ ...base, event_id: '$abc:hs' } as unknown as PduDraft, 'hs', KEY, version);
  assert.equal(ok.eventId, '$abc:hs');
  assert.throws(
    () => hashAndSignEventWithId({ ...base, event_id: 'nope' } as unknown as PduDraft, 'hs', KEY, version),
    (e: unknown) => e instanceof HearthError && e.errcode === 'M_BAD_JSON',
  );
});

test('the input draft is not changed', () => {
  const d = { room_id: '!r:hs', sender: '@a:hs', type: 'm.room.message', content: { body: 'x' }, origin_server_ts: 1, depth: 1, prev_events: [], auth_events: [] };
  const copy = structuredClone(d);
  hashAndSignEventWithId(d as unknown as PduDraft, 'hs', KEY, roomVersions['10']!);
  assert.deepEqual(d, copy);
});
