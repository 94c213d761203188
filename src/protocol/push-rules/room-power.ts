// What push-rule evaluation reads of a room's m.room.power_levels: the sender's level (users,
// then users_default) and the `notifications` levels (sender_notification_permission).

import { isJsonObject, type JsonObject } from '../json.js';

export interface SenderPower {
  readonly senderPowerLevel: number;
  readonly notificationPowerLevels?: Readonly<Record<string, unknown>>;
}

/**
 * A reader of the sender's power from the room's power-levels content (undefined: none set), and
 * in a v12 room its creators (infinite power).
 */
export function senderPowerIn(powerLevels: JsonObject | undefined, creators?: ReadonlySet<string>): (sender: string) => SenderPower {
  const users = isJsonObject(powerLevels?.['users']) ? (powerLevels['users'] as JsonObject) : {};
  const usersDefault = typeof powerLevels?.['users_default'] === 'number' ? powerLevels['users_default'] : 0;
  const notifications = isJsonObject(powerLevels?.['notifications']) ? (powerLevels['notifications'] as JsonObject) : undefined;
  return (sender) => {
    const level = creators?.has(sender) === true ? Infinity : users[sender];
    return {
      senderPowerLevel: typeof level === 'number' ? level : usersDefault,
      ...(notifications !== undefined ? { notificationPowerLevels: notifications } : {}),
    };
  };
}
