// The admin API's views of rooms: the list with its orderings, one room's details, its joined
// members and its current state. Admins read every room, member or not; only local state is shown.

import { HearthError } from '../../protocol/errors.js';
import { stateKey } from '../../protocol/events.js';
import { parseRoomId } from '../../protocol/ids.js';
import { joinedLocalDevices, joinedLocalMembers, roomRowsMatching } from '../../storage/admin/rooms.js';
import { membersOfRoom } from '../../storage/rooms/memberships.js';
import type { RoomRow } from '../../storage/rooms/rooms.js';
import type { ClientEvent } from '../client-event.js';
import type { RoomReader } from '../reader.js';
import { byStreamOrder } from '../stored-event.js';
import { decodeTimelineToken, encodeTimelineToken } from '../tokens.js';
import { StatesBefore } from '../visibility-at.js';
import { loadVisibilityHistory } from '../query/history.js';
import type { MessagesRequest, MessagesResponse } from '../query/messages.js';
import { paginate } from '../query/paginate.js';

export interface AdminRoomSummary {
  room_id: string;
  name: string | null;
  canonical_alias: string | null;
  joined_members: number;
  joined_local_members: number;
  version: string;
  creator: string;
  encryption: string | null;
  federatable: boolean;
  public: boolean;
  join_rules: string | null;
  guest_access: string | null;
  history_visibility: string | null;
  state_events: number;
  room_type: string | null;
}

export interface AdminRoomDetails extends AdminRoomSummary {
  topic: string | null;
  avatar: string | null;
  joined_local_devices: number;
  forgotten: boolean;
}

export const ROOM_ORDERS = [
  'name',
  'canonical_alias',
  'joined_members',
  'joined_local_members',
  'version',
  'creator',
  'encryption',
  'federatable',
  'public',
  'join_rules',
  'guest_access',
  'history_visibility',
  'state_events',
] as const;
export type RoomOrder = (typeof ROOM_ORDERS)[number];

export interface RoomListRequest {
  readonly from: number;
  readonly limit: number;
  readonly orderBy: RoomOrder;
  readonly dir: 'f' | 'b';
  readonly searchTerm?: string;
}

export interface RoomListResponse {
  rooms: AdminRoomSummary[];
  offset: number;
  total_rooms: number;
  next_batch?: number;
  prev_batch?: number;
}

/** Orders read from the room rows' summary; the others need each room's state read. */
const SUMMARY_ORDERS = new Set<RoomOrder>(['name', 'canonical_alias', 'joined_members', 'joined_local_members', 'version', 'creator', 'public', 'join_rules', 'guest_access', 'history_visibility']);

export class AdminRoomViews {
  constructor(
    private readonly reader: RoomReader,
    private readonly serverName: string,
  ) {}

  async list(request: RoomListRequest): Promise<RoomListResponse> {
    const rows = await roomRowsMatching(this.reader.db, request.searchTerm);
    const local = await joinedLocalMembers(this.reader.db, this.serverName, rows.map((r) => Number(r.room_nid)));
    let summaries: Map<number, AdminRoomSummary> | undefined;
    if (!SUMMARY_ORDERS.has(request.orderBy)) {
      summaries = new Map();
      for (const row of rows) summaries.set(Number(row.room_nid), await this.summary(row, local));
    }
    const key = (row: RoomRow): string | number | boolean | null => {
      const s = summaries?.get(Number(row.room_nid));
      switch (request.orderBy) {
        case 'name': return row.name;
        case 'canonical_alias': return row.canonical_alias;
        case 'joined_members': return Number(row.joined_members);
        case 'joined_local_members': return local.get(Number(row.room_nid)) ?? 0;
        case 'version': return row.room_version;
        case 'creator': return row.creator;
        case 'public': return Number(row.is_public) === 1;
        case 'join_rules': return row.join_rule;
        case 'guest_access': return row.guest_access;
        case 'history_visibility': return row.history_visibility;
        case 'encryption': return s!.encryption;
        case 'federatable': return s!.federatable;
        case 'state_events': return s!.state_events;
      }
    };
    // Counts and flags sort largest first, names alphabetically, as the reference server has it;
    // dir b reverses. Rooms without the value come last; ties by room id.
    const descending = ['joined_members', 'joined_local_members', 'state_events', 'public', 'federatable'].includes(request.orderBy);
    const sign = (descending ? -1 : 1) * (request.dir === 'b' ? -1 : 1);
    const sorted = [...rows].sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      if (ka !== kb) {
        if (ka === null) return 1;
        if (kb === null) return -1;
        return (ka < kb ? -1 : 1) * sign;
      }
      return a.room_id < b.room_id ? -1 : a.room_id > b.room_id ? 1 : 0;
    });
    const page = sorted.slice(request.from, request.from + request.limit);
    const rooms: AdminRoomSummary[] = [];
    for (const row of page) rooms.push(summaries?.get(Number(row.room_nid)) ?? (await this.summary(row, local)));
    return {
      rooms,
      offset: request.from,
      total_rooms: rows.length,
      ...(request.from + page.length < rows.length ? { next_batch: request.from + page.length } : {}),
      ...(request.from > 0 ? { prev_batch: Math.max(0, request.from - request.limit) } : {}),
    };
  }

  async details(roomId: string): Promise<AdminRoomDetails> {
    const row = await this.row(roomId);
    const local = await joinedLocalMembers(this.reader.db, this.serverName, [Number(row.room_nid)]);
    const summary = await this.summary(row, local);
    const forgotten = await this.reader.db
      .selectFrom('room_memberships')
      .select('user_id')
      .where('room_nid', '=', Number(row.room_nid))
      .where('forgotten', '=', 0)
      .where('user_id', 'like', `%:${this.serverName}`)
      .limit(1)
      .executeTakeFirst();
    return {
      ...summary,
      topic: row.topic,
      avatar: row.avatar_url,
      joined_local_devices: await joinedLocalDevices(this.reader.db, this.serverName, Number(row.room_nid)),
      forgotten: forgotten === undefined,
    };
  }

  async members(roomId: string): Promise<{ members: string[]; total: number }> {
    const row = await this.row(roomId);
    const members = (await membersOfRoom(this.reader.db, Number(row.room_nid), ['join'])).map((m) => m.user_id).sort();
    return { members, total: members.length };
  }

  async state(roomId: string): Promise<{ state: ClientEvent[] }> {
    const row = await this.row(roomId);
    const state = await this.reader.stateOfSnapshot(Number(row.state_snapshot_nid));
    const events = [...state.values()].sort(byStreamOrder);
    return { state: await this.reader.clientEvents(events, { now: Date.now() }) };
  }

  /** A page of the room's timeline as /messages gives it, every event shown (the admin is no member). */
  async messages(roomId: string, adminId: string, request: MessagesRequest): Promise<MessagesResponse> {
    const row = await this.row(roomId);
    const roomNid = Number(row.room_nid);
    const from = request.from === undefined ? undefined : decodeTimelineToken(request.from);
    const to = request.to === undefined ? undefined : decodeTimelineToken(request.to);
    const page = await paginate(this.reader, {
      roomNid,
      userId: adminId,
      history: await loadVisibilityHistory(this.reader.db, roomNid, adminId),
      statesBefore: new StatesBefore(this.reader.db, adminId),
      seesAll: true,
      dir: request.dir,
      from,
      to,
      limit: request.limit,
      ...(request.filter !== undefined ? { filter: request.filter } : {}),
    });
    const start = request.from ?? encodeTimelineToken(request.dir === 'b' ? (page.firstSeen ?? 0) : page.firstSeen !== undefined ? page.firstSeen - 1 : 0);
    const out: MessagesResponse = { start, chunk: await this.reader.clientEvents(page.events, { now: Date.now() }) };
    if (page.next !== undefined) out.end = encodeTimelineToken(page.next);
    return out;
  }

  /** The room's row; 400 for a malformed id, 404 for a room without state here. */
  async row(roomId: string): Promise<RoomRow> {
    parseRoomIdOrInvalid(roomId);
    const row = await this.reader.roomRow(roomId);
    if (row === undefined || row.state_snapshot_nid === null) throw HearthError.notFound('Room not found');
    return row;
  }

  private async summary(row: RoomRow, local: ReadonlyMap<number, number>): Promise<AdminRoomSummary> {
    const state = await this.reader.stateOfSnapshot(Number(row.state_snapshot_nid));
    const encryption = state.get(stateKey('m.room.encryption', ''))?.pdu.content.algorithm;
    const create = state.get(stateKey('m.room.create', ''))?.pdu.content;
    return {
      room_id: row.room_id,
      name: row.name,
      canonical_alias: row.canonical_alias,
      joined_members: Number(row.joined_members),
      joined_local_members: local.get(Number(row.room_nid)) ?? 0,
      version: row.room_version,
      creator: row.creator,
      encryption: typeof encryption === 'string' ? encryption : null,
      federatable: create?.['m.federate'] !== false,
      public: Number(row.is_public) === 1,
      join_rules: row.join_rule,
      guest_access: row.guest_access,
      history_visibility: row.history_visibility,
      state_events: state.size,
      room_type: row.room_type,
    };
  }
}

/** A room id from the path; 400 M_INVALID_PARAM when it is not one. */
export function parseRoomIdOrInvalid(roomId: string): string {
  try {
    return parseRoomId(roomId);
  } catch {
    throw HearthError.invalidParam(`${roomId} is not a legal room ID`);
  }
}
