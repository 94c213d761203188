// rooms.invite and rooms.knock: the stripped state the room server stored with the invite
// (unsigned.invite_room_state) or knock (unsigned.knock_room_state), followed by the member
// event itself. Invites from ignored users are not shown.

import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { toClientEvent } from '../rooms/client-event.js';
import type { StoredEvent } from '../rooms/stored-event.js';
import type { SyncPass } from './pass.js';
import type { InvitedRoomSection, KnockedRoomSection } from './response.js';
import type { StrippedPlan } from './room-plans.js';

function strippedStateOf(e: StoredEvent, key: 'invite_room_state' | 'knock_room_state'): JsonObject[] {
  const stored = e.unsigned?.[key];
  return Array.isArray(stored) ? stored.filter(isJsonObject) : [];
}

/** The member event in client form, without the stripped state it carries. */
function memberEvent(e: StoredEvent, pass: SyncPass): JsonObject {
  const event = toClientEvent(e, { now: pass.now, viewer: { userId: pass.userId, deviceId: pass.deviceId } });
  const unsigned = { ...event.unsigned };
  delete unsigned['invite_room_state'];
  delete unsigned['knock_room_state'];
  return { ...event, unsigned } as unknown as JsonObject;
}

export function inviteSections(pass: SyncPass, plans: readonly StrippedPlan[], ignored: ReadonlySet<string>): Record<string, InvitedRoomSection> {
  const out: Record<string, InvitedRoomSection> = {};
  for (const p of plans) {
    if (ignored.has(p.event.sender)) continue;
    out[p.roomId] = { invite_state: { events: [...strippedStateOf(p.event, 'invite_room_state'), memberEvent(p.event, pass)] } };
  }
  return out;
}

export function knockSections(pass: SyncPass, plans: readonly StrippedPlan[]): Record<string, KnockedRoomSection> {
  const out: Record<string, KnockedRoomSection> = {};
  for (const p of plans) {
    out[p.roomId] = { knock_state: { events: [...strippedStateOf(p.event, 'knock_room_state'), memberEvent(p.event, pass)] } };
  }
  return out;
}
