// Room rows: identity, version, directory visibility, the current-state snapshot, and a summary
// of the current state kept in step with it (name, topic, join rule, member counts ...).

import { sql, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { RoomsTable, Schema } from '../schema.js';

export type RoomRow = Selectable<RoomsTable>;

/** The summary columns, as written when the state they reflect changes. */
export type RoomSummaryUpdate = Pick<
  Updateable<RoomsTable>,
  | 'state_snapshot_nid'
  | 'name'
  | 'topic'
  | 'canonical_alias'
  | 'avatar_url'
  | 'join_rule'
  | 'history_visibility'
  | 'guest_access'
  | 'room_type'
  | 'joined_members'
  | 'invited_members'
>;

export async function insertRoom(
  trx: Kysely<Schema>,
  room: { roomId: string; version: string; creator: string; createdTs: number; isPublic: boolean },
): Promise<number> {
  const row = await trx
    .insertInto('rooms')
    .values({
      room_id: room.roomId,
      room_version: room.version,
      creator: room.creator,
      created_ts: room.createdTs,
      is_public: room.isPublic ? 1 : 0,
      state_snapshot_nid: null,
      joined_members: 0,
      invited_members: 0,
    })
    .returning('room_nid')
    .executeTakeFirstOrThrow();
  return Number(row.room_nid);
}

export async function roomById(db: Kysely<Schema>, roomId: string): Promise<RoomRow | undefined> {
  return db.selectFrom('rooms').selectAll().where('room_id', '=', roomId).executeTakeFirst();
}

export async function roomByNid(db: Kysely<Schema>, roomNid: number): Promise<RoomRow | undefined> {
  return db.selectFrom('rooms').selectAll().where('room_nid', '=', roomNid).executeTakeFirst();
}

export async function roomsByIds(db: Kysely<Schema>, roomIds: readonly string[]): Promise<RoomRow[]> {
  if (roomIds.length === 0) return [];
  return db.selectFrom('rooms').selectAll().where('room_id', 'in', roomIds).execute();
}

export async function updateRoomSummary(trx: Kysely<Schema>, roomNid: number, update: RoomSummaryUpdate): Promise<void> {
  await trx.updateTable('rooms').set(update).where('room_nid', '=', roomNid).execute();
}

export async function setRoomPublic(db: Kysely<Schema>, roomNid: number, isPublic: boolean): Promise<void> {
  await db.updateTable('rooms').set({ is_public: isPublic ? 1 : 0 }).where('room_nid', '=', roomNid).execute();
}

/** A room in an application service's network directory, or out of it. */
export async function setAppServiceListing(db: Kysely<Schema>, asId: string, networkId: string, roomId: string, listed: boolean): Promise<void> {
  if (listed) {
    await db
      .insertInto('appservice_room_list')
      .values({ as_id: asId, network_id: networkId, room_id: roomId })
      .onConflict((oc) => oc.columns(['as_id', 'network_id', 'room_id']).doNothing())
      .execute();
  } else {
    await db.deleteFrom('appservice_room_list').where('as_id', '=', asId).where('network_id', '=', networkId).where('room_id', '=', roomId).execute();
  }
}

/** Which directory: this server's own (absent), one service's network, or all of them with this server's. */
export type DirectoryNetwork = { readonly asId: string; readonly networkId: string } | 'all';

export interface PublicRoomsQuery {
  readonly network?: DirectoryNetwork;
  /** Case-insensitive substring of the name, topic or canonical alias. */
  readonly search?: string;
  /** Only rooms of these types; null stands for rooms without a type. Empty or absent: any type. */
  readonly roomTypes?: readonly (string | null)[];
  readonly offset: number;
  readonly limit: number;
}

/** Published rooms (in the directory asked for), most joined members first, then by room id; with the total matching. */
export async function publicRooms(db: Kysely<Schema>, query: PublicRoomsQuery): Promise<{ rows: RoomRow[]; total: number }> {
  const { network } = query;
  let q = db.selectFrom('rooms').where('state_snapshot_nid', 'is not', null);
  if (network === undefined) q = q.where('is_public', '=', 1);
  else if (network === 'all') q = q.where((eb) => eb.or([eb('is_public', '=', 1), eb('room_id', 'in', eb.selectFrom('appservice_room_list').select('room_id'))]));
  else {
    q = q.where('room_id', 'in', (eb) =>
      eb.selectFrom('appservice_room_list').select('room_id').where('as_id', '=', network.asId).where('network_id', '=', network.networkId),
    );
  }
  if (query.search !== undefined && query.search !== '') {
    const pattern = `%${query.search.toLowerCase().replace(/[\\%_]/g, (c) => '\\' + c)}%`;
    q = q.where((eb) =>
      eb.or(
        (['name', 'topic', 'canonical_alias'] as const).map((col) => eb(sql`lower(${sql.ref(col)})`, 'like', sql`${pattern} escape '\\'`)),
      ),
    );
  }
  if (query.roomTypes !== undefined && query.roomTypes.length > 0) {
    const named = query.roomTypes.filter((t): t is string => t !== null);
    const untyped = query.roomTypes.includes(null);
    q = q.where((eb) =>
      eb.or([...(named.length > 0 ? [eb('room_type', 'in', named)] : []), ...(untyped ? [eb('room_type', 'is', null)] : [])]),
    );
  }
  const total = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await q
    .selectAll()
    .orderBy('joined_members', 'desc')
    .orderBy('room_id', 'asc')
    .offset(query.offset)
    .limit(query.limit)
    .execute();
  return { rows, total: Number(total.n) };
}
