// Joining a room through another server (server-server API, "Joining Rooms"), when this server is
// not in the room, and knocking on one ("Knocking upon a room"): make_join on a server that is, the template filled in and signed here,
// send_join to the same server, and the answer received (input/join-answer.ts). Servers are tried
// in turn: one that cannot be reached, does not know the room, or cannot authorise the join
// gives way to the next; a refusal (not invited, banned, a version this server lacks) is the
// answer.

import { HearthError } from '../../protocol/errors.js';
import type { Pdu } from '../../protocol/events.js';
import { computeEventId } from '../../protocol/hashes.js';
import { isJsonObject, type JsonObject } from '../../protocol/json.js';
import { getRoomVersion, roomVersions } from '../../protocol/room-versions.js';
import { signOnTemplate } from '../builder.js';
import type { RoomCore } from '../core.js';
import { receiveJoinAnswer, type JoinProgress } from '../input/join-answer.js';
import type { KeyRing } from '../input/key-ring.js';
import { RoomQueue } from '../room-queue.js';
import { storeOutOfBand } from './remote-invite.js';

/** What joining through other servers asks of them (federation implements it). */
export interface RemoteMembershipPort {
  /** GET /make_join; throws a HearthError with the server's status and errcode, or 502. */
  makeJoin(destination: string, roomId: string, userId: string, versions: readonly string[]): Promise<{ roomVersion: string; event: JsonObject }>;
  /** PUT /send_join (v2, v1 where v2 is unknown); throws as makeJoin does. */
  sendJoin(destination: string, roomId: string, eventId: string, pdu: Pdu): Promise<{ state: unknown[]; authChain: unknown[]; event?: unknown }>;
  /** GET /make_knock; throws as makeJoin does. */
  makeKnock(destination: string, roomId: string, userId: string, versions: readonly string[]): Promise<{ roomVersion: string; event: JsonObject }>;
  /** PUT /send_knock: the room's stripped state; throws as makeJoin does. */
  sendKnock(destination: string, roomId: string, eventId: string, pdu: Pdu): Promise<{ knockRoomState: JsonObject[] }>;
  /** GET /make_leave; throws as makeJoin does. */
  makeLeave(destination: string, roomId: string, userId: string): Promise<{ roomVersion: string; event: JsonObject }>;
  /** PUT /send_leave (v2, v1 where v2 is unknown); throws as makeJoin does. */
  sendLeave(destination: string, roomId: string, eventId: string, pdu: Pdu): Promise<void>;
}

/** A send_join answer of this many events or more makes a join whose steps are logged. */
const BIG_JOIN_EVENTS = 1000;

/** Errors after which the next server is tried; any other is the answer. */
function tryNext(err: unknown): boolean {
  if (!(err instanceof HearthError)) return true;
  return err.status >= 500 || err.status === 404 || err.errcode === 'M_UNABLE_TO_AUTHORISE_JOIN' || err.errcode === 'M_NOT_FOUND';
}

export class RemoteJoiner {
  /** Remote joins and knocks, one at a time per room, so the room's row is made once. */
  private readonly joins = new RoomQueue();

  constructor(
    private readonly core: RoomCore,
    private readonly keyRing: KeyRing,
    private readonly port: RemoteMembershipPort,
    /** Where the steps of joins of big rooms are told. */
    private readonly log?: { info(message: string, details?: object): void },
    /** Fetches the room's latest history from the server joined through (RoomService's backfill). */
    private readonly recentHistory?: (server: string, roomId: string) => Promise<unknown>,
  ) {}

  /** Joins `userId` to `roomId` through the first of `servers` that can do it. */
  join(userId: string, roomId: string, servers: readonly string[], content: JsonObject): Promise<void> {
    return this.joins.run(roomId, () => this.throughFirst(userId, roomId, servers, content, 'join'));
  }

  /** Knocks on `roomId` for `userId` through the first of `servers` that can do it. */
  knock(userId: string, roomId: string, servers: readonly string[], content: JsonObject): Promise<void> {
    return this.joins.run(roomId, () => this.throughFirst(userId, roomId, servers, content, 'knock'));
  }

  private async throughFirst(userId: string, roomId: string, servers: readonly string[], content: JsonObject, membership: 'join' | 'knock'): Promise<void> {
    const candidates = [...new Set(servers)].filter((s) => s !== this.core.serverName);
    if (candidates.length === 0) throw HearthError.notFound(`No server to join room ${roomId} through is known`);
    let last: unknown;
    for (const server of candidates) {
      try {
        await this.through(server, userId, roomId, content, membership);
        return;
      } catch (err) {
        if (!tryNext(err)) throw err;
        last = err;
      }
    }
    if (last instanceof HearthError) throw last;
    throw new HearthError(502, 'M_UNKNOWN', `Could not ${membership} room ${roomId} through ${candidates.join(', ')}`);
  }

  private async through(server: string, userId: string, roomId: string, content: JsonObject, membership: 'join' | 'knock'): Promise<void> {
    const versions = Object.keys(roomVersions);
    const made = membership === 'join' ? await this.port.makeJoin(server, roomId, userId, versions) : await this.port.makeKnock(server, roomId, userId, versions);
    const version = getRoomVersion(made.roomVersion);
    if (version === undefined) throw new HearthError(400, 'M_UNSUPPORTED_ROOM_VERSION', `Room ${roomId} is of version ${made.roomVersion}, which this server does not support`);
    const t = made.event;
    const templateContent = isJsonObject(t['content']) ? t['content'] : {};
    if (t['room_id'] !== roomId || t['type'] !== 'm.room.member' || t['sender'] !== userId || t['state_key'] !== userId || templateContent['membership'] !== membership) {
      throw new HearthError(502, 'M_UNKNOWN', `${server} answered make_${membership} with a template that is not ${userId}'s ${membership} in ${roomId}`);
    }
    // The resident names who vouches for a restricted join; the rest of the content is ours.
    const vouch = templateContent['join_authorised_via_users_server'];
    const signed = signOnTemplate(this.core.build, version, t, {
      roomId,
      userId,
      content: { ...content, membership, ...(membership === 'join' && typeof vouch === 'string' ? { join_authorised_via_users_server: vouch } : {}) },
    });
    if (membership === 'knock') {
      // The room stays the resident's: the knock is kept out of band, with the stripped state for sync.
      const answer = await this.port.sendKnock(server, roomId, signed.eventId, signed.pdu);
      await storeOutOfBand(this.core, this.keyRing, roomId, version, signed.pdu, { knock_room_state: answer.knockRoomState });
      return;
    }
    const answer = await this.port.sendJoin(server, roomId, signed.eventId, signed.pdu);
    // A restricted join comes back countersigned by the resident: the same event, more signatures.
    let join = signed.pdu;
    if (isJsonObject(answer.event)) {
      try {
        if (computeEventId(answer.event, version) === signed.eventId) join = answer.event as unknown as Pdu;
      } catch {
        // Not an event of this version: ours stands.
      }
    }
    // Only a big room's join takes long enough to be worth telling step by step.
    const big = answer.state.length + answer.authChain.length >= BIG_JOIN_EVENTS;
    const progress: JoinProgress | undefined = big && this.log !== undefined ? (step, fields) => this.log!.info(`remote join: ${step}`, fields) : undefined;
    const outcome = await receiveJoinAnswer(this.core, this.keyRing, server, { roomId, version, join, state: answer.state, authChain: answer.authChain }, progress);
    if (outcome.status !== 'timeline') {
      throw HearthError.forbidden(`${server} accepted the join, but the room's state it gave does not allow it: ${outcome.reason ?? outcome.status}`);
    }
    // The room's recent history, so that the user's next sync shows it; the join stands if not.
    await this.recentHistory?.(server, roomId).catch(() => undefined);
  }
}
