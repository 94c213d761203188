// Rule 4.4.1: invites that complete an m.room.third_party_invite, with real Ed25519 signatures.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authTypesForEvent } from '../../../src/protocol/auth-events.js';
import { encodeBase64, encodeBase64Url } from '../../../src/protocol/base64.js';
import { stateKey } from '../../../src/protocol/events.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import { generateSigningKey, getSignature, signJson } from '../../../src/protocol/signing.js';
import { ALICE, BOB, CAROL, ERIN, Room, runAuthCases, VERSIONS, type AuthCase } from './room.js';

const idKey = generateSigningKey('0');
const otherKey = generateSigningKey('1');
const TOKEN = 'abc123token';
const ID_SERVER = 'id.example.test';

const inviteContent = (publicKey: string = encodeBase64(idKey.publicKey)): JsonObject => ({
  display_name: 'c...@example.com',
  key_validity_url: `https://${ID_SERVER}/_matrix/identity/v2/pubkey/isvalid`,
  public_key: publicKey,
});

const signed = (fields: JsonObject = {}, key = idKey): JsonObject =>
  signJson({ mxid: CAROL, token: TOKEN, ...fields }, ID_SERVER, key);

const invite = (thirdParty: JsonObject | string, sender: string = BOB, target: string = CAROL) => ({
  type: 'm.room.member',
  sender,
  state_key: target,
  content: { membership: 'invite', third_party_invite: thirdParty },
});

/** Bob is joined and has issued the third-party invite for TOKEN. */
const withInvite = (content: JsonObject = inviteContent(), members: Record<string, string> = {}) => ({
  room: { members: { [BOB]: 'join', ...members } },
  arrange: (r: Room) => {
    r.setState('m.room.third_party_invite', TOKEN, content, BOB);
  },
});

const cases: AuthCase[] = [
  // 4.4.1.7.
  { name: '4.4.1.7 a signature by the public_key is allowed', ...withInvite(), event: invite({ display_name: 'c', signed: signed() }), expect: true },
  {
    name: '4.4.1.7.2 a signature by a key in public_keys is allowed',
    ...withInvite({ ...inviteContent(encodeBase64(otherKey.publicKey)), public_keys: [{ public_key: 'bm90IGEga2V5' }, { public_key: encodeBase64(idKey.publicKey) }] }),
    event: invite({ signed: signed() }),
    expect: true,
  },
  {
    name: '4.4.1.7 a URL-safe encoded key is accepted',
    ...withInvite(inviteContent(encodeBase64Url(idKey.publicKey))),
    event: invite({ signed: signed() }),
    expect: true,
  },
  {
    name: '4.4.1.7 one valid signature among several is enough',
    ...withInvite(),
    event: invite({ signed: signJson(signed({}, otherKey), ID_SERVER, idKey) }),
    expect: true,
  },
  {
    name: '4.4.1 the issuer need not still be joined (no rule asks it)',
    ...withInvite(),
    arrange: (r) => {
      r.setState('m.room.third_party_invite', TOKEN, inviteContent(), BOB);
      r.setMember(BOB, 'leave');
    },
    event: invite({ signed: signed() }),
    expect: true,
  },
  // 4.4.1.8.
  { name: '4.4.1.8 a signature by another key is refused', ...withInvite(), event: invite({ signed: signed({}, otherKey) }), expect: /no valid signature/ },
  {
    name: '4.4.1.8 a signature over other contents is refused',
    ...withInvite(),
    event: invite({ signed: { ...signed(), extra: 'added after signing' } }),
    expect: /no valid signature/,
  },
  {
    name: '4.4.1.8 a signature under a key id that is not ed25519 is refused',
    ...withInvite(),
    event: invite({
      signed: { mxid: CAROL, token: TOKEN, signatures: { [ID_SERVER]: { 'curve25519:0': getSignature(signed(), ID_SERVER, 'ed25519:0')! } } },
    }),
    expect: /no valid signature/,
  },
  { name: '4.4.1.8 no signatures at all is refused', ...withInvite(), event: invite({ signed: { mxid: CAROL, token: TOKEN } }), expect: /no valid signature/ },
  { name: '4.4.1.8 an invite event without keys is refused', ...withInvite({ display_name: 'c' }), event: invite({ signed: signed() }), expect: /no valid signature/ },
  // 4.4.1.1.
  { name: '4.4.1.1 a banned target is refused', ...withInvite(inviteContent(), { [CAROL]: 'ban' }), event: invite({ signed: signed() }), expect: /third-party invite: target is banned/ },
  // 4.4.1.2.
  { name: '4.4.1.2 no signed object is refused', ...withInvite(), event: invite({ display_name: 'c' }), expect: /no signed object/ },
  { name: '4.4.1.2 a third_party_invite that is not an object is refused', ...withInvite(), event: invite('yes'), expect: /no signed object/ },
  // 4.4.1.3.
  { name: '4.4.1.3 signed without token is refused', ...withInvite(), event: invite({ signed: signJson({ mxid: CAROL }, ID_SERVER, idKey) }), expect: /no mxid or token/ },
  { name: '4.4.1.3 signed without mxid is refused', ...withInvite(), event: invite({ signed: signJson({ token: TOKEN }, ID_SERVER, idKey) }), expect: /no mxid or token/ },
  // 4.4.1.4.
  { name: '4.4.1.4 mxid other than the state_key is refused', ...withInvite(), event: invite({ signed: signed({ mxid: ERIN }) }), expect: /mxid does not match/ },
  // 4.4.1.5.
  { name: '4.4.1.5 no m.room.third_party_invite for the token is refused', ...withInvite(), event: invite({ signed: signed({ token: 'other' }) }), expect: /no m\.room\.third_party_invite for the token/ },
  // 4.4.1.6.
  {
    name: '4.4.1.6 a sender other than the issuer is refused',
    ...withInvite(),
    event: invite({ signed: signed() }, ALICE),
    expect: /not the sender of the m\.room\.third_party_invite/,
  },
];

// A signed object made by python3-signedjson (seed bytes 0..31, key ed25519:0): an independent check
// that the signature is verified over the canonical form the identity servers sign.
const PY_PUBLIC_KEY = 'A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg';
const pySigned = (token: string): JsonObject => ({
  mxid: CAROL,
  token,
  sender: BOB,
  signatures: {
    [ID_SERVER]: {
      'ed25519:0': 'WxUlunmSrRaua4v4gb6iaNB1enoY0UZttkFO6Pq7gDomp2w2b6KCkMdDyLkjD5HHp/9W3olKo66bRYUnCFLsBQ',
    },
  },
});
const pyCases: AuthCase[] = [
  {
    name: '4.4.1.7 a signature made by signedjson is accepted',
    room: { members: { [BOB]: 'join' } },
    arrange: (r) => r.setState('m.room.third_party_invite', 'pytoken', inviteContent(PY_PUBLIC_KEY), BOB),
    event: invite({ signed: pySigned('pytoken') }),
    expect: true,
  },
  {
    name: '4.4.1.8 the same signature over another token is refused',
    room: { members: { [BOB]: 'join' } },
    arrange: (r) => r.setState('m.room.third_party_invite', 'pytoken2', inviteContent(PY_PUBLIC_KEY), BOB),
    event: invite({ signed: pySigned('pytoken2') }),
    expect: /no valid signature/,
  },
];

runAuthCases('third-party invites', [...cases, ...pyCases]);

describe('auth events of a third-party invite', () => {
  for (const version of VERSIONS) {
    test(`room version ${version.id}: the m.room.third_party_invite of the token is selected`, () => {
      const types = authTypesForEvent(invite({ signed: signed() }), version);
      assert.ok(types.includes(stateKey('m.room.third_party_invite', TOKEN)));
      assert.ok(types.includes(stateKey('m.room.join_rules', '')));
      assert.ok(types.includes(stateKey('m.room.member', CAROL)));
      // Without a token there is nothing to select.
      const none = authTypesForEvent(invite({ signed: { mxid: CAROL } }), version);
      assert.equal(none.some((k) => k.includes('m.room.third_party_invite')), false);
    });
  }
});
