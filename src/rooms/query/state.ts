// Reading room state: GET /rooms/{roomId}/state and /state/{type}/{stateKey}. Members and readers
// of world_readable rooms read the current state; a user who left (or was banned) reads the state
// as it was at their departure.

import { HearthError } from '../../protocol/errors.js';
import { stateKey, type StateKey } from '../../protocol/events.js';
import type { JsonObject } from '../../protocol/json.js';
import type { Actor } from '../actor.js';
import type { ClientEvent } from '../client-event.js';
import type { RoomCore } from '../core.js';
import { byStreamOrder, type StoredEvent } from '../stored-event.js';
import { isDeparted, isJoined, roomAccess, type RoomAccess } from './access.js';

/** The user's departure event when they left or were banned, else undefined. */
export async function departureEvent(core: RoomCore, access: RoomAccess): Promise<StoredEvent | undefined> {
  if (!isDeparted(access)) return undefined;
  const nid = Number(access.membership!.event_nid);
  return (await core.reader.eventsByNids([nid])).get(nid);
}

/** The state the user may read; 403 when they may read none. */
export async function readableState(core: RoomCore, access: RoomAccess, userId: string): Promise<Map<StateKey, StoredEvent>> {
  const current = (): Promise<Map<StateKey, StoredEvent>> =>
    access.row.state_snapshot_nid === null ? Promise.resolve(new Map()) : core.reader.stateOfSnapshot(Number(access.row.state_snapshot_nid));
  if (isJoined(access)) return current();
  const departure = await departureEvent(core, access);
  if (departure !== undefined) return core.reader.stateAfter(departure);
  if (access.worldReadable) return current();
  throw HearthError.forbidden(`User ${userId} is not in room ${access.room.roomId}, and the room is not world_readable`);
}

export async function roomState(core: RoomCore, actor: Actor, roomId: string): Promise<ClientEvent[]> {
  const access = await roomAccess(core, roomId, actor.userId);
  const state = await readableState(core, access, actor.userId);
  const events = [...state.values()].sort(byStreamOrder);
  return core.reader.clientEvents(events, { now: core.now(), viewer: actor });
}

/** One state entry: its content, or (format "event") the whole event; 404 when unset. */
export async function roomStateEvent(
  core: RoomCore,
  actor: Actor,
  roomId: string,
  type: string,
  key: string,
  format: 'content' | 'event' = 'content',
): Promise<JsonObject | ClientEvent> {
  const access = await roomAccess(core, roomId, actor.userId);
  const state = await readableState(core, access, actor.userId);
  const event = state.get(stateKey(type, key));
  if (event === undefined) throw HearthError.notFound(`No ${type} state with key "${key}" in the room`);
  const [client] = await core.reader.clientEvents([event], { now: core.now(), viewer: actor });
  return format === 'event' ? client! : client!.content;
}
