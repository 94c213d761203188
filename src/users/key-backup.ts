// Server-side key backups (client-server API, "Server-side key backups"): a user's backup
// versions, each with an algorithm and opaque `auth_data`, and the encrypted room keys stored in
// them. Keys are written only to the current (newest, not deleted) version; when a session is
// uploaded again, the better copy is kept. Every change to a version's keys bumps its etag.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import {
  backupKeyId,
  countBackupKeys,
  deleteAllBackups,
  deleteBackupKeys,
  insertBackupVersion,
  markBackupVersionDeleted,
  selectBackupKeys,
  selectBackupKeysOf,
  selectBackupVersion,
  selectCurrentBackupVersion,
  setBackupEtag,
  updateBackupAuthData,
  upsertBackupKeys,
  type BackedUpKey,
  type BackedUpKeyRow,
  type BackupVersionRow,
} from '../storage/user-data/key-backup.js';

/** Room and session IDs longer than this are refused (they are a few dozen characters). */
const MAX_ID_LENGTH = 255;

export interface KeyBackupServiceDeps {
  readonly db: Kysely<Schema>;
}

export interface KeysUpdate {
  readonly etag: string;
  readonly count: number;
}

/** Which keys a request addresses: the whole version, one room, or one session of a room. */
export interface KeySelection {
  readonly roomId?: string | undefined;
  readonly sessionId?: string | undefined;
}

export class KeyBackupService {
  private readonly locks = new UserLocks();

  constructor(private readonly deps: KeyBackupServiceDeps) {}

  /** POST /room_keys/version: a new version, which becomes the current one. */
  async createVersion(userId: string, body: JsonObject): Promise<{ version: string }> {
    const algorithm = requiredString(body, 'algorithm');
    const authData = requiredObject(body, 'auth_data');
    return this.locks.run(userId, async () => {
      const version = await this.deps.db.transaction().execute((trx) => insertBackupVersion(trx, userId, algorithm, authData));
      return { version: String(version) };
    });
  }

  /** GET /room_keys/version[/{version}]: the version's description, key count and etag. */
  async versionInfo(userId: string, version: string | undefined): Promise<JsonObject> {
    const row = version === undefined ? await selectCurrentBackupVersion(this.deps.db, userId) : await this.liveVersion(userId, version);
    if (row === undefined) throw HearthError.notFound(version === undefined ? 'No current backup version' : 'Unknown backup version');
    return {
      algorithm: row.algorithm,
      auth_data: row.authData,
      count: await countBackupKeys(this.deps.db, userId, row.version),
      etag: String(row.etag),
      version: String(row.version),
    };
  }

  /** PUT /room_keys/version/{version}: replaces the version's auth_data (any version not deleted). */
  async updateVersion(userId: string, version: string, body: JsonObject): Promise<JsonObject> {
    const given = body['version'];
    if (given !== undefined && given !== version) {
      if (typeof given !== 'string') throw HearthError.badJson("'version' must be a string");
      throw HearthError.invalidParam('Version in body does not match');
    }
    const algorithm = requiredString(body, 'algorithm');
    const authData = requiredObject(body, 'auth_data');
    return this.locks.run(userId, async () => {
      const row = await this.liveVersion(userId, version);
      if (row === undefined) throw HearthError.notFound('Unknown backup version');
      if (row.algorithm !== algorithm) throw HearthError.invalidParam('Algorithm does not match');
      await updateBackupAuthData(this.deps.db, userId, row.version, authData);
      return {};
    });
  }

  /** DELETE /room_keys/version/{version}: the version and its keys go; deleting it again is fine. */
  async deleteVersion(userId: string, version: string): Promise<JsonObject> {
    const number = versionNumber(version);
    return this.locks.run(userId, async () => {
      const row = number === undefined ? undefined : await selectBackupVersion(this.deps.db, userId, number);
      if (row === undefined) throw HearthError.notFound('Unknown backup version');
      if (!row.deleted) await this.deps.db.transaction().execute((trx) => markBackupVersionDeleted(trx, userId, row.version));
      return {};
    });
  }

  /**
   * PUT /room_keys/keys[/{roomId}[/{sessionId}]]: stores keys in the current version. A session
   * already stored is replaced only by a better copy (see `betterKey`).
   */
  async putKeys(userId: string, version: string, keys: readonly BackedUpKeyRow[]): Promise<KeysUpdate> {
    return this.locks.run(userId, async () => {
      const current = await selectCurrentBackupVersion(this.deps.db, userId);
      if (current === undefined || String(current.version) !== version) {
        const asked = await this.liveVersion(userId, version);
        if (asked === undefined || current === undefined) throw HearthError.notFound(`Unknown backup version ${version.slice(0, 50)}`);
        throw new HearthError(403, 'M_WRONG_ROOM_KEYS_VERSION', 'Wrong backup version.', { current_version: String(current.version) });
      }
      const { db } = this.deps;
      const etag = await db.transaction().execute(async (trx) => {
        // The last copy of a session in one request is the one considered.
        const wanted = new Map<string, BackedUpKeyRow>();
        for (const k of keys) wanted.set(backupKeyId(k.roomId, k.sessionId), k);
        const stored = await selectBackupKeysOf(trx, userId, current.version, [...wanted.values()].map((k) => [k.roomId, k.sessionId] as const));
        const writes = [...wanted.entries()].filter(([id, k]) => {
          const old = stored.get(id);
          return old === undefined || betterKey(k, old);
        });
        if (writes.length === 0) return current.etag;
        await upsertBackupKeys(trx, userId, current.version, writes.map(([, k]) => k));
        await setBackupEtag(trx, userId, current.version, current.etag + 1);
        return current.etag + 1;
      });
      return { etag: String(etag), count: await countBackupKeys(db, userId, current.version) };
    });
  }

  /** GET /room_keys/keys[...]: the keys of a version (not only the current one). */
  async getKeys(userId: string, version: string, which: KeySelection): Promise<JsonObject> {
    const row = await this.liveVersion(userId, version);
    if (row === undefined) throw HearthError.notFound('Unknown backup version');
    const keys = await selectBackupKeys(this.deps.db, userId, row.version, which.roomId, which.sessionId);
    if (which.sessionId !== undefined) {
      const key = keys[0];
      if (key === undefined) throw HearthError.notFound('No room_keys found');
      return keyJson(key);
    }
    const rooms: Record<string, { sessions: JsonObject }> = {};
    for (const k of keys) (rooms[k.roomId] ??= { sessions: {} }).sessions[k.sessionId] = keyJson(k);
    if (which.roomId !== undefined) return rooms[which.roomId] ?? { sessions: {} };
    return { rooms };
  }

  /** DELETE /room_keys/keys[...]: removes keys from a version; its etag moves on. */
  async deleteKeys(userId: string, version: string, which: KeySelection): Promise<KeysUpdate> {
    return this.locks.run(userId, async () => {
      const row = await this.liveVersion(userId, version);
      if (row === undefined) throw HearthError.notFound('Unknown backup version');
      const { db } = this.deps;
      await db.transaction().execute(async (trx) => {
        await deleteBackupKeys(trx, userId, row.version, which.roomId, which.sessionId);
        await setBackupEtag(trx, userId, row.version, row.etag + 1);
      });
      return { etag: String(row.etag + 1), count: await countBackupKeys(db, userId, row.version) };
    });
  }

  /** The account was deactivated: its backups go. */
  async deleteAll(userId: string): Promise<void> {
    await this.locks.run(userId, () => this.deps.db.transaction().execute((trx) => deleteAllBackups(trx, userId)));
  }

  /** The version with this number if it exists and is not deleted. */
  private async liveVersion(userId: string, version: string): Promise<BackupVersionRow | undefined> {
    const number = versionNumber(version);
    if (number === undefined) return undefined;
    const row = await selectBackupVersion(this.deps.db, userId, number);
    return row === undefined || row.deleted ? undefined : row;
  }
}

/**
 * Whether `candidate` should replace `stored` (spec, "Server-side key backups"): a verified key
 * beats an unverified one; then the lower first_message_index wins; then the lower
 * forwarded_count. A tie keeps what is stored.
 */
export function betterKey(candidate: BackedUpKey, stored: BackedUpKey): boolean {
  if (candidate.isVerified !== stored.isVerified) return candidate.isVerified;
  if (candidate.firstMessageIndex !== stored.firstMessageIndex) return candidate.firstMessageIndex < stored.firstMessageIndex;
  return candidate.forwardedCount < stored.forwardedCount;
}

/**
 * The keys of a PUT body: `{rooms: {roomId: {sessions: {sessionId: KeyBackupData}}}}`, or with
 * the room (and session) given by the path, the inner part.
 */
export function parseKeysBody(body: JsonObject, which: KeySelection): BackedUpKeyRow[] {
  const { roomId, sessionId } = which;
  if (roomId !== undefined) checkId(roomId, 'room ID');
  if (roomId !== undefined && sessionId !== undefined) {
    checkId(sessionId, 'session ID');
    return [{ roomId, sessionId, ...parseKeyData(body, `${roomId}/${sessionId}`) }];
  }
  if (roomId !== undefined) return parseSessions(body, roomId);
  const rooms = requiredObject(body, 'rooms');
  const out: BackedUpKeyRow[] = [];
  for (const [room, content] of Object.entries(rooms)) {
    checkId(room, 'room ID');
    if (!isJsonObject(content)) throw HearthError.badJson(`rooms.${room} must be an object`);
    out.push(...parseSessions(content, room));
  }
  return out;
}

function parseSessions(room: JsonObject, roomId: string): BackedUpKeyRow[] {
  const sessions = requiredObject(room, 'sessions');
  return Object.entries(sessions).map(([sessionId, data]) => {
    checkId(sessionId, 'session ID');
    if (!isJsonObject(data)) throw HearthError.badJson(`sessions.${sessionId} must be an object`);
    return { roomId, sessionId, ...parseKeyData(data, `${roomId}/${sessionId}`) };
  });
}

/** KeyBackupData: is_verified must be a boolean (M_INVALID_PARAM, as Synapse answers), the rest as typed. */
function parseKeyData(data: JsonObject, where: string): BackedUpKey {
  const firstMessageIndex = required(data, 'first_message_index');
  const forwardedCount = required(data, 'forwarded_count');
  const isVerified = required(data, 'is_verified');
  const sessionData = required(data, 'session_data');
  if (!isCount(firstMessageIndex)) throw HearthError.badJson(`first_message_index of ${where} must be a non-negative integer`);
  if (!isCount(forwardedCount)) throw HearthError.badJson(`forwarded_count of ${where} must be a non-negative integer`);
  if (typeof isVerified !== 'boolean') throw HearthError.invalidParam(`is_verified of ${where} must be a boolean`);
  if (!isJsonObject(sessionData)) throw HearthError.badJson(`session_data of ${where} must be an object`);
  return { firstMessageIndex, forwardedCount, isVerified, sessionData };
}

function keyJson(k: BackedUpKey): JsonObject {
  return {
    first_message_index: k.firstMessageIndex,
    forwarded_count: k.forwardedCount,
    is_verified: k.isVerified,
    session_data: k.sessionData,
  };
}

function isCount(v: JsonValue): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function checkId(id: string, what: string): void {
  if (id.length === 0 || id.length > MAX_ID_LENGTH) throw HearthError.invalidParam(`A ${what} must be 1 to ${MAX_ID_LENGTH} characters`);
}

/** Versions are decimal numbers; anything else names no version. */
function versionNumber(version: string): number | undefined {
  if (!/^[1-9][0-9]{0,15}$/.test(version)) return undefined;
  const n = Number(version);
  return Number.isSafeInteger(n) ? n : undefined;
}

function required(obj: JsonObject, key: string): JsonValue {
  const v = obj[key];
  if (v === undefined) throw new HearthError(400, 'M_MISSING_PARAM', `Missing parameter: ${key}`);
  return v;
}

function requiredString(obj: JsonObject, key: string): string {
  const v = required(obj, key);
  if (typeof v !== 'string') throw HearthError.badJson(`'${key}' must be a string`);
  return v;
}

function requiredObject(obj: JsonObject, key: string): JsonObject {
  const v = required(obj, key);
  if (!isJsonObject(v)) throw HearthError.badJson(`'${key}' must be an object`);
  return v;
}

/** Runs one task at a time per user, so that uploads, version changes and deletions do not interleave. */
class UserLocks {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(userId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(userId) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.catch(() => undefined);
    this.tails.set(userId, tail);
    void tail.then(() => {
      if (this.tails.get(userId) === tail) this.tails.delete(userId);
    });
    return result;
  }
}
