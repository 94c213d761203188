// Building a local event against a room head: prev_events are the head's forward extremities (at
// most 20: more are merged by the next events), depth one past the deepest of them, auth_events
// selected from the current state; then hashes and the server's signature, the event id, the size
// limit, and authorization against the current state. An allowed event advances the head at once
// and becomes a PersistEvent for the writer; a denied one leaves the head untouched.

import { randomBytes } from 'node:crypto';
import { authTypesForEvent } from '../protocol/auth-events.js';
import { encodeBase64 } from '../protocol/base64.js';
import { HearthError } from '../protocol/errors.js';
import { checkEventAuth, redactionApplies } from '../protocol/event-auth.js';
import {
  MAX_PDU_BYTES,
  MAX_PDU_FIELD_BYTES,
  stateKey,
  toRoomEvent,
  type EventReferences,
  type RoomEvent,
  type StateKey,
} from '../protocol/events.js';
import { hashAndSignEventWithId, type PduDraft, type SignedEvent } from '../protocol/hashes.js';
import type { JsonObject } from '../protocol/json.js';
import type { RoomVersion } from '../protocol/room-versions.js';
import type { SigningKey } from '../protocol/signing.js';
import { keysToDecide, redactedRoomEvent, StateNotLoaded, type EventRef, type RoomHead } from './head.js';
import type { CurrentStateChange, PersistEvent, StateChange } from './persist-event.js';

/** What a client (or the server on its behalf) asks to send. */
export interface EventDraft {
  readonly type: string;
  readonly sender: string;
  readonly stateKey?: string;
  readonly content: JsonObject;
  /** The transaction id a client sent the event with, and from which device. */
  readonly txn?: { readonly deviceId: string; readonly txnId: string };
  /** Server-side unsigned data stored with the event (invite_room_state ...). */
  readonly unsigned?: JsonObject;
  /** For m.room.redaction: the event redacted, as stored, to decide whether the redaction applies. */
  readonly redacts?: RoomEvent;
}

export interface BuildContext {
  readonly serverName: string;
  readonly signingKey: SigningKey;
  readonly now: () => number;
}

/** A v1–v2 event's own `event_id` field (later versions derive the id from the event). */
export function eventIdField(version: RoomVersion, serverName: string): { event_id?: string } {
  return version.eventIdFormat === 'v1' ? { event_id: `$${randomBytes(12).toString('base64url')}:${serverName}` } : {};
}

/**
 * A member event of this server's user on another server's template (make_join, make_knock,
 * make_leave): the template's place in the room (depth, prev and auth events), this server's
 * content, hashed and signed here.
 */
export function signOnTemplate(
  ctx: BuildContext,
  version: RoomVersion,
  template: JsonObject,
  member: { readonly roomId: string; readonly userId: string; readonly content: JsonObject },
): SignedEvent {
  const draft = {
    ...eventIdField(version, ctx.serverName),
    room_id: member.roomId,
    sender: member.userId,
    type: 'm.room.member',
    state_key: member.userId,
    content: member.content,
    origin_server_ts: ctx.now(),
    depth: template['depth'],
    prev_events: template['prev_events'],
    auth_events: template['auth_events'],
  } as unknown as PduDraft;
  return hashAndSignEventWithId(draft, ctx.serverName, ctx.signingKey, version);
}

/** Event references as a room's version writes them: ids, or (v1–v2) ids with reference hashes. */
export function refsFor(head: { readonly version: RoomVersion }, refs: readonly EventRef[]): EventReferences {
  if (head.version.eventIdFormat !== 'v1') return refs.map((r) => r.eventId);
  return refs.map((r): [string, { sha256: string }] => [r.eventId, { sha256: r.referenceHash ?? '' }]);
}

function checkFieldSizes(draft: EventDraft): void {
  if (Buffer.byteLength(draft.type, 'utf8') > MAX_PDU_FIELD_BYTES) throw HearthError.tooLarge('Event type is longer than 255 bytes');
  if (draft.stateKey !== undefined && Buffer.byteLength(draft.stateKey, 'utf8') > MAX_PDU_FIELD_BYTES) {
    throw HearthError.tooLarge('State key is longer than 255 bytes');
  }
}

/**
 * Builds, signs and authorizes one event on top of `head`, and advances the head. Throws
 * HearthError: 403 M_FORBIDDEN when the auth rules deny it, 413 M_TOO_LARGE past the size
 * limits, 400 M_BAD_JSON for content without a canonical form in this room version.
 */
export function buildEvent(head: RoomHead, draft: EventDraft, ctx: BuildContext): PersistEvent {
  const version = head.version;
  checkFieldSizes(draft);
  const prevRefs = head.citedExtremities();
  let depth = 0;
  for (const r of prevRefs) if (r.depth > depth) depth = r.depth;
  depth += 1;

  const subject = {
    type: draft.type,
    sender: draft.sender,
    ...(draft.stateKey !== undefined ? { state_key: draft.stateKey } : {}),
    content: draft.content,
  };
  // What authorization and the state change read must be loaded: checked before signing.
  const unloaded = head.missing(keysToDecide(subject, version));
  if (unloaded.length > 0) throw new StateNotLoaded(unloaded);
  const authRefs: EventRef[] = [];
  for (const key of authTypesForEvent(subject, version)) {
    const ref = head.stateRefs.get(key);
    if (ref !== undefined) authRefs.push(ref);
  }

  // v12: the create event has no room_id; its id names the room.
  const v12Create = version.createEventRoomId && draft.type === 'm.room.create';
  if (v12Create && head.stateRefs.size > 0) throw HearthError.forbidden('The room has a create event already');
  const draftPdu: PduDraft = {
    ...eventIdField(version, ctx.serverName),
    ...(v12Create ? {} : { room_id: head.roomId }),
    sender: draft.sender,
    type: draft.type,
    ...(draft.stateKey !== undefined ? { state_key: draft.stateKey } : {}),
    content: draft.content,
    origin_server_ts: ctx.now(),
    depth,
    prev_events: refsFor(head, prevRefs),
    auth_events: refsFor(head, authRefs),
    ...(draft.type === 'm.room.redaction' && draft.redacts !== undefined && !version.updatedRedactionRules
      ? { redacts: draft.redacts.event_id }
      : {}),
  };
  const { pdu, eventId, referenceHash } = hashAndSignEventWithId(draftPdu, ctx.serverName, ctx.signingKey, version);
  // Stored as plain JSON: for an event with a canonical form (signing just proved it has one),
  // JSON.stringify writes the same characters in another key order, so the same byte length.
  const json = JSON.stringify(pdu);
  if (Buffer.byteLength(json, 'utf8') > MAX_PDU_BYTES) {
    throw HearthError.tooLarge(`Event is larger than ${MAX_PDU_BYTES} bytes`);
  }

  if (v12Create) head.roomId = '!' + eventId.slice(1);
  const event = toRoomEvent(pdu, eventId, version);
  const auth = checkEventAuth(event, head.state, version);
  if (!auth.allowed) throw HearthError.forbidden(auth.reason);

  // Allowed: advance the head.
  const ref: EventRef = {
    eventId,
    depth,
    nid: undefined,
    ...(version.eventIdFormat === 'v1' ? { referenceHash: encodeBase64(referenceHash) } : {}),
  };
  let unsigned: JsonObject | undefined = draft.unsigned === undefined ? undefined : { ...draft.unsigned };
  const snapshotBefore = head.snapshot;
  const changes: StateChange[] = [];
  let key: StateKey | undefined;
  if (draft.stateKey !== undefined) {
    key = stateKey(draft.type, draft.stateKey);
    const prior = head.state.get(key);
    const { change } = head.applyState(key, event, ref);
    if (prior !== undefined) {
      unsigned = { ...unsigned, replaces_state: prior.event_id, prev_content: prior.content, prev_sender: prior.sender };
    }
    changes.push(change);
  }
  const extremities = head.extremitiesAfter(prevRefs, ref);
  head.extremities = extremities;

  // A redaction that takes effect on a current state event changes what later auth checks read.
  let redactionTarget: string | undefined;
  let stateChanged = key !== undefined;
  const target = draft.redacts;
  if (target !== undefined && redactionApplies(event, target, head.state, version)) {
    redactionTarget = target.event_id;
    if (target.state_key !== undefined) {
      stateChanged = head.replaceStateEvent(stateKey(target.type, target.state_key), redactedRoomEvent(target, head)) || stateChanged;
    }
  }
  const currentState: CurrentStateChange | undefined = stateChanged
    ? { changes, snapshot: head.snapshot!, summary: head.summary() }
    : undefined;

  return {
    head,
    ref,
    pdu,
    json,
    event,
    status: 'timeline',
    rejectionReason: undefined,
    position: 'stream',
    onCurrentState: true,
    stateKey: key,
    snapshotBefore,
    snapshotAfter: head.snapshot,
    unsigned,
    txn: draft.txn,
    extremities,
    currentState,
    redactionTarget,
    backward: undefined,
    streamOrdering: undefined,
  };
}
