// Redacting an event. A user may redact their own events; others' need the room's redact level.
// v11 rooms carry `redacts` in content, earlier ones at the top level. Whether the redaction takes
// effect is decided with the protocol core's redactionApplies when it is built.

import { HearthError } from '../../protocol/errors.js';
import type { JsonObject } from '../../protocol/json.js';
import { powerLevelsFromEvents, userPowerLevel } from '../../protocol/power-levels.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { isServed, roomEventOf } from '../stored-event.js';

export async function redactEvent(
  core: RoomCore,
  actor: Actor,
  roomId: string,
  eventId: string,
  options: { reason?: string; txnId?: string } = {},
): Promise<string> {
  const head = await core.head(roomId);
  const target = await core.reader.event(eventId);
  if (target === undefined || !isServed(target)) throw HearthError.notFound('Event not found');
  if (target.roomId !== roomId) {
    // As the reference server answers: a member of the room learns that the event is elsewhere;
    // anyone else is refused as the auth rules would refuse their redaction.
    if (head.membership(actor.userId) !== 'join') throw HearthError.forbidden(`User ${actor.userId} is not in room ${roomId}`);
    throw new HearthError(400, 'M_UNKNOWN', 'Cannot redact event from a different room');
  }
  const redacted = roomEventOf(target);
  const txn = options.txnId !== undefined && actor.deviceId !== null ? { deviceId: actor.deviceId, txnId: options.txnId } : undefined;
  return core.send(
    roomId,
    (head) => {
      if (target.sender !== actor.userId) {
        const levels = powerLevelsFromEvents(head.get('m.room.power_levels'), head.get('m.room.create'), head.version);
        if (userPowerLevel(levels, actor.userId) < levels.redact) throw HearthError.forbidden("You don't have permission to redact events");
      }
      const content: JsonObject = {};
      if (options.reason !== undefined) content.reason = options.reason;
      if (head.version.updatedRedactionRules) content.redacts = eventId;
      return { type: 'm.room.redaction', sender: actor.userId, content, redacts: redacted, ...(txn !== undefined ? { txn } : {}) };
    },
    txn === undefined ? undefined : { sender: actor.userId, ...txn },
  );
}
