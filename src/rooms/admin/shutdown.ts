// Shutting a room down for the admin API (DELETE /v1 and /v2 rooms/{roomId}): every local member
// leaves (through the room server's leave, as themselves, so no power is needed), optionally
// into a new room made for them; local aliases are removed (moved to the new room); the room is
// unpublished, blocked and purged when asked. Version 2 runs the same in the background.

import { randomBytes } from 'node:crypto';
import { HearthError } from '../../protocol/errors.js';
import { aliasesOfRoom } from '../../storage/rooms/aliases.js';
import {
  blockRoom,
  blockedRoom,
  deleteJob,
  deleteJobsOfRoom,
  deleteRoomEventReports,
  failUnfinishedDeleteJobs,
  insertDeleteJob,
  unblockRoom,
  updateDeleteJob,
  type RoomDeleteJobRow,
} from '../../storage/admin/rooms.js';
import { membersOfRoom } from '../../storage/rooms/memberships.js';
import type { RoomDeleteStatus } from '../../storage/schema.js';
import type { Actor } from '../actor.js';
import type { RoomService } from '../service.js';
import { parseRoomIdOrInvalid } from './room-details.js';

export interface ShutdownRequest {
  /** The admin asking. */
  readonly requester: string;
  /** A local user who makes a new room for the members and speaks in it. */
  readonly newRoomUserId?: string;
  readonly roomName?: string;
  readonly message?: string;
  readonly block: boolean;
  readonly purge: boolean;
  readonly forcePurge: boolean;
}

export interface ShutdownResult {
  kicked_users: string[];
  failed_to_kick_users: string[];
  local_aliases: string[];
  new_room_id: string | null;
}

export interface DeleteStatus {
  delete_id: string;
  status: RoomDeleteStatus;
  error?: string;
  shutdown_room: ShutdownResult;
}

const DEFAULT_ROOM_NAME = 'Content Violation Notification';
const DEFAULT_MESSAGE = 'Sharing illegal content on this server is not permitted and rooms in violation will be blocked.';

const emptyResult = (): ShutdownResult => ({ kicked_users: [], failed_to_kick_users: [], local_aliases: [], new_room_id: null });

export class RoomShutdowns {
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly deps: {
      readonly rooms: RoomService;
      readonly serverName: string;
      readonly log: { warn(message: string, details?: object): void };
      readonly now?: () => number;
    },
  ) {}

  private get db() {
    return this.deps.rooms.reader.db;
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** Jobs a stopped server left unfinished are marked failed. */
  async start(): Promise<void> {
    await failUnfinishedDeleteJobs(this.db);
  }

  /** Waits for the background deletions under way. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.running.values()]);
  }

  /** Checks what can be checked before anything is done: 400 or 404. */
  async check(roomId: string, request: ShutdownRequest): Promise<{ known: boolean }> {
    parseRoomIdOrInvalid(roomId);
    if (request.newRoomUserId !== undefined && !request.newRoomUserId.endsWith(`:${this.deps.serverName}`)) {
      throw HearthError.invalidParam('User must be our own: ' + request.newRoomUserId);
    }
    const row = await this.deps.rooms.reader.roomRow(roomId);
    const known = row !== undefined && row.state_snapshot_nid !== null;
    if (!known && !request.block && !request.purge) throw HearthError.notFound(`Unknown room id ${roomId}`);
    return { known };
  }

  /** DELETE /v1/rooms/{roomId}: the whole deletion, answered when done. */
  async shutdown(roomId: string, request: ShutdownRequest): Promise<ShutdownResult> {
    const { known } = await this.check(roomId, request);
    if (this.running.has(roomId)) throw new HearthError(400, 'M_UNKNOWN', `A deletion of ${roomId} is already in progress`);
    // Registered as running too, so no other deletion of the room starts meanwhile.
    const work = (async () => {
      const result = known ? await this.removeMembers(roomId, request) : emptyResult();
      if (request.block) await blockRoom(this.db, roomId, request.requester, this.now());
      if (request.purge) await this.purge(roomId, request.forcePurge);
      return result;
    })();
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.running.set(roomId, settled);
    void settled.finally(() => this.running.delete(roomId));
    return work;
  }

  /** DELETE /v2/rooms/{roomId}: the deletion started in the background. */
  async startDelete(roomId: string, request: ShutdownRequest): Promise<{ delete_id: string }> {
    const { known } = await this.check(roomId, request);
    if (this.running.has(roomId)) throw new HearthError(400, 'M_UNKNOWN', `A deletion of ${roomId} is already in progress`);
    const deleteId = randomBytes(12).toString('base64url');
    await insertDeleteJob(this.db, { deleteId, roomId, now: this.now() });
    const run = async () => {
      let result = emptyResult();
      try {
        if (known) result = await this.removeMembers(roomId, request);
        if (request.block) await blockRoom(this.db, roomId, request.requester, this.now());
        if (request.purge) {
          await updateDeleteJob(this.db, deleteId, { status: 'purging', result });
          await this.purge(roomId, request.forcePurge);
        }
        await updateDeleteJob(this.db, deleteId, { status: 'complete', result });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.deps.log.warn('deleting a room failed', { roomId, err: message });
        await updateDeleteJob(this.db, deleteId, { status: 'failed', error: message, result }).catch(() => undefined);
      }
    };
    const job = run().finally(() => this.running.delete(roomId));
    this.running.set(roomId, job);
    return { delete_id: deleteId };
  }

  async statusOf(deleteId: string): Promise<Omit<DeleteStatus, 'delete_id'>> {
    const row = await deleteJob(this.db, deleteId);
    if (row === undefined) throw HearthError.notFound(`delete id '${deleteId}' not found`);
    const { delete_id: _, ...rest } = statusOfRow(row);
    return rest;
  }

  async statusesOfRoom(roomId: string): Promise<{ results: DeleteStatus[] }> {
    parseRoomIdOrInvalid(roomId);
    const rows = await deleteJobsOfRoom(this.db, roomId);
    if (rows.length === 0) throw HearthError.notFound(`No delete task for room_id '${roomId}' found`);
    return { results: rows.map(statusOfRow) };
  }

  async blockStatus(roomId: string): Promise<{ block: boolean; user_id?: string }> {
    parseRoomIdOrInvalid(roomId);
    const row = await blockedRoom(this.db, roomId);
    return row === undefined ? { block: false } : { block: true, user_id: row.user_id };
  }

  async setBlocked(roomId: string, block: boolean, requester: string): Promise<{ block: boolean }> {
    parseRoomIdOrInvalid(roomId);
    if (block) await blockRoom(this.db, roomId, requester, this.now());
    else await unblockRoom(this.db, roomId);
    return { block };
  }

  /** Every local member leaves (into the new room when one is asked for); aliases go. */
  private async removeMembers(roomId: string, request: ShutdownRequest): Promise<ShutdownResult> {
    const { rooms, serverName } = this.deps;
    const admin: Actor = { userId: request.requester, deviceId: null, isAdmin: true };
    const result = emptyResult();
    if (request.newRoomUserId !== undefined) {
      const creator: Actor = { userId: request.newRoomUserId, deviceId: null };
      const { roomId: newRoomId } = await rooms.createRoom(creator, {
        preset: 'public_chat',
        name: request.roomName ?? DEFAULT_ROOM_NAME,
        powerLevelContentOverride: { users_default: -10 },
      });
      await rooms.sendMessage(creator, newRoomId, 'm.room.message', { msgtype: 'm.text', body: request.message ?? DEFAULT_MESSAGE });
      result.new_room_id = newRoomId;
    }
    const row = await rooms.reader.roomRow(roomId);
    const members = row === undefined ? [] : await membersOfRoom(this.db, Number(row.room_nid), ['join', 'invite', 'knock']);
    for (const m of members) {
      if (!m.user_id.endsWith(`:${serverName}`)) continue;
      const actor: Actor = { userId: m.user_id, deviceId: null };
      try {
        // Not forgotten for them: their next sync shows the room left.
        await rooms.leave(actor, roomId);
        if (result.new_room_id !== null && m.membership === 'join') await rooms.join(actor, result.new_room_id);
        result.kicked_users.push(m.user_id);
      } catch (err) {
        this.deps.log.warn('removing a member from a deleted room failed', { roomId, userId: m.user_id, err: String(err) });
        result.failed_to_kick_users.push(m.user_id);
      }
    }
    for (const alias of await aliasesOfRoom(this.db, roomId)) {
      await rooms.deleteAlias(admin, alias).catch((err: unknown) => this.deps.log.warn('deleting an alias of a deleted room failed', { alias, err: String(err) }));
      result.local_aliases.push(alias);
      if (result.new_room_id !== null) await rooms.createAlias({ ...admin, userId: request.newRoomUserId! }, alias, result.new_room_id).catch(() => undefined);
    }
    await rooms.setDirectoryVisibility(admin, roomId, 'private').catch(() => undefined);
    return result;
  }

  private async purge(roomId: string, force: boolean): Promise<void> {
    const row = await this.deps.rooms.reader.roomRow(roomId);
    if (row !== undefined && !force) {
      const joined = await membersOfRoom(this.db, Number(row.room_nid), ['join']);
      if (joined.some((m) => m.user_id.endsWith(`:${this.deps.serverName}`))) throw new HearthError(400, 'M_UNKNOWN', 'Users are still joined to this room');
    }
    await this.deps.rooms.purgeRoom(roomId);
    await deleteRoomEventReports(this.db, roomId);
  }
}

function statusOfRow(row: RoomDeleteJobRow): DeleteStatus {
  const result = row.result_json === null ? emptyResult() : (JSON.parse(row.result_json) as ShutdownResult);
  return { delete_id: row.delete_id, status: row.status, ...(row.error !== null ? { error: row.error } : {}), shutdown_room: result };
}
