// Building an event against a room head: prev_events are the head's forward extremities, depth
// one past the deepest of them, auth_events selected from the current state; then hashes and the
// server's signature, the event id, the size limit, and authorization against the current state.
// An allowed event advances the head at once; a denied one leaves it untouched.

import { randomBytes } from 'node:crypto';
import { authTypesForEvent } from '../protocol/auth-events.js';
import { encodeBase64 } from '../protocol/base64.js';
import { HearthError } from '../protocol/errors.js';
import { checkEventAuth, redactionApplies } from '../protocol/event-auth.js';
import { stateKey, toRoomEvent, type EventReferences, type Pdu, type RoomEvent, type StateKey } from '../protocol/events.js';
import { hashAndSignEventWithId, type PduDraft } from '../protocol/hashes.js';
import type { JsonObject } from '../protocol/json.js';
import { redactEvent } from '../protocol/redaction.js';
import type { SigningKey } from '../protocol/signing.js';
import { planSnapshot } from '../storage/rooms/state-snapshots.js';
import type { EventRef, RoomHead, RoomSummary, SnapshotRef } from './head.js';

/** Largest PDU, as canonical JSON bytes (server-server API, "Size limits"). */
export const MAX_PDU_BYTES = 65_536;
/** Largest `type` and `state_key`, in bytes. */
const MAX_FIELD_BYTES = 255;

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

export interface BuiltEvent {
  readonly head: RoomHead;
  readonly ref: EventRef;
  readonly pdu: Pdu;
  /** The PDU as JSON: what is stored. */
  readonly json: string;
  readonly event: RoomEvent;
  readonly stateKey: StateKey | undefined;
  readonly snapshotBefore: SnapshotRef | null;
  readonly snapshotAfter: SnapshotRef | null;
  /** Server-side unsigned data (prev_content, replaces_state, invite_room_state ...). */
  readonly unsigned: JsonObject | undefined;
  readonly txn: EventDraft['txn'];
  /** For events that change the current state: the room summary after the event. */
  readonly summary: RoomSummary | undefined;
  /** For redactions that take effect: the redacted event's id. */
  readonly redactionTarget: string | undefined;
  /** Set by the writer. */
  streamOrdering: number | undefined;
}

export interface BuildContext {
  readonly serverName: string;
  readonly signingKey: SigningKey;
  readonly now: () => number;
}

function refsFor(head: RoomHead, refs: readonly EventRef[]): EventReferences {
  if (head.version.eventIdFormat !== 'v1') return refs.map((r) => r.eventId);
  return refs.map((r): [string, { sha256: string }] => [r.eventId, { sha256: r.referenceHash ?? '' }]);
}

function checkFieldSizes(draft: EventDraft): void {
  if (Buffer.byteLength(draft.type, 'utf8') > MAX_FIELD_BYTES) throw HearthError.tooLarge('Event type is longer than 255 bytes');
  if (draft.stateKey !== undefined && Buffer.byteLength(draft.stateKey, 'utf8') > MAX_FIELD_BYTES) {
    throw HearthError.tooLarge('State key is longer than 255 bytes');
  }
}

/** The redacted form of a RoomEvent (content reduced by the version's rules). */
export function redactedRoomEvent(event: RoomEvent, head: RoomHead): RoomEvent {
  return { ...event, content: redactEvent(event, head.version).content };
}

/**
 * Builds, signs and authorizes one event on top of `head`, and advances the head. Throws
 * HearthError: 403 M_FORBIDDEN when the auth rules deny it, 413 M_TOO_LARGE past the size
 * limits, 400 M_BAD_JSON for content without a canonical form in this room version.
 */
export function buildEvent(head: RoomHead, draft: EventDraft, ctx: BuildContext): BuiltEvent {
  const version = head.version;
  checkFieldSizes(draft);
  const prevRefs = head.extremities;
  let depth = 0;
  for (const r of prevRefs) if (r.depth > depth) depth = r.depth;
  depth += 1;

  const subject = {
    type: draft.type,
    sender: draft.sender,
    ...(draft.stateKey !== undefined ? { state_key: draft.stateKey } : {}),
    content: draft.content,
  };
  const authRefs: EventRef[] = [];
  for (const key of authTypesForEvent(subject, version)) {
    const ref = head.stateRefs.get(key);
    if (ref !== undefined) authRefs.push(ref);
  }

  const draftPdu: PduDraft = {
    ...(version.eventIdFormat === 'v1' ? { event_id: `$${randomBytes(12).toString('base64url')}:${ctx.serverName}` } : {}),
    room_id: head.roomId,
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
  let snapshotAfter = snapshotBefore;
  let key: StateKey | undefined;
  if (draft.stateKey !== undefined) {
    key = stateKey(draft.type, draft.stateKey);
    const prior = head.setState(key, event, ref);
    if (prior !== undefined) {
      unsigned = { ...unsigned, replaces_state: prior.event_id, prev_content: prior.content, prev_sender: prior.sender };
    }
    // A delta's keys hold their current events (the head never drops a key, so each has one).
    const plan = planSnapshot(snapshotBefore, [key], head.stateRefs.size);
    snapshotAfter =
      plan.parent === null
        ? { info: undefined, parent: null, chainLength: 0, keys: [...head.stateRefs.keys()], entries: [...head.stateRefs] }
        : {
            info: undefined,
            parent: plan.parent,
            chainLength: plan.parent.chainLength + 1,
            keys: plan.keys,
            entries: plan.keys.map((k) => [k, head.stateRefs.get(k)!]),
          };
    head.snapshot = snapshotAfter;
  }
  head.extremities = [ref];

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

  return {
    head,
    ref,
    pdu,
    json,
    event,
    stateKey: key,
    snapshotBefore,
    snapshotAfter,
    unsigned,
    txn: draft.txn,
    summary: stateChanged ? head.summary() : undefined,
    redactionTarget,
    streamOrdering: undefined,
  };
}
