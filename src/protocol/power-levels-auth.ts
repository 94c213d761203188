// The authorization rule for m.room.power_levels events: rule 9 from room version 6 on (10 in
// v1–v5 and v12; v10 adds the integer checks 9.1–9.2 and renumbers the rest, whose numbers are
// used here; v12 adds 10.4, creators never listed in `users`).

import { ALLOW, deny, type AuthResult, type AuthStateView } from './auth-state.js';
import type { RoomEvent } from './events.js';
import { isJsonObject, type JsonObject } from './json.js';
import {
  parsePowerLevels,
  roomCreators,
  parsePowerLevelValue,
  POWER_LEVEL_FIELDS,
  powerLevelsContentProblem,
} from './power-levels.js';
import type { RoomVersion } from './room-versions.js';

function ownLevel(content: JsonObject, field: string, version: RoomVersion): number | undefined {
  return Object.hasOwn(content, field) ? parsePowerLevelValue(content[field], version) : undefined;
}

export function checkPowerLevelsEvent(
  event: RoomEvent,
  view: AuthStateView,
  version: RoomVersion,
): AuthResult {
  // 9.1–9.3 (v1–v9: only `users` is checked, as rule 10.1 / 9.1).
  const problem = powerLevelsContentProblem(event.content, version);
  if (problem !== undefined) return deny(problem);

  // v12 10.4. `users` may not list a creator.
  const creators = roomCreators(view.create, version);
  if (creators !== undefined && isJsonObject(event.content.users)) {
    for (const user of Object.keys(event.content.users)) {
      if (creators.has(user)) return deny(`power levels: ${user} is a creator of the room and cannot be given a level`);
    }
  }

  // 9.4. No previous power_levels event: allow.
  const previous = view.powerLevelsEvent;
  if (previous === undefined) return ALLOW;

  const senderLevel = view.userLevel(event.sender);
  const oldContent = previous.content;
  const newContent = event.content;

  // 9.5. Top-level levels added, changed or removed: neither the old nor the new value may exceed
  // the sender's level.
  for (const field of POWER_LEVEL_FIELDS) {
    const oldLevel = ownLevel(oldContent, field, version);
    const newLevel = ownLevel(newContent, field, version);
    if (oldLevel === newLevel) continue;
    if (oldLevel !== undefined && oldLevel > senderLevel) {
      return deny(`power levels: cannot change "${field}" from ${oldLevel}, above the sender's ${senderLevel}`);
    }
    if (newLevel !== undefined && newLevel > senderLevel) {
      return deny(`power levels: cannot set "${field}" to ${newLevel}, above the sender's ${senderLevel}`);
    }
  }

  const oldLevels = parsePowerLevels(oldContent, version);
  const newLevels = parsePowerLevels(newContent, version);
  // `notifications` is only guarded from v6 on.
  const maps: Array<[string, ReadonlyMap<string, number>, ReadonlyMap<string, number>]> = [
    ['events', oldLevels.events, newLevels.events],
  ];
  if (version.limitNotificationsPowerLevels) {
    maps.push(['notifications', oldLevels.notifications, newLevels.notifications]);
  }
  for (const [name, oldMap, newMap] of maps) {
    // 9.6. Entries changed or removed: the old value may not exceed the sender's level.
    for (const [key, oldLevel] of oldMap) {
      if (newMap.get(key) === oldLevel) continue;
      if (oldLevel > senderLevel) {
        return deny(`power levels: cannot change "${name}.${key}" from ${oldLevel}, above the sender's ${senderLevel}`);
      }
    }
    // 9.7. Entries added or changed: the new value may not exceed the sender's level.
    for (const [key, newLevel] of newMap) {
      if (oldMap.get(key) === newLevel) continue;
      if (newLevel > senderLevel) {
        return deny(`power levels: cannot set "${name}.${key}" to ${newLevel}, above the sender's ${senderLevel}`);
      }
    }
  }

  // 9.8. Users changed or removed, other than the sender: the old value must be below the
  // sender's level.
  for (const [user, oldLevel] of oldLevels.users) {
    if (user === event.sender || newLevels.users.get(user) === oldLevel) continue;
    if (oldLevel >= senderLevel) {
      return deny(`power levels: cannot change ${user}'s level ${oldLevel}, not below the sender's ${senderLevel}`);
    }
  }
  // 9.9. Users added or changed: the new value may not exceed the sender's level.
  for (const [user, newLevel] of newLevels.users) {
    if (oldLevels.users.get(user) === newLevel) continue;
    if (newLevel > senderLevel) {
      return deny(`power levels: cannot give ${user} level ${newLevel}, above the sender's ${senderLevel}`);
    }
  }

  // 9.10. Otherwise, allow.
  return ALLOW;
}
