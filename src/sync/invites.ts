// rooms.invite and rooms.knock: the stripped state the room server stored with the invite
// (unsigned.invite_room_state) or knock (unsigned.knock_room_state), followed by the member
// event itself. The stored events are StrippedStateEvents, exactly `type`, `state_key`, `content`
// and `sender` (client API, "Stripped state"); the member event comes whole, as the reference
// server serves it (event_id, origin_server_ts, unsigned ...), so that clients can date the
// invite and tell it apart. Invites from ignored users are not shown.

import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { toClientEvent } from '../rooms/client-event.js';
import type { StoredEvent } from '../rooms/stored-event.js';
import type { SyncPass } from './pass.js';
import type { InvitedRoomSection, KnockedRoomSection } from './response.js';
import type { StrippedPlan } from './room-plans.js';

type StateKind = 'invite_room_state' | 'knock_room_state';

/** The event cut down to the stripped keys; undefined when one of them is missing or mistyped. */
function stripped(e: JsonObject): JsonObject | undefined {
  const { type, state_key, content, sender } = e;
  if (typeof type !== 'string' || typeof state_key !== 'string' || typeof sender !== 'string' || !isJsonObject(content)) return undefined;
  return { type, state_key, content, sender };
}

/** The member event as a room section serves it (redacted, if it is), without the stripped state in unsigned. */
function memberEvent(e: StoredEvent, kind: StateKind, pass: SyncPass): JsonObject {
  const event = toClientEvent(e, { now: pass.now, viewer: { userId: pass.userId, deviceId: pass.deviceId }, omitRoomId: true, format: pass.filter.eventFormat });
  const { [kind]: _stripped, ...unsigned } = event.unsigned;
  return { ...event, unsigned } as unknown as JsonObject;
}

/** The stored stripped state, then the member event. */
function strippedStateOf(e: StoredEvent, kind: StateKind, pass: SyncPass): JsonObject[] {
  const stored = e.unsigned?.[kind];
  const state = (Array.isArray(stored) ? stored.filter(isJsonObject) : []).map(stripped).filter((s) => s !== undefined);
  return [...state, memberEvent(e, kind, pass)];
}

export function inviteSections(pass: SyncPass, plans: readonly StrippedPlan[], ignored: ReadonlySet<string>): Record<string, InvitedRoomSection> {
  const out: Record<string, InvitedRoomSection> = {};
  for (const p of plans) {
    if (ignored.has(p.event.sender)) continue;
    out[p.roomId] = { invite_state: { events: strippedStateOf(p.event, 'invite_room_state', pass) } };
  }
  return out;
}

export function knockSections(pass: SyncPass, plans: readonly StrippedPlan[]): Record<string, KnockedRoomSection> {
  const out: Record<string, KnockedRoomSection> = {};
  for (const p of plans) {
    out[p.roomId] = { knock_state: { events: strippedStateOf(p.event, 'knock_room_state', pass) } };
  }
  return out;
}
