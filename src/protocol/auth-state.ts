// What the authorization rules read of a room state: the create event, power levels, memberships
// and the join rule, looked up once per check.

import { stateKey, type RoomEvent, type StateLookup } from './events.js';
import {
  powerLevelsFromEvents,
  roomCreator,
  userPowerLevel,
  type PowerLevels,
} from './power-levels.js';
import type { RoomVersion } from './room-versions.js';

export type AuthResult = { allowed: true } | { allowed: false; reason: string };

export const ALLOW: AuthResult = Object.freeze({ allowed: true });

export function deny(reason: string): AuthResult {
  return { allowed: false, reason };
}

/** The server name of a user, room or (v1–v2) event id: everything after the first colon. */
export function domainOf(id: string): string | undefined {
  const colon = id.indexOf(':');
  return colon < 0 ? undefined : id.slice(colon + 1);
}

export class AuthStateView {
  private levelsCache: PowerLevels | undefined;

  constructor(
    readonly state: StateLookup,
    readonly version: RoomVersion,
  ) {}

  get(type: string, key: string): RoomEvent | undefined {
    return this.state.get(stateKey(type, key));
  }

  get create(): RoomEvent | undefined {
    return this.get('m.room.create', '');
  }

  get powerLevelsEvent(): RoomEvent | undefined {
    return this.get('m.room.power_levels', '');
  }

  get creator(): string | undefined {
    return roomCreator(this.create, this.version);
  }

  get levels(): PowerLevels {
    this.levelsCache ??= powerLevelsFromEvents(this.powerLevelsEvent, this.create, this.version);
    return this.levelsCache;
  }

  userLevel(userId: string): number {
    return userPowerLevel(this.levels, userId);
  }

  /** A user's membership; `leave` when the state has no member event for them. */
  membership(userId: string): string {
    const membership = this.get('m.room.member', userId)?.content.membership;
    return typeof membership === 'string' ? membership : 'leave';
  }

  /**
   * The room's join rule. Without a join_rules event (or without `join_rule` in it) the room
   * counts as invite-only, as deployed servers agree; the spec's rules leave this case open.
   */
  get joinRule(): string | undefined {
    const event = this.get('m.room.join_rules', '');
    if (event === undefined || !Object.hasOwn(event.content, 'join_rule')) return 'invite';
    const rule = event.content.join_rule;
    return typeof rule === 'string' ? rule : undefined;
  }
}
