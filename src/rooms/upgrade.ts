// POST /rooms/{roomId}/upgrade (client API, "Room upgrades"), as the spec's server behaviour lists it
// and as the reference server does it:
// 1. the user must be joined and allowed to send m.room.tombstone in the old room;
// 2. a new room of the asked version, whose m.room.create names its predecessor (the old room and
//    its last event) and keeps the old room's type and m.federate;
// 3. the old room's transferable state copied into it (below), the power levels with every level
//    as an integer; the upgrading user's level is raised for as long as the copy needs, then put back;
//    bans copied as bans;
// 4. this server's aliases of the old room moved to the new one, the canonical alias with them, and
//    the directory listing too;
// 5. m.room.tombstone sent in the old room, naming the new one;
// 6. the old room's power levels restricted: events_default and invite raised to
//    max(50, users_default + 1);
// 7. each member's tags and m.direct entries for the old room carried to the new one, for the
//    upgrading user now and for others when they join it (RoomUpgrades.joined).

import type { Kysely } from 'kysely';
import { stateKey, toRoomEvent } from '../protocol/events.js';
import { HearthError } from '../protocol/errors.js';
import { isUserId } from '../protocol/ids.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { parsePowerLevels, powerLevelsFromEvents, requiredPowerLevelForEvent, userPowerLevel, type PowerLevels } from '../protocol/power-levels.js';
import { redactEvent } from '../protocol/redaction.js';
import { getRoomVersion, type RoomVersion } from '../protocol/room-versions.js';
import { moveAliases } from '../storage/rooms/aliases.js';
import { roomById, setRoomPublic } from '../storage/rooms/rooms.js';
import type { Schema } from '../storage/schema.js';
import type { Actor } from './actor.js';
import type { InitialStateEvent } from './perform/create.js';
import type { RoomService } from './service.js';
import { membershipOf, type StoredEvent } from './stored-event.js';

const TOMBSTONE = 'm.room.tombstone';
/** Rooms whose predecessor is kept in memory at most. */
const MAX_PREDECESSORS = 10_000;

/** State copied as it is, one key each. */
const COPIED_STATE = [
  'm.room.join_rules',
  'm.room.name',
  'm.room.topic',
  'm.room.avatar',
  'm.room.history_visibility',
  'm.room.guest_access',
  'm.room.encryption',
  'm.room.server_acl',
  'm.room.pinned_events',
];
/** State copied under every state key (an empty m.space.child is a removed child: left behind). */
const COPIED_STATE_ALL_KEYS = ['m.space.child', 'm.space.parent', 'im.ponies.room_emotes'];

function asRoomEvent(e: StoredEvent | undefined) {
  if (e === undefined) return undefined;
  return toRoomEvent(e.redactedBy === undefined ? e.pdu : redactEvent(e.pdu, e.version), e.eventId, e.version);
}

/** Power levels content with every level an integer (as v10+ rooms require), other keys kept. */
function integerPowerLevels(original: JsonObject, levels: PowerLevels): JsonObject {
  const out: JsonObject = { ...original };
  out.users_default = levels.usersDefault;
  out.events_default = levels.eventsDefault;
  out.state_default = levels.stateDefault;
  out.ban = levels.ban;
  out.kick = levels.kick;
  out.redact = levels.redact;
  out.invite = levels.invite;
  out.users = Object.fromEntries(levels.users);
  out.events = Object.fromEntries(levels.events);
  out.notifications = Object.fromEntries(levels.notifications);
  return out;
}

export interface RoomUpgradesDeps {
  readonly rooms: RoomService;
  readonly db: Kysely<Schema>;
  /** Carries a member's tags and m.direct entries from the old room to the new one. */
  carryOver(userId: string, oldRoomId: string, newRoomId: string): Promise<void>;
  readonly log: { warn(message: string, details?: object): void };
}

export class RoomUpgrades {
  /** Upgrades under way, by old room: the same request again (a client's retry) gets the same answer. */
  private readonly running = new Map<string, { readonly key: string; readonly answer: Promise<{ replacement_room: string }> }>();
  /** Rooms' predecessors (null: none), by room. */
  private readonly predecessors = new Map<string, string | null>();

  constructor(private readonly deps: RoomUpgradesDeps) {}

  async upgrade(actor: Actor, roomId: string, body: JsonObject): Promise<{ replacement_room: string }> {
    const newVersion = body['new_version'];
    if (newVersion === undefined || newVersion === null) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing params: new_version');
    // As the reference server: anything that names no version this server knows, a number included.
    const target = typeof newVersion === 'string' ? getRoomVersion(newVersion) : undefined;
    if (target === undefined) throw new HearthError(400, 'M_UNSUPPORTED_ROOM_VERSION', 'Your homeserver does not support this room version');
    // Creators beside the upgrading user, where the new version has them (ignored otherwise).
    const more = body['additional_creators'];
    if (more !== undefined && (!Array.isArray(more) || !more.every((u) => typeof u === 'string' && isUserId(u)))) {
      throw HearthError.invalidParam('additional_creators must be a list of user IDs');
    }
    const additionalCreators = target.privilegedCreators ? [...new Set((more ?? []) as string[])].filter((u) => u !== actor.userId) : [];
    const key = JSON.stringify([actor.userId, target.id, additionalCreators]);
    const under = this.running.get(roomId);
    if (under !== undefined) {
      if (under.key === key) return under.answer;
      throw new HearthError(400, 'M_UNKNOWN', 'Another upgrade of this room is under way');
    }
    const answer = this.run(actor, roomId, target, additionalCreators);
    this.running.set(roomId, { key, answer });
    try {
      return await answer;
    } finally {
      this.running.delete(roomId);
    }
  }

  /** After a local user joined `roomId`: their tags and m.direct entries of its predecessor follow them. */
  async joined(userId: string, roomId: string): Promise<void> {
    const predecessor = await this.predecessorOf(roomId);
    if (predecessor !== undefined) await this.deps.carryOver(userId, predecessor, roomId);
  }

  /** The room `roomId` replaced, from its create event alone (kept: a create event never changes). */
  private async predecessorOf(roomId: string): Promise<string | undefined> {
    if (this.predecessors.has(roomId)) return this.predecessors.get(roomId) ?? undefined;
    const row = await this.deps.rooms.reader.roomRow(roomId);
    if (row === undefined || row.state_snapshot_nid === null) return undefined;
    const [create] = (await this.deps.rooms.reader.stateSubsetOfSnapshot(Number(row.state_snapshot_nid), 'm.room.create', [''])).values();
    const predecessor = create?.pdu.content['predecessor'];
    const found = isJsonObject(predecessor) && typeof predecessor['room_id'] === 'string' ? predecessor['room_id'] : null;
    if (this.predecessors.size >= MAX_PREDECESSORS) this.predecessors.clear();
    this.predecessors.set(roomId, found);
    return found ?? undefined;
  }

  private async run(actor: Actor, oldRoomId: string, target: RoomVersion, additionalCreators: readonly string[]): Promise<{ replacement_room: string }> {
    const { rooms, db } = this.deps;
    const room = await rooms.reader.roomInfo(oldRoomId);
    if (room === undefined) throw HearthError.notFound(`Unknown room id ${oldRoomId}`);
    const state = await rooms.reader.currentState(oldRoomId);
    const member = state.get(stateKey('m.room.member', actor.userId));
    if (member === undefined || membershipOf(member) !== 'join') throw HearthError.forbidden(`User ${actor.userId} is not in room ${oldRoomId}`);
    // 1. Upgrading ends with the old room's tombstone: the user must be allowed to send one.
    const create = state.get(stateKey('m.room.create', ''));
    const plEvent = state.get(stateKey('m.room.power_levels', ''));
    const levels = powerLevelsFromEvents(asRoomEvent(plEvent), asRoomEvent(create), room.version);
    if (userPowerLevel(levels, actor.userId) < requiredPowerLevelForEvent(levels, TOMBSTONE, true)) {
      throw HearthError.forbidden('You do not have permission to upgrade this room');
    }

    // 2. The new room's m.room.create.
    const oldCreate = create?.pdu.content ?? {};
    const [last] = await rooms.reader.roomEvents(room.nid, {}, 'desc', 1);
    const creationContent: JsonObject = { predecessor: { room_id: oldRoomId, ...(last !== undefined ? { event_id: last.eventId } : {}) } };
    if (oldCreate['m.federate'] === false) creationContent['m.federate'] = false;
    if (typeof oldCreate['type'] === 'string') creationContent['type'] = oldCreate['type'];
    if (additionalCreators.length > 0) creationContent['additional_creators'] = [...additionalCreators];

    // 3. The state copied, power levels first (createRoom sends them before the rest).
    const original = integerPowerLevels(plEvent?.pdu.content ?? {}, levels);
    const initialState: InitialStateEvent[] = [];
    // The new room's own levels: v12 creators (the upgrading user and any others named) have
    // infinite power and are never listed; from a v12 room to an earlier version, the old room's
    // creators are listed at the highest level in use.
    const settled = structuredClone(original);
    const settledUsers = settled.users as Record<string, number>;
    const events = settled.events as Record<string, number>;
    const needed = Math.max(levels.stateDefault, levels.ban, ...Object.values(events));
    if (target.privilegedCreators) for (const u of [actor.userId, ...additionalCreators]) delete settledUsers[u];
    else for (const u of levels.creators ?? []) settledUsers[u] = Math.max(needed, 100);
    const powerLevels = structuredClone(settled);
    const users = powerLevels.users as Record<string, number>;
    const raised = !target.privilegedCreators && userPowerLevel(parsePowerLevels(settled, target), actor.userId) < needed;
    if (raised) users[actor.userId] = needed;
    initialState.push({ type: 'm.room.power_levels', stateKey: '', content: powerLevels });
    const bans: StoredEvent[] = [];
    for (const e of state.values()) {
      const content = e.redactedBy === undefined ? e.pdu.content : redactEvent(e.pdu, e.version).content;
      if (e.type === 'm.room.member') {
        if (membershipOf(e) === 'ban') bans.push(e);
        continue;
      }
      if (e.stateKey === '' && COPIED_STATE.includes(e.type)) initialState.push({ type: e.type, stateKey: '', content });
      else if (e.stateKey !== undefined && COPIED_STATE_ALL_KEYS.includes(e.type) && Object.keys(content).length > 0) {
        initialState.push({ type: e.type, stateKey: e.stateKey, content });
      }
    }
    const oldRow = await roomById(db, oldRoomId);
    const published = oldRow !== undefined && oldRow.is_public !== 0;
    const { roomId: newRoomId } = await rooms.createRoom(actor, {
      roomVersion: target.id,
      creationContent,
      initialState,
      // Every preset event is in the copied state, bar guest access when the old room had none
      // (then members' guests may join, as the reference server's upgrade also leaves it).
      preset: 'private_chat',
      visibility: published ? 'public' : 'private',
    });
    for (const ban of bans) {
      const reason = ban.pdu.content['reason'];
      await rooms.ban(actor, newRoomId, ban.stateKey!, typeof reason === 'string' ? { reason } : {});
    }

    // 4. Aliases, the canonical alias and the directory listing.
    const moved = await moveAliases(db, oldRoomId, newRoomId);
    if (published) await setRoomPublic(db, room.nid, false);
    const canonical = state.get(stateKey('m.room.canonical_alias', ''));
    if (canonical !== undefined && canonical.redactedBy === undefined) await this.moveCanonicalAlias(actor, oldRoomId, newRoomId, canonical.pdu.content, moved);

    // 5. The tombstone.
    await rooms.sendState(actor, oldRoomId, TOMBSTONE, '', { body: 'This room has been replaced', replacement_room: newRoomId });

    // 6. The old room restricted, when the user may still change its power levels.
    const restricted = Math.max(50, levels.usersDefault + 1);
    if (levels.eventsDefault < restricted || levels.invite < restricted) {
      const content = { ...original, events_default: Math.max(levels.eventsDefault, restricted), invite: Math.max(levels.invite, restricted) };
      await rooms.sendState(actor, oldRoomId, 'm.room.power_levels', '', content).catch((err: unknown) => {
        this.deps.log.warn('room upgrade: the old room\'s power levels could not be restricted', { room: oldRoomId, error: String(err) });
      });
    }
    // The upgrading user's level back to what it was.
    if (raised) await rooms.sendState(actor, newRoomId, 'm.room.power_levels', '', settled);

    // 7. The upgrading user's tags and direct chats.
    await this.deps.carryOver(actor.userId, oldRoomId, newRoomId);
    return { replacement_room: newRoomId };
  }

  /** This server's aliases leave the old room's m.room.canonical_alias for the new room's. */
  private async moveCanonicalAlias(actor: Actor, oldRoomId: string, newRoomId: string, content: JsonObject, moved: readonly string[]): Promise<void> {
    const ours = (a: unknown): a is string => typeof a === 'string' && moved.includes(a);
    const oldContent: JsonObject = { ...content };
    const newContent: JsonObject = {};
    if (ours(content['alias'])) {
      newContent['alias'] = content['alias'];
      delete oldContent['alias'];
    }
    const alt = Array.isArray(content['alt_aliases']) ? content['alt_aliases'] : [];
    const movedAlt = alt.filter(ours);
    if (movedAlt.length > 0) {
      newContent['alt_aliases'] = movedAlt;
      const kept = alt.filter((a) => !ours(a));
      if (kept.length > 0) oldContent['alt_aliases'] = kept;
      else delete oldContent['alt_aliases'];
    }
    if (Object.keys(newContent).length === 0) return;
    const send = async (roomId: string, c: JsonObject) => {
      await this.deps.rooms.sendState(actor, roomId, 'm.room.canonical_alias', '', c).catch((err: unknown) => {
        this.deps.log.warn('room upgrade: the canonical alias could not be moved', { room: roomId, error: String(err) });
      });
    };
    await send(oldRoomId, oldContent);
    await send(newRoomId, newContent);
  }
}
