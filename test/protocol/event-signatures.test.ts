import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkEventSignatures, requiredSigningServers, type ServerVerifyKey } from '../../src/protocol/event-signatures.js';
import { hashAndSignEvent, type PduDraft } from '../../src/protocol/hashes.js';
import { generateSigningKey, type SigningKey } from '../../src/protocol/signing.js';
import { roomVersions } from '../../src/protocol/room-versions.js';
import type { Pdu } from '../../src/protocol/events.js';

const v = (id: string) => roomVersions[id]!;
const keys: Record<string, SigningKey> = { 'a.org': generateSigningKey(), 'b.org': generateSigningKey() };
const lookupWith = (validUntilTs = Number.MAX_SAFE_INTEGER) => (server: string, keyId: string): ServerVerifyKey | undefined => {
  const k = keys[server];
  return k && k.keyId === keyId ? { publicKey: k.publicKey, validUntilTs } : undefined;
};

function draft(extra: Partial<PduDraft> = {}): PduDraft {
  return {
    room_id: '!r:a.org', sender: '@alice:a.org', type: 'm.room.message', content: { body: 'hi' },
    origin_server_ts: 1000, depth: 5, auth_events: [], prev_events: [], ...extra,
  } as PduDraft;
}
const sign = (d: PduDraft, server: string, id: string): Pdu => hashAndSignEvent(d, server, keys[server]!, v(id));

test('the sender server must sign; v1–v2 also the event id server', () => {
  assert.deepEqual([...requiredSigningServers(sign(draft(), 'a.org', '10'), v('10'))], ['a.org']);
  const v1 = draft({ event_id: '$x:b.org' } as Partial<PduDraft>);
  assert.deepEqual([...requiredSigningServers(v1 as Pdu, v('1'))].sort(), ['a.org', 'b.org']);
  const onlyA = sign(v1, 'a.org', '1');
  assert.deepEqual(checkEventSignatures(onlyA, v('1'), lookupWith()), { ok: false, reason: 'no valid signature from b.org' });
  const both = hashAndSignEvent(onlyA, 'b.org', keys['b.org']!, v('1'));
  assert.deepEqual(checkEventSignatures(both, v('1'), lookupWith()), { ok: true });
});

test('a restricted join needs the authorising server from v8 on; a 3pid invite not the sender', () => {
  const join = draft({ type: 'm.room.member', state_key: '@bob:b.org', sender: '@bob:b.org', content: { membership: 'join', join_authorised_via_users_server: '@alice:a.org' } });
  assert.deepEqual([...requiredSigningServers(join as Pdu, v('8'))].sort(), ['a.org', 'b.org']);
  assert.deepEqual([...requiredSigningServers(join as Pdu, v('7'))], ['b.org']);
  const bobOnly = sign(join, 'b.org', '9');
  assert.equal(checkEventSignatures(bobOnly, v('9'), lookupWith()).ok, false);
  assert.equal(checkEventSignatures(hashAndSignEvent(bobOnly, 'a.org', keys['a.org']!, v('9')), v('9'), lookupWith()).ok, true);
  const tpi = draft({ type: 'm.room.member', state_key: '@c:c.org', content: { membership: 'invite', third_party_invite: { signed: {} } } });
  assert.deepEqual([...requiredSigningServers(tpi as Pdu, v('10'))], []);
});

test('tampering, unknown keys and (from v5) expired keys fail', () => {
  const ev = sign(draft(), 'a.org', '10');
  assert.equal(checkEventSignatures(ev, v('10'), lookupWith()).ok, true);
  assert.equal(checkEventSignatures({ ...ev, sender: '@mallory:a.org' }, v('10'), lookupWith()).ok, false);
  // Content is not covered by the signature (only by the hash), so a redacted copy still verifies.
  assert.equal(checkEventSignatures({ ...ev, content: {} }, v('10'), lookupWith()).ok, true);
  assert.equal(checkEventSignatures(ev, v('10'), () => undefined).ok, false);
  assert.equal(checkEventSignatures(ev, v('10'), lookupWith(999)).ok, false);
  const v4 = sign(draft(), 'a.org', '4');
  assert.equal(checkEventSignatures(v4, v('4'), lookupWith(999)).ok, true);
});
