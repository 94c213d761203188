// The admin API's room rows: blocked rooms, event reports, background deletions, and the counts
// of local members and devices that room details show.

import { sql, type Kysely, type Selectable } from 'kysely';
import type { EventReportsTable, RoomDeleteJobsTable, RoomDeleteStatus, Schema } from '../schema.js';

export type EventReportRow = Selectable<EventReportsTable>;
export type RoomDeleteJobRow = Selectable<RoomDeleteJobsTable>;

export async function blockedRoom(db: Kysely<Schema>, roomId: string): Promise<{ user_id: string } | undefined> {
  return db.selectFrom('blocked_rooms').select('user_id').where('room_id', '=', roomId).executeTakeFirst();
}

export async function blockRoom(db: Kysely<Schema>, roomId: string, userId: string, now: number): Promise<void> {
  await db
    .insertInto('blocked_rooms')
    .values({ room_id: roomId, user_id: userId, created_ts: now })
    .onConflict((oc) => oc.column('room_id').doNothing())
    .execute();
}

export async function unblockRoom(db: Kysely<Schema>, roomId: string): Promise<void> {
  await db.deleteFrom('blocked_rooms').where('room_id', '=', roomId).execute();
}

/** Joined members per room whose user id ends with `:serverName`, for the given rooms (nids). */
export async function joinedLocalMembers(db: Kysely<Schema>, serverName: string, roomNids: readonly number[]): Promise<Map<number, number>> {
  if (roomNids.length === 0) return new Map();
  const rows = await db
    .selectFrom('room_memberships')
    .select(['room_nid', (eb) => eb.fn.countAll<number>().as('n')])
    .where('room_nid', 'in', roomNids)
    .where('membership', '=', 'join')
    .where('user_id', 'like', `%:${serverName}`)
    .groupBy('room_nid')
    .execute();
  return new Map(rows.map((r) => [Number(r.room_nid), Number(r.n)]));
}

/** Devices of the room's joined local members. */
export async function joinedLocalDevices(db: Kysely<Schema>, serverName: string, roomNid: number): Promise<number> {
  const row = await db
    .selectFrom('devices')
    .innerJoin('room_memberships', 'room_memberships.user_id', 'devices.user_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('room_memberships.room_nid', '=', roomNid)
    .where('room_memberships.membership', '=', 'join')
    .where('room_memberships.user_id', 'like', `%:${serverName}`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Rooms with a current state whose id, name or canonical alias contains `term` (any case). */
export async function roomRowsMatching(db: Kysely<Schema>, term: string | undefined) {
  let q = db.selectFrom('rooms').selectAll().where('state_snapshot_nid', 'is not', null);
  if (term !== undefined && term !== '') {
    const like = `%${term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where((eb) =>
      eb.or([
        eb(sql`lower(room_id)`, 'like', sql`${like} escape '\\'`),
        eb(sql`lower(coalesce(name, ''))`, 'like', sql`${like} escape '\\'`),
        eb(sql`lower(coalesce(canonical_alias, ''))`, 'like', sql`${like} escape '\\'`),
      ]),
    );
  }
  return q.orderBy('room_nid').execute();
}

// ---- event reports ----

export async function insertEventReport(db: Kysely<Schema>, report: Omit<EventReportRow, 'id'>): Promise<number> {
  const row = await db.insertInto('event_reports').values(report).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function eventReport(db: Kysely<Schema>, id: number): Promise<EventReportRow | undefined> {
  return db.selectFrom('event_reports').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function deleteEventReport(db: Kysely<Schema>, id: number): Promise<boolean> {
  const res = await db.deleteFrom('event_reports').where('id', '=', id).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

export interface EventReportsQuery {
  readonly from: number;
  readonly limit: number;
  readonly dir: 'f' | 'b';
  readonly userId?: string;
  readonly roomId?: string;
}

/** A page of reports, oldest first (dir f) or newest first (dir b), with the total matching. */
export async function eventReports(db: Kysely<Schema>, query: EventReportsQuery): Promise<{ rows: EventReportRow[]; total: number }> {
  let q = db.selectFrom('event_reports');
  // Substrings, as the reference server matches them.
  if (query.userId !== undefined) q = q.where('user_id', 'like', `%${query.userId}%`);
  if (query.roomId !== undefined) q = q.where('room_id', 'like', `%${query.roomId}%`);
  const total = Number((await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await q
    .selectAll()
    .orderBy('received_ts', query.dir === 'f' ? 'asc' : 'desc')
    .orderBy('id', query.dir === 'f' ? 'asc' : 'desc')
    .offset(query.from)
    .limit(query.limit)
    .execute();
  return { rows, total };
}

/** Reports about a room's events go with the room. */
export async function deleteRoomEventReports(db: Kysely<Schema>, roomId: string): Promise<void> {
  await db.deleteFrom('event_reports').where('room_id', '=', roomId).execute();
}

// ---- background deletions ----

export async function insertDeleteJob(db: Kysely<Schema>, job: { deleteId: string; roomId: string; now: number }): Promise<void> {
  await db.insertInto('room_delete_jobs').values({ delete_id: job.deleteId, room_id: job.roomId, status: 'shutting_down', error: null, result_json: null, created_ts: job.now }).execute();
}

export async function updateDeleteJob(db: Kysely<Schema>, deleteId: string, update: { status: RoomDeleteStatus; error?: string; result?: unknown }): Promise<void> {
  await db
    .updateTable('room_delete_jobs')
    .set({
      status: update.status,
      ...(update.error !== undefined ? { error: update.error } : {}),
      ...(update.result !== undefined ? { result_json: JSON.stringify(update.result) } : {}),
    })
    .where('delete_id', '=', deleteId)
    .execute();
}

export async function deleteJob(db: Kysely<Schema>, deleteId: string): Promise<RoomDeleteJobRow | undefined> {
  return db.selectFrom('room_delete_jobs').selectAll().where('delete_id', '=', deleteId).executeTakeFirst();
}

export async function deleteJobsOfRoom(db: Kysely<Schema>, roomId: string): Promise<RoomDeleteJobRow[]> {
  return db.selectFrom('room_delete_jobs').selectAll().where('room_id', '=', roomId).orderBy('created_ts').execute();
}

/** Jobs a stopped server left unfinished are failed at start. */
export async function failUnfinishedDeleteJobs(db: Kysely<Schema>): Promise<void> {
  await db.updateTable('room_delete_jobs').set({ status: 'failed', error: 'The server stopped during the deletion' }).where('status', 'in', ['shutting_down', 'purging']).execute();
}
