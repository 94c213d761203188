// The authorization rule for m.room.member events: rule 4 from room version 6 on (5 in v1–v5).
// Sub-rules carry v8+ numbers (v8 inserted 4.2, and 4.3.5 for restricted joins; v1–v7 number
// the join rules 4.2.x and shift the rest down by one).

import { ALLOW, deny, type AuthResult, type AuthStateView } from './auth-state.js';
import { decodeBase64Strict } from './base64.js';
import type { RoomEvent } from './events.js';
import { isJsonObject, type JsonObject } from './json.js';
import type { RoomVersion } from './room-versions.js';
import { signedServers, verifySignatureWithPublicKey } from './signing.js';

export function checkMemberEvent(
  event: RoomEvent,
  view: AuthStateView,
  version: RoomVersion,
): AuthResult {
  // 4.1. A state_key and a membership are required.
  const target = event.state_key;
  if (target === undefined) return deny('member event has no state_key');
  if (!Object.hasOwn(event.content, 'membership')) return deny('member event has no membership');
  // 4.2 (v8+): an event carrying `join_authorised_via_users_server` must be signed by that user's
  // server. Signatures are not part of a RoomEvent: checkEventSignatures (event-signatures.ts) enforces it on receipt.
  switch (event.content.membership) {
    case 'join':
      return checkJoin(event, target, view, version);
    case 'invite':
      return checkInvite(event, target, view, version);
    case 'leave':
      return checkLeave(event, target, view, version);
    case 'ban':
      return checkBan(event, target, view);
    case 'knock':
      if (version.knockJoinRule) return checkKnock(event, target, view, version);
      break;
  }
  // 4.8. Otherwise the membership is unknown: reject.
  return deny(`unknown membership ${JSON.stringify(event.content.membership)}`);
}

// 4.3. membership = join.
function checkJoin(
  event: RoomEvent,
  target: string,
  view: AuthStateView,
  version: RoomVersion,
): AuthResult {
  // 4.3.1. The creator's join whose only previous event is the create event: allow.
  const create = view.create;
  if (
    create !== undefined &&
    event.prev_events.length === 1 &&
    event.prev_events[0] === create.event_id &&
    target === view.creator
  ) {
    return ALLOW;
  }
  // 4.3.2.
  if (event.sender !== target) return deny('join: sender does not match state_key');
  // 4.3.3.
  const current = view.membership(target);
  if (current === 'ban') return deny('join: sender is banned');
  const rule = view.joinRule;
  // 4.3.4. invite (or, v7+, knock): only the invited or already joined.
  if (rule === 'invite' || (version.knockJoinRule && rule === 'knock')) {
    if (current === 'invite' || current === 'join') return ALLOW;
    return deny(`join: the join rule is ${rule} and the sender is not invited`);
  }
  // 4.3.5. restricted (v8+) or knock_restricted (v10+).
  if (
    (version.restrictedJoinRule && rule === 'restricted') ||
    (version.knockRestrictedJoinRule && rule === 'knock_restricted')
  ) {
    // 4.3.5.1.
    if (current === 'join' || current === 'invite') return ALLOW;
    // 4.3.5.2. The authorising user must be joined and able to invite.
    const via = event.content.join_authorised_via_users_server;
    if (typeof via !== 'string') {
      return deny(`join: the join rule is ${rule} and no join_authorised_via_users_server is given`);
    }
    if (view.membership(via) !== 'join') return deny('join: the authorising user is not joined');
    if (view.userLevel(via) < view.levels.invite) {
      return deny('join: the authorising user lacks the invite level');
    }
    // 4.3.5.3.
    return ALLOW;
  }
  // 4.3.6.
  if (rule === 'public') return ALLOW;
  // 4.3.7.
  return deny(`join: not allowed by the join rule ${JSON.stringify(rule ?? null)}`);
}

// 4.4. membership = invite.
function checkInvite(
  event: RoomEvent,
  target: string,
  view: AuthStateView,
  version: RoomVersion,
): AuthResult {
  // 4.4.1. An invite on behalf of a third-party invite.
  if (Object.hasOwn(event.content, 'third_party_invite')) {
    return checkThirdPartyInvite(event, target, view, version);
  }
  // 4.4.2.
  if (view.membership(event.sender) !== 'join') return deny('invite: sender is not joined');
  // 4.4.3.
  const targetMembership = view.membership(target);
  if (targetMembership === 'join' || targetMembership === 'ban') {
    return deny(`invite: target is already ${targetMembership === 'join' ? 'joined' : 'banned'}`);
  }
  // 4.4.4.
  if (view.userLevel(event.sender) >= view.levels.invite) return ALLOW;
  // 4.4.5.
  return deny('invite: sender lacks the invite level');
}

// 4.4.1. The invite completes an m.room.third_party_invite.
function checkThirdPartyInvite(
  event: RoomEvent,
  target: string,
  view: AuthStateView,
  version: RoomVersion,
): AuthResult {
  // 4.4.1.1.
  if (view.membership(target) === 'ban') return deny('third-party invite: target is banned');
  // 4.4.1.2.
  const invite = event.content.third_party_invite;
  const signed = isJsonObject(invite) ? invite.signed : undefined;
  if (!isJsonObject(signed)) return deny('third-party invite: no signed object');
  // 4.4.1.3.
  const { mxid, token } = signed;
  if (typeof mxid !== 'string' || typeof token !== 'string') {
    return deny('third-party invite: signed has no mxid or token');
  }
  // 4.4.1.4.
  if (mxid !== target) return deny('third-party invite: signed mxid does not match state_key');
  // 4.4.1.5.
  const inviteEvent = view.get('m.room.third_party_invite', token);
  if (inviteEvent === undefined) return deny('third-party invite: no m.room.third_party_invite for the token');
  // 4.4.1.6.
  if (inviteEvent.sender !== event.sender) {
    return deny('third-party invite: sender is not the sender of the m.room.third_party_invite');
  }
  // 4.4.1.7. Any signature in `signed` by any of the invite's public keys: allow.
  if (signedByAnyKey(signed, publicKeys(inviteEvent.content), version)) return ALLOW;
  // 4.4.1.8.
  return deny('third-party invite: signed carries no valid signature by the invite\'s keys');
}

/** The Ed25519 public keys of an m.room.third_party_invite (unpadded base64, either alphabet). */
function publicKeys(content: JsonObject): Uint8Array[] {
  const encoded: string[] = [];
  // 4.4.1.7.1. A single key in `public_key`.
  if (typeof content.public_key === 'string') encoded.push(content.public_key);
  // 4.4.1.7.2. A list in `public_keys`.
  if (Array.isArray(content.public_keys)) {
    for (const entry of content.public_keys) {
      if (isJsonObject(entry) && typeof entry.public_key === 'string') encoded.push(entry.public_key);
    }
  }
  const keys: Uint8Array[] = [];
  for (const text of encoded) {
    const key = decodeBase64Strict(text) ?? decodeBase64Strict(text, 'url');
    if (key !== null) keys.push(key);
  }
  return keys;
}

function signedByAnyKey(signed: JsonObject, keys: Uint8Array[], version: RoomVersion): boolean {
  if (keys.length === 0) return false;
  const options = { strict: version.strictCanonicalJson };
  for (const signatures of signedServers(signed).values()) {
    for (const [keyId, signature] of signatures) {
      if (!keyId.startsWith('ed25519:')) continue;
      for (const key of keys) {
        if (verifySignatureWithPublicKey(signed, signature, key, options)) return true;
      }
    }
  }
  return false;
}

// 4.5. membership = leave.
function checkLeave(
  event: RoomEvent,
  target: string,
  view: AuthStateView,
  version: RoomVersion,
): AuthResult {
  const senderMembership = view.membership(event.sender);
  // 4.5.1. Leaving oneself: from invite or join (v7+: or knock).
  if (event.sender === target) {
    if (
      senderMembership === 'invite' ||
      senderMembership === 'join' ||
      (version.knockJoinRule && senderMembership === 'knock')
    ) {
      return ALLOW;
    }
    return deny(`leave: cannot leave from membership ${senderMembership}`);
  }
  // 4.5.2.
  if (senderMembership !== 'join') return deny('kick: sender is not joined');
  const senderLevel = view.userLevel(event.sender);
  // 4.5.3. Unbanning needs the ban level as well.
  if (view.membership(target) === 'ban' && senderLevel < view.levels.ban) {
    return deny('unban: sender lacks the ban level');
  }
  // 4.5.4.
  if (senderLevel >= view.levels.kick && view.userLevel(target) < senderLevel) return ALLOW;
  // 4.5.5.
  return deny('kick: sender lacks the kick level or is not above the target');
}

// 4.6. membership = ban.
function checkBan(event: RoomEvent, target: string, view: AuthStateView): AuthResult {
  // 4.6.1.
  if (view.membership(event.sender) !== 'join') return deny('ban: sender is not joined');
  // 4.6.2.
  const senderLevel = view.userLevel(event.sender);
  if (senderLevel >= view.levels.ban && view.userLevel(target) < senderLevel) return ALLOW;
  // 4.6.3.
  return deny('ban: sender lacks the ban level or is not above the target');
}

// 4.7 (v7+). membership = knock.
function checkKnock(
  event: RoomEvent,
  target: string,
  view: AuthStateView,
  version: RoomVersion,
): AuthResult {
  // 4.7.1. Only rooms whose join rule is knock (v10+: or knock_restricted).
  const rule = view.joinRule;
  if (!(rule === 'knock' || (version.knockRestrictedJoinRule && rule === 'knock_restricted'))) {
    return deny(`knock: the join rule is ${JSON.stringify(rule ?? null)}`);
  }
  // 4.7.2.
  if (event.sender !== target) return deny('knock: sender does not match state_key');
  // 4.7.3.
  const current = view.membership(event.sender);
  if (current !== 'ban' && current !== 'invite' && current !== 'join') return ALLOW;
  // 4.7.4.
  return deny(`knock: sender's membership is ${current}`);
}
