// POST /rooms/{roomId}/upgrade (client API, "Room upgrades"). The upgrade itself is not offered
// yet; the request is still checked as a real one would be, so that a client learns what is wrong
// with it first (a missing or unknown version, an unknown room, no right to upgrade) and only a
// request that could succeed is told that upgrades are not supported here.

import { stateKey, toRoomEvent } from '../protocol/events.js';
import { HearthError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/json.js';
import { powerLevelsFromEvents, requiredPowerLevelForEvent, userPowerLevel } from '../protocol/power-levels.js';
import { redactEvent } from '../protocol/redaction.js';
import { getRoomVersion } from '../protocol/room-versions.js';
import type { Actor } from './actor.js';
import type { RoomReader } from './reader.js';
import { membershipOf, type StoredEvent } from './stored-event.js';

const TOMBSTONE = 'm.room.tombstone';

function asRoomEvent(e: StoredEvent | undefined) {
  if (e === undefined) return undefined;
  return toRoomEvent(e.redactedBy === undefined ? e.pdu : redactEvent(e.pdu, e.version), e.eventId, e.version);
}

export class RoomUpgrades {
  constructor(private readonly reader: RoomReader) {}

  async upgrade(actor: Actor, roomId: string, body: JsonObject): Promise<never> {
    const newVersion = body['new_version'];
    if (newVersion === undefined || newVersion === null) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing params: new_version');
    // As Synapse: anything that names no version this server knows, a number included.
    if (typeof newVersion !== 'string' || getRoomVersion(newVersion) === undefined) {
      throw new HearthError(400, 'M_UNSUPPORTED_ROOM_VERSION', 'Your homeserver does not support this room version');
    }
    const room = await this.reader.roomInfo(roomId);
    if (room === undefined) throw HearthError.notFound(`Unknown room id ${roomId}`);
    const state = await this.reader.currentState(roomId);
    const member = state.get(stateKey('m.room.member', actor.userId));
    if (member === undefined || membershipOf(member) !== 'join') throw HearthError.forbidden(`User ${actor.userId} is not in room ${roomId}`);
    // Upgrading starts with the old room's tombstone: the user must be allowed to send one.
    const levels = powerLevelsFromEvents(asRoomEvent(state.get(stateKey('m.room.power_levels', ''))), asRoomEvent(state.get(stateKey('m.room.create', ''))), room.version);
    if (userPowerLevel(levels, actor.userId) < requiredPowerLevelForEvent(levels, TOMBSTONE, true)) {
      throw HearthError.forbidden('You do not have permission to upgrade this room');
    }
    throw new HearthError(400, 'M_UNKNOWN', 'Room upgrades are not supported by this server');
  }
}
