import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { decodeBase64, encodeBase64 } from '../../src/protocol/base64.js';
import { canonicalJson } from '../../src/protocol/canonical-json.js';
import { HearthError } from '../../src/protocol/errors.js';
import type { Pdu } from '../../src/protocol/events.js';
import {
  checkContentHash,
  computeContentHash,
  computeEventId,
  hashAndSignEvent,
  referenceHash,
  verifyEventSignature,
  type PduDraft,
} from '../../src/protocol/hashes.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { redactEvent } from '../../src/protocol/redaction.js';
import { roomVersions, type RoomVersion } from '../../src/protocol/room-versions.js';
import { signingKeyFromSeed } from '../../src/protocol/signing.js';
import { vectors } from '../data/signing/vectors.js';

const v = (id: string): RoomVersion => roomVersions[id]!;
const SPEC_KEY = signingKeyFromSeed('ed25519:1', decodeBase64('YJDBA9Xnr2sVqXD9Vj7XVUnmFZcZrlw8Md7kMW+3XA1'));
const keys = vectors.keys.map((k) => signingKeyFromSeed(k.keyId, decodeBase64(k.seed)));
const isBadJson = (e: unknown): boolean => e instanceof HearthError && e.errcode === 'M_BAD_JSON';

function without(obj: JsonObject, ...omit: string[]): JsonObject {
  return Object.fromEntries(Object.entries(obj).filter(([k]) => !omit.includes(k)));
}

// Spec appendices, "Event Signing".
const SPEC_MINIMAL = {
  room_id: '!x:domain',
  sender: '@a:domain',
  origin: 'domain',
  origin_server_ts: 1000000,
  signatures: {},
  hashes: {},
  type: 'X',
  content: {},
  prev_events: [],
  auth_events: [],
  depth: 3,
  unsigned: { age_ts: 1000000 },
} as unknown as PduDraft;
const SPEC_MESSAGE = {
  content: { body: 'Here is the message content' },
  event_id: '$0:domain',
  origin: 'domain',
  origin_server_ts: 1000000,
  type: 'm.room.message',
  room_id: '!r:domain',
  sender: '@u:domain',
  signatures: {},
  unsigned: { age_ts: 1000000 },
} as unknown as PduDraft;

describe('spec event signing vectors', () => {
  // The vectors keep the top-level `origin`, so they follow the redaction rules before v11.
  for (const id of ['1', '5', '10']) {
    test(`minimal event, room version ${id}`, () => {
      const signed = hashAndSignEvent(SPEC_MINIMAL, 'domain', SPEC_KEY, v(id));
      assert.deepEqual(signed, {
        auth_events: [],
        content: {},
        depth: 3,
        hashes: { sha256: '5jM4wQpv6lnBo7CLIghJuHdW+s2CMBJPUOGOC89ncos' },
        origin: 'domain',
        origin_server_ts: 1000000,
        prev_events: [],
        room_id: '!x:domain',
        sender: '@a:domain',
        signatures: {
          domain: {
            'ed25519:1':
              'KxwGjPSDEtvnFgU00fwFz+l6d2pJM6XBIaMEn81SXPTRl16AqLAYqfIReFGZlHi5KLjAWbOoMszkwsQma+lYAg',
          },
        },
        type: 'X',
        unsigned: { age_ts: 1000000 },
      });
    });

    test(`event with redactable content, room version ${id}`, () => {
      const signed = hashAndSignEvent(SPEC_MESSAGE, 'domain', SPEC_KEY, v(id));
      assert.deepEqual(signed, {
        content: { body: 'Here is the message content' },
        event_id: '$0:domain',
        hashes: { sha256: 'onLKD1bGljeBWQhWZ1kaP9SorVmRQNdN5aM2JYU2n/g' },
        origin: 'domain',
        origin_server_ts: 1000000,
        type: 'm.room.message',
        room_id: '!r:domain',
        sender: '@u:domain',
        signatures: {
          domain: {
            'ed25519:1':
              'Wm+VzmOUOz08Ds+0NTWb1d4CZrVsJSikkeRxh6aCcUwu6pNC78FunoD7KNWzqFn241eYHYMGCA5McEiVPdhzBA',
          },
        },
        unsigned: { age_ts: 1000000 },
      });
      assert.equal(verifyEventSignature(signed, 'domain', 'ed25519:1', SPEC_KEY.publicKey, v(id)), true);
      // Its redacted copy keeps a valid signature but loses the content hash.
      const redacted = redactEvent(signed, v(id));
      assert.equal(verifyEventSignature(redacted, 'domain', 'ed25519:1', SPEC_KEY.publicKey, v(id)), true);
      assert.equal(checkContentHash(signed, v(id)), true);
      assert.equal(checkContentHash(redacted, v(id)), false);
    });
  }

  test('v11 drops the top-level origin before signing, so the signature differs', () => {
    const signed = hashAndSignEvent(SPEC_MINIMAL, 'domain', SPEC_KEY, v('11'));
    assert.equal(signed.hashes.sha256, '5jM4wQpv6lnBo7CLIghJuHdW+s2CMBJPUOGOC89ncos');
    assert.notEqual(
      signed.signatures.domain!['ed25519:1'],
      'KxwGjPSDEtvnFgU00fwFz+l6d2pJM6XBIaMEn81SXPTRl16AqLAYqfIReFGZlHi5KLjAWbOoMszkwsQma+lYAg',
    );
    const v10 = hashAndSignEvent(SPEC_MINIMAL, 'domain', SPEC_KEY, v('10'));
    assert.equal(verifyEventSignature(v10, 'domain', 'ed25519:1', SPEC_KEY.publicKey, v('11')), false);
    assert.equal(verifyEventSignature(signed, 'domain', 'ed25519:1', SPEC_KEY.publicKey, v('11')), true);
    // Under v11 rules `origin` is not signed: changing it keeps the signature valid.
    const moved = { ...signed, origin: 'elsewhere' };
    assert.equal(verifyEventSignature(moved, 'domain', 'ed25519:1', SPEC_KEY.publicKey, v('11')), true);
    assert.equal(verifyEventSignature({ ...v10, origin: 'elsewhere' }, 'domain', 'ed25519:1', SPEC_KEY.publicKey, v('10')), false);
  });
});

describe('content hash', () => {
  const signed = hashAndSignEvent(SPEC_MESSAGE, 'domain', SPEC_KEY, v('1'));

  test('is sha256 of the canonical JSON without unsigned, signatures, hashes', () => {
    const expected = createHash('sha256')
      .update(canonicalJson(without(signed as unknown as JsonObject, 'unsigned', 'signatures', 'hashes')))
      .digest();
    assert.deepEqual(Buffer.from(computeContentHash(signed)), expected);
    const changedOutside = { ...signed, unsigned: { x: 1 }, signatures: {}, hashes: { sha256: 'x' } };
    assert.deepEqual(Buffer.from(computeContentHash(changedOutside)), expected);
  });

  test('checkContentHash: true as signed, false once anything covered changes', () => {
    assert.equal(checkContentHash(signed), true);
    assert.equal(checkContentHash({ ...signed, unsigned: { age: 99 } }), true);
    assert.equal(checkContentHash({ ...signed, content: { body: 'changed' } }), false);
    assert.equal(checkContentHash({ ...signed, depth: 4 }), false);
    assert.equal(checkContentHash({ ...signed, extra: true }), false);
  });

  test('checkContentHash accepts a padded hash and refuses malformed ones', () => {
    const hash = signed.hashes.sha256;
    assert.equal(checkContentHash({ ...signed, hashes: { sha256: hash + '=' } }), true);
    assert.equal(checkContentHash({ ...signed, hashes: { sha256: hash.slice(0, -2) } }), false);
    assert.equal(checkContentHash({ ...signed, hashes: { sha256: hash.slice(0, -1) + '!' } }), false);
    assert.equal(checkContentHash({ ...signed, hashes: {} }), false);
    assert.equal(checkContentHash({ ...signed, hashes: 'x' }), false);
    assert.equal(checkContentHash(without(signed as unknown as JsonObject, 'hashes')), false);
  });

  test('strict canonical JSON from room version 6 on', () => {
    const floaty = { ...SPEC_MESSAGE, content: { body: 'x', weight: 1.5 } } as PduDraft;
    const signed5 = hashAndSignEvent(floaty, 'domain', SPEC_KEY, v('5'));
    assert.equal(checkContentHash(signed5, v('5')), true);
    assert.throws(() => hashAndSignEvent(floaty, 'domain', SPEC_KEY, v('6')), isBadJson);
    assert.throws(() => computeContentHash(floaty, v('6')), isBadJson);
    // Checking never throws: the hash of an event with no canonical form does not match.
    assert.equal(checkContentHash(signed5, v('6')), false);
  });
});

describe('reference hash and event ids', () => {
  const signed = hashAndSignEvent(
    { ...SPEC_MINIMAL, type: 'm.room.message', content: { body: 'hi' } } as PduDraft,
    'domain',
    SPEC_KEY,
    v('10'),
  );

  test('follows the spec steps: redact, drop signatures and unsigned, canonical JSON, sha256', () => {
    const redacted = without(redactEvent(signed, v('10')) as unknown as JsonObject, 'signatures', 'unsigned');
    const expected = createHash('sha256').update(canonicalJson(redacted)).digest();
    assert.deepEqual(Buffer.from(referenceHash(signed, v('10'))), expected);
  });

  test('covers the essential fields and the content hash, not what redaction removes', () => {
    const base = Buffer.from(referenceHash(signed, v('10')));
    const same = [
      { ...signed, unsigned: { age: 1 } },
      { ...signed, signatures: {} },
      { ...signed, content: { body: 'other' } },
    ];
    for (const e of same) assert.deepEqual(Buffer.from(referenceHash(e, v('10'))), base);
    const different = [
      { ...signed, hashes: { sha256: 'AAAA' } },
      { ...signed, depth: 4 },
      { ...signed, prev_events: ['$x'] },
    ];
    for (const e of different) assert.notDeepEqual(Buffer.from(referenceHash(e, v('10'))), base);
  });

  test('v3 uses standard base64, v4 and later URL-safe', () => {
    // Find vector events whose hash has characters the two alphabets spell differently.
    const v3 = vectors.events.filter((c) => c.roomVersion === '3' && /[+/]/.test(c.referenceHash));
    const v4 = vectors.events.filter((c) => Number(c.roomVersion) >= 4 && /[+/]/.test(c.referenceHash));
    assert.ok(v3.length > 0 && v4.length > 0);
    for (const c of v3) assert.match(computeEventId(c.signed, v('3')), /^\$[A-Za-z0-9+/]{43}$/);
    for (const c of v4) assert.match(computeEventId(c.signed, v(c.roomVersion)), /^\$[A-Za-z0-9_-]{43}$/);
    const hash = encodeBase64(referenceHash(signed, v('4')));
    assert.equal(computeEventId(signed, v('3')), '$' + hash);
    assert.equal(computeEventId(signed, v('4')), '$' + hash.replaceAll('+', '-').replaceAll('/', '_'));
  });

  test('v1 and v2 use the event_id the event carries', () => {
    const legacy = { ...signed, event_id: '$abc:example.org' } as unknown as Pdu;
    assert.equal(computeEventId(legacy, v('1')), '$abc:example.org');
    assert.equal(computeEventId(legacy, v('2')), '$abc:example.org');
    for (const bad of [undefined, 5, '', 'abc:example.org', '$abc', '$:example.org', '$abc:', '$' + 'a'.repeat(250) + ':x.org']) {
      assert.throws(() => computeEventId({ ...legacy, event_id: bad }, v('1')), isBadJson, String(bad));
    }
  });
});

describe('event signatures', () => {
  const key = keys[0]!;
  const draft = {
    type: 'm.room.member',
    room_id: '!r:a.example',
    sender: '@u:a.example',
    state_key: '@u:a.example',
    content: { membership: 'join', displayname: 'U' },
    origin_server_ts: 5,
    depth: 9,
    auth_events: ['$a', '$b'],
    prev_events: ['$c'],
  } as PduDraft;

  test('hashAndSignEvent does not change its input and keeps existing signatures', () => {
    const input = { ...draft, signatures: { 'b.example': { 'ed25519:x': 'sigB' } } } as PduDraft;
    const before = structuredClone(input);
    const signed = hashAndSignEvent(input, 'a.example', key, v('10'));
    assert.deepEqual(input, before);
    assert.deepEqual(Object.keys(signed.signatures).sort(), ['a.example', 'b.example']);
    assert.equal(signed.signatures['b.example']!['ed25519:x'], 'sigB');
  });

  test('verifies for the full and the redacted copy; fails for changes, other keys, absence', () => {
    const signed = hashAndSignEvent(draft, 'a.example', key, v('10'));
    const ok = (e: object, server = 'a.example', keyId = key.keyId, pk: Uint8Array | string = key.publicKey) =>
      verifyEventSignature(e as Pdu, server, keyId, pk, v('10'));
    assert.equal(ok(signed), true);
    assert.equal(ok(redactEvent(signed, v('10'))), true);
    assert.equal(ok({ ...signed, content: { membership: 'join', displayname: 'Changed' } }), true);
    assert.equal(ok({ ...signed, content: { membership: 'leave', displayname: 'U' } }), false);
    assert.equal(ok({ ...signed, depth: 10 }), false);
    assert.equal(ok({ ...signed, hashes: { sha256: 'AAAA' } }), false);
    assert.equal(ok(signed, 'a.example', key.keyId, keys[1]!.publicKey), false);
    assert.equal(ok(signed, 'b.example'), false);
    assert.equal(ok(signed, 'a.example', 'ed25519:other'), false);
    assert.equal(ok({ ...signed, content: { membership: 'join', bad: '\ud800' }, type: 'm.room.create' }), false);
  });
});

describe('cross-check with the generator script', () => {
  test(`${vectors.events.length} events: hashes, signatures, reference hashes, event ids`, () => {
    for (const [i, c] of vectors.events.entries()) {
      const version = v(c.roomVersion);
      let pdu = without(c.signed, 'hashes', 'signatures') as unknown as PduDraft;
      for (const [s, k] of c.steps) pdu = hashAndSignEvent(pdu, vectors.servers[s]!, keys[k]!, version);
      assert.deepEqual(pdu, c.signed, `case ${i}`);
      assert.equal(checkContentHash(c.signed, version), true, `case ${i}`);
      assert.equal(encodeBase64(referenceHash(c.signed, version)), c.referenceHash, `case ${i}`);
      if (c.eventId !== undefined) assert.equal(computeEventId(c.signed, version), c.eventId, `case ${i}`);
      else assert.equal(computeEventId(c.signed, version), c.signed.event_id);
    }
  });

  test('every signature verifies with its key and room version only', () => {
    for (const [i, c] of vectors.events.entries()) {
      const version = v(c.roomVersion);
      for (const [s, k] of c.steps) {
        const server = vectors.servers[s]!;
        assert.equal(verifyEventSignature(c.signed, server, keys[k]!.keyId, keys[k]!.publicKey, version), true, `case ${i}`);
        const wrongKey = keys[(k + 1) % keys.length]!.publicKey;
        assert.equal(verifyEventSignature(c.signed, server, keys[k]!.keyId, wrongKey, version), false);
      }
    }
  });
});
