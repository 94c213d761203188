// Account data, global and per room, on the account_data stream: what clients store for
// themselves (m.direct, im.ponies.user_emotes, anything), room tags (m.tag) and the ignore list
// (m.ignored_user_list). The server-managed types m.fully_read and m.push_rules cannot be set here;
// m.push_rules is stored in a compact form (push-rules.ts) and always read merged with the defaults.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isUserId, parseRoomId } from '../protocol/ids.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import { allocateStreamPosition } from '../streams/positions.js';
import {
  GLOBAL_ROOM,
  selectAccountData,
  selectAccountDataSince,
  upsertAccountData,
} from '../storage/user-data/account-data.js';
import type { StreamBus } from '../streams/bus.js';
import { PUSH_RULES_TYPE, pushRulesContent } from './push-rules.js';

export const TAG_TYPE = 'm.tag';
export const IGNORED_USERS_TYPE = 'm.ignored_user_list';
export const FULLY_READ_TYPE = 'm.fully_read';
/** Types only the server writes (client-server API, "Client Config", server behaviour). */
const SERVER_MANAGED: Readonly<Record<string, string>> = {
  [FULLY_READ_TYPE]: 'Cannot set m.fully_read through this API. Use /rooms/{roomId}/read_markers',
  [PUSH_RULES_TYPE]: 'Cannot set m.push_rules through this API. Use /pushrules',
};
const MAX_TYPE_LENGTH = 255;
const MAX_TAG_LENGTH = 255;

export interface AccountDataEvent {
  readonly type: string;
  readonly content: JsonObject;
}

/** Account data for a sync: what changed after a position (everything for 0). */
export interface AccountDataChanges {
  readonly global: AccountDataEvent[];
  readonly rooms: Map<string, AccountDataEvent[]>;
  /** The highest position among the changes, or the asked position when there are none. */
  readonly position: number;
}

export interface AccountDataServiceDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
}

function requireSelf(requesterId: string, userId: string, verb: 'add' | 'get'): void {
  if (requesterId !== userId) throw HearthError.forbidden(`Cannot ${verb} account data for other users.`);
}

function checkType(type: string): void {
  if (type.length === 0 || type.length > MAX_TYPE_LENGTH) {
    throw HearthError.invalidParam(`Account data type must be 1 to ${MAX_TYPE_LENGTH} characters`);
  }
  const managed = SERVER_MANAGED[type];
  if (managed !== undefined) throw new HearthError(405, 'M_BAD_JSON', managed);
}

/** m.ignored_user_list must hold `ignored_users`: an object keyed by user IDs. */
function checkIgnoredUsers(content: JsonObject): void {
  const ignored = content['ignored_users'];
  if (!isJsonObject(ignored)) throw HearthError.badJson("m.ignored_user_list needs an 'ignored_users' object");
  for (const [userId, value] of Object.entries(ignored)) {
    if (!isUserId(userId, { allowNonCompliant: true })) {
      throw HearthError.invalidParam(`m.ignored_user_list: ${JSON.stringify(userId.slice(0, 80))} is not a user ID`);
    }
    if (!isJsonObject(value)) throw HearthError.badJson('m.ignored_user_list: each ignored user maps to an object');
  }
}

export class AccountDataService {
  constructor(private readonly deps: AccountDataServiceDeps) {}

  // ---- client API ----------------------------------------------------------------------------

  async setGlobal(requesterId: string, userId: string, type: string, content: JsonObject): Promise<number> {
    requireSelf(requesterId, userId, 'add');
    checkType(type);
    if (type === IGNORED_USERS_TYPE) checkIgnoredUsers(content);
    return this.write(userId, GLOBAL_ROOM, type, content);
  }

  async getGlobal(requesterId: string, userId: string, type: string): Promise<JsonObject> {
    requireSelf(requesterId, userId, 'get');
    // Every user has push rules, the defaults at least.
    if (type === PUSH_RULES_TYPE) return pushRulesContent(userId, await selectAccountData(this.deps.db, userId, GLOBAL_ROOM, type));
    return this.require(userId, GLOBAL_ROOM, type);
  }

  async setRoom(requesterId: string, userId: string, roomId: string, type: string, content: JsonObject): Promise<number> {
    requireSelf(requesterId, userId, 'add');
    const room = parseRoomId(roomId);
    checkType(type);
    return this.write(userId, room, type, content);
  }

  async getRoom(requesterId: string, userId: string, roomId: string, type: string): Promise<JsonObject> {
    requireSelf(requesterId, userId, 'get');
    return this.require(userId, parseRoomId(roomId), type);
  }

  /** GET .../tags: `{tags: {...}}`, empty when none are set. */
  async getTags(requesterId: string, userId: string, roomId: string): Promise<{ tags: JsonObject }> {
    requireSelf(requesterId, userId, 'get');
    const content = await selectAccountData(this.deps.db, userId, parseRoomId(roomId), TAG_TYPE);
    const tags = content?.['tags'];
    return { tags: isJsonObject(tags) ? tags : {} };
  }

  async putTag(requesterId: string, userId: string, roomId: string, tag: string, body: JsonObject): Promise<number> {
    requireSelf(requesterId, userId, 'add');
    const room = parseRoomId(roomId);
    if (tag.length === 0 || tag.length > MAX_TAG_LENGTH) throw HearthError.invalidParam(`Tag must be 1 to ${MAX_TAG_LENGTH} characters`);
    const order = body['order'];
    if (order !== undefined && typeof order !== 'number') throw HearthError.badJson("'order' must be a number");
    const position = await this.updateTags(userId, room, (tags) => {
      tags[tag] = body;
      return true;
    });
    return position!;
  }

  async deleteTag(requesterId: string, userId: string, roomId: string, tag: string): Promise<number | undefined> {
    requireSelf(requesterId, userId, 'add');
    return this.updateTags(userId, parseRoomId(roomId), (tags) => {
      if (!Object.hasOwn(tags, tag)) return false;
      delete tags[tag];
      return true;
    });
  }

  // ---- for sync and other services -----------------------------------------------------------

  /** Who the user ignores (m.ignored_user_list), for sync and invites. */
  async ignoredUsers(userId: string): Promise<Set<string>> {
    const content = await selectAccountData(this.deps.db, userId, GLOBAL_ROOM, IGNORED_USERS_TYPE);
    const ignored = content?.['ignored_users'];
    return new Set(isJsonObject(ignored) ? Object.keys(ignored) : []);
  }

  /**
   * Account data written after `afterPosition` (all of it for 0), latest content per item.
   * `initial` (an initial sync) adds m.push_rules when the user never changed their rules, as
   * clients expect it there.
   */
  async accountDataSince(userId: string, afterPosition: number, options: { initial?: boolean } = {}): Promise<AccountDataChanges> {
    const rows = await selectAccountDataSince(this.deps.db, userId, afterPosition);
    const global: AccountDataEvent[] = [];
    const rooms = new Map<string, AccountDataEvent[]>();
    let position = afterPosition;
    for (const r of rows) {
      position = Math.max(position, r.position);
      if (r.roomId === GLOBAL_ROOM) {
        global.push({ type: r.type, content: r.type === PUSH_RULES_TYPE ? pushRulesContent(userId, r.content) : r.content });
      } else {
        const event = { type: r.type, content: r.content };
        let list = rooms.get(r.roomId);
        if (!list) rooms.set(r.roomId, (list = []));
        list.push(event);
      }
    }
    if (options.initial === true && !global.some((e) => e.type === PUSH_RULES_TYPE)) {
      global.push({ type: PUSH_RULES_TYPE, content: pushRulesContent(userId, undefined) });
    }
    return { global, rooms, position };
  }

  /** One item as stored, or undefined ('' room for global). */
  async get(userId: string, roomId: string, type: string): Promise<JsonObject | undefined> {
    return selectAccountData(this.deps.db, userId, roomId, type);
  }

  /**
   * Stores an item without the client API's checks (read markers write m.fully_read here) and
   * wakes the user's syncs. Returns its stream position.
   */
  async write(userId: string, roomId: string, type: string, content: JsonObject): Promise<number> {
    const position = await this.deps.db.transaction().execute(async (trx) => {
      const p = await allocateStreamPosition(trx, 'account_data');
      await upsertAccountData(trx, userId, roomId, type, content, p);
      return p;
    });
    this.deps.notifier.notify({ stream: 'account_data', position, userIds: [userId] });
    return position;
  }

  /**
   * Read-modify-write of one item, for data the server manages. `edit` gets the stored content
   * (undefined when none) and returns the new content, or undefined to write nothing; what it
   * throws aborts the change. The position is allocated first: that locks the stream's row until
   * commit, so concurrent edits apply one after the other. Returns the position written, if any.
   */
  async update(
    userId: string,
    roomId: string,
    type: string,
    edit: (content: JsonObject | undefined) => JsonObject | undefined,
  ): Promise<number | undefined> {
    const position = await this.deps.db.transaction().execute(async (trx) => {
      const p = await allocateStreamPosition(trx, 'account_data');
      const next = edit(await selectAccountData(trx, userId, roomId, type));
      if (next === undefined) return undefined;
      await upsertAccountData(trx, userId, roomId, type, next, p);
      return p;
    });
    // Writing nothing leaves a gap in the stream, which is harmless.
    if (position !== undefined) this.deps.notifier.notify({ stream: 'account_data', position, userIds: [userId] });
    return position;
  }

  /**
   * A room upgrade: the user's tags of the old room are set on the new one (unless it has tags
   * already), and every m.direct list naming the old room names the new one too.
   */
  async carryOverToUpgradedRoom(userId: string, oldRoomId: string, newRoomId: string): Promise<void> {
    const oldTags = (await selectAccountData(this.deps.db, userId, oldRoomId, TAG_TYPE))?.['tags'];
    if (isJsonObject(oldTags) && Object.keys(oldTags).length > 0) {
      await this.updateTags(userId, newRoomId, (tags) => {
        if (Object.keys(tags).length > 0) return false;
        Object.assign(tags, oldTags);
        return true;
      });
    }
    await this.update(userId, GLOBAL_ROOM, 'm.direct', (stored) => {
      if (stored === undefined) return undefined;
      const next: JsonObject = { ...stored };
      let changed = false;
      for (const [who, rooms] of Object.entries(stored)) {
        if (!Array.isArray(rooms) || !rooms.includes(oldRoomId) || rooms.includes(newRoomId)) continue;
        next[who] = [...rooms, newRoomId];
        changed = true;
      }
      return changed ? next : undefined;
    });
  }

  private async require(userId: string, roomId: string, type: string): Promise<JsonObject> {
    const content = await selectAccountData(this.deps.db, userId, roomId, type);
    if (content === undefined) throw HearthError.notFound('Account data not found.');
    return content;
  }

  /** Read-modify-write of the room's m.tag; `edit` returns false when it changed nothing. */
  private updateTags(userId: string, roomId: string, edit: (tags: JsonObject) => boolean): Promise<number | undefined> {
    return this.update(userId, roomId, TAG_TYPE, (stored) => {
      const content = stored ?? {};
      const tags = isJsonObject(content['tags']) ? { ...content['tags'] } : {};
      return edit(tags) ? { ...content, tags } : undefined;
    });
  }
}
