// Room versions 1–12 as rule records. Code asks a record (`version.knockJoinRule`), never compares
// version strings. Each flag names one difference the spec's room-version pages describe.

export type EventIdFormat =
  /** v1–v2: `$opaque:server`, chosen by the origin; auth_events/prev_events are [id, {sha256}] pairs. */
  | 'v1'
  /** v3: `$` + standard unpadded base64 of the reference hash; plain id lists. */
  | 'v3'
  /** v4+: `$` + URL-safe unpadded base64 of the reference hash. */
  | 'v4';

/** How this project describes each version to operators (the interface's legacy/stable/current/latest). */
export type RoomVersionStatus = 'legacy' | 'stable' | 'current' | 'latest';

export interface RoomVersion {
  readonly id: string;
  readonly status: RoomVersionStatus;
  /** What `/capabilities` advertises in `m.room_versions.available`. */
  readonly stability: 'stable' | 'unstable';
  readonly eventIdFormat: EventIdFormat;
  /** v2.1 (v12+): iterative auth checks start from an empty state; the full conflicted set takes the conflicted state subgraph. */
  readonly stateResolution: 'v1' | 'v2' | 'v2.1';
  /** v5+: a signature only counts if the key was valid at the event's origin_server_ts. */
  readonly enforceKeyValidity: boolean;
  /** v1–v5: m.room.aliases has its own auth rule and redaction keeps `aliases`. */
  readonly specialCaseAliases: boolean;
  /** v6+: events must be strict canonical JSON (integers within ±(2^53−1), no floats). */
  readonly strictCanonicalJson: boolean;
  /** v6+: changes to `notifications` in power levels are checked like other levels. */
  readonly limitNotificationsPowerLevels: boolean;
  /** v7+: join rule `knock` and membership `knock`. */
  readonly knockJoinRule: boolean;
  /** v8+: join rule `restricted` with `allow`; redaction keeps join_rules `allow`. */
  readonly restrictedJoinRule: boolean;
  /** v9+: redaction keeps `join_authorised_via_users_server` in member content. */
  readonly restrictedJoinRuleFix: boolean;
  /** v10+: join rule `knock_restricted`. */
  readonly knockRestrictedJoinRule: boolean;
  /** v10+: power-level values must be JSON integers (no numeric strings). */
  readonly enforceIntPowerLevels: boolean;
  /** v11+: m.room.create has no `creator`; the creator is the create event's sender. */
  readonly implicitRoomCreator: boolean;
  /** v11+: the v11 redaction algorithm (keeps `redacts` in content, all of m.room.create, `invite` in power levels, drops `origin`, `membership`, `prev_state`). */
  readonly updatedRedactionRules: boolean;
  /**
   * v12+: the room id is the create event's id with `!` for `$`. The create event has no
   * `room_id`, and no event cites it in `auth_events`: the room id names it.
   */
  readonly createEventRoomId: boolean;
  /**
   * v12+: the creators (the create event's sender and `additional_creators`) have infinite power,
   * and power levels may not list them.
   */
  readonly privilegedCreators: boolean;
}

interface Flags {
  eventIdFormat: EventIdFormat;
  stateResolution: 'v1' | 'v2' | 'v2.1';
  enforceKeyValidity: boolean;
  specialCaseAliases: boolean;
  strictCanonicalJson: boolean;
  limitNotificationsPowerLevels: boolean;
  knockJoinRule: boolean;
  restrictedJoinRule: boolean;
  restrictedJoinRuleFix: boolean;
  knockRestrictedJoinRule: boolean;
  enforceIntPowerLevels: boolean;
  implicitRoomCreator: boolean;
  updatedRedactionRules: boolean;
  createEventRoomId: boolean;
  privilegedCreators: boolean;
}

const v1: Flags = {
  eventIdFormat: 'v1',
  stateResolution: 'v1',
  enforceKeyValidity: false,
  specialCaseAliases: true,
  strictCanonicalJson: false,
  limitNotificationsPowerLevels: false,
  knockJoinRule: false,
  restrictedJoinRule: false,
  restrictedJoinRuleFix: false,
  knockRestrictedJoinRule: false,
  enforceIntPowerLevels: false,
  implicitRoomCreator: false,
  updatedRedactionRules: false,
  createEventRoomId: false,
  privilegedCreators: false,
};
const v2: Flags = { ...v1, stateResolution: 'v2' };
const v3: Flags = { ...v2, eventIdFormat: 'v3' };
const v4: Flags = { ...v3, eventIdFormat: 'v4' };
const v5: Flags = { ...v4, enforceKeyValidity: true };
const v6: Flags = {
  ...v5,
  specialCaseAliases: false,
  strictCanonicalJson: true,
  limitNotificationsPowerLevels: true,
};
const v7: Flags = { ...v6, knockJoinRule: true };
const v8: Flags = { ...v7, restrictedJoinRule: true };
const v9: Flags = { ...v8, restrictedJoinRuleFix: true };
const v10: Flags = { ...v9, knockRestrictedJoinRule: true, enforceIntPowerLevels: true };
const v11: Flags = { ...v10, implicitRoomCreator: true, updatedRedactionRules: true };
const v12: Flags = { ...v11, stateResolution: 'v2.1', createEventRoomId: true, privilegedCreators: true };

function record(id: string, status: RoomVersionStatus, flags: Flags): RoomVersion {
  return Object.freeze({ id, status, stability: 'stable', ...flags });
}

export const roomVersions: Readonly<Record<string, RoomVersion>> = Object.freeze({
  '1': record('1', 'legacy', v1),
  '2': record('2', 'legacy', v2),
  '3': record('3', 'legacy', v3),
  '4': record('4', 'legacy', v4),
  '5': record('5', 'legacy', v5),
  '6': record('6', 'stable', v6),
  '7': record('7', 'stable', v7),
  '8': record('8', 'stable', v8),
  '9': record('9', 'stable', v9),
  '10': record('10', 'current', v10),
  '11': record('11', 'stable', v11),
  '12': record('12', 'latest', v12),
});

export const DEFAULT_ROOM_VERSION = '10';

/** The rule record for `id`, or undefined for a version this server does not know. */
export function getRoomVersion(id: string): RoomVersion | undefined {
  return Object.hasOwn(roomVersions, id) ? roomVersions[id] : undefined;
}

/** The `m.room_versions` capability as the client API's /capabilities advertises it. */
export function roomVersionsCapability(defaultVersion = DEFAULT_ROOM_VERSION): {
  default: string;
  available: Record<string, 'stable' | 'unstable'>;
} {
  const available: Record<string, 'stable' | 'unstable'> = {};
  for (const v of Object.values(roomVersions)) available[v.id] = v.stability;
  return { default: defaultVersion, available };
}
