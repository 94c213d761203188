// Event relations (tables/rooms.ts EventRelationsTable): written with the relating events, taken
// out when they are redacted, and read for GET /relations, /threads and bundled aggregations.

import { sql, type Kysely } from 'kysely';
import type { Schema } from '../schema.js';
import type { JsonObject } from '../../protocol/json.js';
import { relationOf, THREAD } from '../../protocol/relations.js';

export interface NewRelation {
  readonly eventNid: number;
  readonly eventId: string;
  readonly roomNid: number;
  readonly relatesTo: string;
  readonly relType: string;
  readonly type: string;
  readonly sender: string;
  readonly key: string | undefined;
  readonly position: number;
  readonly originServerTs: number;
}

/** Stores relations (markRelated marks the events they relate to). */
export async function writeRelations(trx: Kysely<Schema>, relations: readonly NewRelation[]): Promise<void> {
  if (relations.length === 0) return;
  await trx
    .insertInto('event_relations')
    .values(
      relations.map((r) => ({
        event_nid: r.eventNid,
        event_id: r.eventId,
        room_nid: r.roomNid,
        relates_to: r.relatesTo,
        rel_type: r.relType,
        type: r.type,
        sender: r.sender,
        aggregation_key: r.key ?? null,
        stream_ordering: r.position,
        origin_server_ts: r.originServerTs,
      })),
    )
    .onConflict((oc) => oc.column('event_nid').doNothing())
    .execute();
}

/** Of these event ids, those something already relates to (an event stored after its relations). */
export async function relatedAlready(trx: Kysely<Schema>, eventIds: readonly string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const rows = await trx.selectFrom('event_relations').select('relates_to').distinct().where('relates_to', 'in', eventIds).execute();
  return new Set(rows.map((r) => r.relates_to));
}

/** Marks the events (those stored) as related to. */
export async function markRelated(trx: Kysely<Schema>, eventIds: readonly string[]): Promise<void> {
  if (eventIds.length > 0) await trx.updateTable('events').set({ has_relations: 1 }).where('event_id', 'in', eventIds).where('has_relations', 'is', null).execute();
}

/** A redacted event relates to nothing any more (found by its nid: the table's key). */
export async function deleteRelationOf(trx: Kysely<Schema>, eventId: string): Promise<void> {
  await trx
    .deleteFrom('event_relations')
    .where('event_nid', 'in', (eb) => eb.selectFrom('events').select('event_nid').where('event_id', '=', eventId))
    .execute();
}

export interface RelationRow {
  readonly eventNid: number;
  readonly roomNid: number;
  readonly eventId: string;
  readonly relatesTo: string;
  readonly relType: string;
  readonly type: string;
  readonly sender: string;
  readonly key: string | null;
  readonly position: number;
  readonly originServerTs: number;
}

type Row = { event_nid: number | string; room_nid: number | string; event_id: string; relates_to: string; rel_type: string; type: string; sender: string; aggregation_key: string | null; stream_ordering: number | string; origin_server_ts: number | string };

function relationRow(r: Row): RelationRow {
  return {
    eventNid: Number(r.event_nid),
    roomNid: Number(r.room_nid),
    eventId: r.event_id,
    relatesTo: r.relates_to,
    relType: r.rel_type,
    type: r.type,
    sender: r.sender,
    key: r.aggregation_key,
    position: Number(r.stream_ordering),
    originServerTs: Number(r.origin_server_ts),
  };
}

export interface RelationsQuery {
  readonly roomNid: number;
  /** The events whose relations are read (a recursion's next level names several). */
  readonly targets: readonly string[];
  readonly relType?: string;
  readonly type?: string;
  /** Positions (exclusive) to start after and to stop at, in the direction read. */
  readonly from?: number;
  readonly to?: number;
  readonly dir: 'b' | 'f';
  readonly limit: number;
}

/** Relations of the targets, newest first ('b') or oldest first ('f'). */
export async function relationsOf(db: Kysely<Schema>, q: RelationsQuery): Promise<RelationRow[]> {
  if (q.targets.length === 0) return [];
  return (await relationsQuery(db, q).selectAll().execute()).map(relationRow);
}

/**
 * As relationsOf, each relating event's nid and position only: a page to serve, read from the
 * target's index alone (on SQLite it holds the key) unless the event type is filtered on. The
 * page comes back as one text of "nid,position" pairs: a row per relation costs more than reading
 * it (10,000 rows: some 15 ms as rows, 5 as one text).
 */
export async function relationPage(db: Kysely<Schema>, q: RelationsQuery): Promise<{ eventNid: number; position: number }[]> {
  if (q.targets.length === 0) return [];
  const page = relationsQuery(db, q).select(['event_nid', 'stream_ordering']).as('page');
  // Aggregated in the order the page is read, which neither database promises (an ORDER BY within
  // the aggregate would sort again, at about half the statement's cost): sorted here, where a page
  // already in order is one pass.
  const row = await db
    .selectFrom(page)
    .select(sql<string | null>`string_agg(cast(event_nid as text) || ',' || cast(stream_ordering as text), ',')`.as('pairs'))
    .executeTakeFirst();
  const pairs = row?.pairs;
  if (pairs == null || pairs === '') return [];
  const numbers = JSON.parse(`[${pairs}]`) as number[];
  const out: { eventNid: number; position: number }[] = [];
  for (let i = 0; i + 1 < numbers.length; i += 2) out.push({ eventNid: numbers[i]!, position: numbers[i + 1]! });
  const sign = q.dir === 'b' ? -1 : 1;
  return out.sort((a, b) => sign * (a.position - b.position));
}

/** The ids of the events relating to the targets, at most `limit` (a recursion's next level). */
export async function relatingIds(db: Kysely<Schema>, roomNid: number, targets: readonly string[], limit: number): Promise<string[]> {
  if (targets.length === 0) return [];
  const rows = await db.selectFrom('event_relations').select('event_id').where('relates_to', 'in', targets).where('room_nid', '=', roomNid).limit(limit).execute();
  return rows.map((r) => r.event_id);
}

function relationsQuery(db: Kysely<Schema>, q: RelationsQuery) {
  let query = db.selectFrom('event_relations').where('room_nid', '=', q.roomNid).where('relates_to', 'in', q.targets);
  if (q.relType !== undefined) query = query.where('rel_type', '=', q.relType);
  if (q.type !== undefined) query = query.where('type', '=', q.type);
  if (q.dir === 'b') {
    if (q.from !== undefined) query = query.where('stream_ordering', '<', q.from);
    if (q.to !== undefined) query = query.where('stream_ordering', '>', q.to);
  } else {
    if (q.from !== undefined) query = query.where('stream_ordering', '>', q.from);
    if (q.to !== undefined) query = query.where('stream_ordering', '<', q.to);
  }
  return query.orderBy('stream_ordering', q.dir === 'b' ? 'desc' : 'asc').limit(q.limit);
}

export interface ThreadSummaryRow {
  readonly root: string;
  readonly roomNid: number;
  readonly count: number;
  readonly latestPosition: number;
}

// The reads below of what relates to some events name the rooms of those events too: relations
// count only in the room of the event they relate to, and with the room the target's index is
// read for one relation type alone (without it, all 10,000 reactions to a message were looked up
// in the table to find its one edit).

/** Per thread root among `roots` (in `roomNids`): its events' count and the newest one's position. */
export async function threadSummaries(db: Kysely<Schema>, roots: readonly string[], roomNids: readonly number[]): Promise<ThreadSummaryRow[]> {
  if (roots.length === 0) return [];
  const rows = await db
    .selectFrom('event_relations')
    .select(['relates_to', 'room_nid', sql<number>`count(*)`.as('n'), sql<number>`max(stream_ordering)`.as('latest')])
    .where('relates_to', 'in', roots)
    .where('room_nid', 'in', roomNids)
    .where('rel_type', '=', 'm.thread')
    .groupBy(['relates_to', 'room_nid'])
    .execute();
  return rows.map((r) => ({ root: r.relates_to, roomNid: Number(r.room_nid), count: Number(r.n), latestPosition: Number(r.latest) }));
}

/** Of the thread roots, those `userId` sent an event in. */
export async function threadsWithSender(db: Kysely<Schema>, roots: readonly string[], userId: string): Promise<Set<string>> {
  if (roots.length === 0) return new Set();
  const rows = await db
    .selectFrom('event_relations')
    .select('relates_to')
    .distinct()
    .where('relates_to', 'in', roots)
    .where('rel_type', '=', 'm.thread')
    .where('sender', '=', userId)
    .execute();
  return new Set(rows.map((r) => r.relates_to));
}

/** The thread events of these roots at these positions (each thread's newest, by its position). */
export async function threadEventsAt(db: Kysely<Schema>, roots: readonly string[], roomNids: readonly number[], positions: readonly number[]): Promise<RelationRow[]> {
  if (positions.length === 0) return [];
  const rows = await db
    .selectFrom('event_relations')
    .selectAll()
    .where('relates_to', 'in', roots)
    .where('room_nid', 'in', roomNids)
    .where('rel_type', '=', 'm.thread')
    .where('stream_ordering', 'in', positions)
    .execute();
  return rows.map(relationRow);
}

/** Edits and references of the targets (in `roomNids`; the aggregations bundled besides threads). */
export async function editsAndReferences(db: Kysely<Schema>, targets: readonly string[], roomNids: readonly number[]): Promise<RelationRow[]> {
  if (targets.length === 0) return [];
  const rows = await db
    .selectFrom('event_relations')
    .selectAll()
    .where('relates_to', 'in', targets)
    .where('room_nid', 'in', roomNids)
    .where('rel_type', 'in', ['m.replace', 'm.reference'])
    .orderBy('stream_ordering')
    .execute();
  return rows.map(relationRow);
}

/** Whether `sender` already annotated `target` with `key` (events of `type`). */
export async function annotationExists(db: Kysely<Schema>, target: string, sender: string, type: string, key: string): Promise<boolean> {
  const row = await db
    .selectFrom('event_relations')
    .select('event_nid')
    .where('relates_to', '=', target)
    .where('rel_type', '=', 'm.annotation')
    .where('sender', '=', sender)
    .where('type', '=', type)
    .where('aggregation_key', '=', key)
    .executeTakeFirst();
  return row !== undefined;
}

export interface ThreadListRow {
  readonly root: string;
  readonly latestPosition: number;
}

/**
 * A room's threads by their newest event, newest first, before `before` (a position), at most
 * `limit`; with `participant`, only threads they started or sent an event in.
 */
export async function threadsOfRoom(db: Kysely<Schema>, roomNid: number, before: number | undefined, limit: number, participant?: string): Promise<ThreadListRow[]> {
  let query = db
    .selectFrom('event_relations as r')
    .select(['r.relates_to', sql<number>`max(r.stream_ordering)`.as('latest')])
    .where('r.room_nid', '=', roomNid)
    .where('r.rel_type', '=', 'm.thread')
    .groupBy('r.relates_to');
  if (participant !== undefined) {
    query = query.where((eb) =>
      eb.or([
        eb('r.relates_to', 'in', eb.selectFrom('event_relations as p').select('p.relates_to').where('p.room_nid', '=', roomNid).where('p.rel_type', '=', 'm.thread').where('p.sender', '=', participant)),
        eb('r.relates_to', 'in', eb.selectFrom('events as e').select('e.event_id').where('e.room_nid', '=', roomNid).where('e.sender', '=', participant).where('e.has_relations', '=', 1)),
      ]),
    );
  }
  if (before !== undefined) query = query.having(sql<number>`max(r.stream_ordering)`, '<', before);
  const rows = await query.orderBy(sql`max(r.stream_ordering)`, 'desc').limit(limit).execute();
  return rows.map((r) => ({ root: r.relates_to, latestPosition: Number(r.latest) }));
}

/** The thread ID of the main timeline (receipts, notification counts). */
export const MAIN_THREAD = 'main';
/** Relations followed at most from an event to one in a thread (the spec recommends 3 hops). */
const THREAD_HOPS = 3;

/**
 * The thread each event is in: the root of its m.thread relation, else the thread of the event it
 * relates to, following relations up to 3 hops; 'main' when none leads to a thread. One statement
 * per hop, for all the events together.
 */
export function threadsOf(db: Kysely<Schema>, eventIds: readonly string[]): Promise<Map<string, string>> {
  return threadsReading(db, eventIds, THREAD_HOPS + 1);
}

/** As threadsOf, reading at most `reads` relations from each event (its own first). */
async function threadsReading(db: Kysely<Schema>, eventIds: readonly string[], reads: number): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  // Per event asked, the event whose relation is read next.
  let pending = new Map<string, string[]>();
  for (const id of new Set(eventIds)) pending.set(id, [id]);
  for (let read = 0; read < reads && pending.size > 0; read++) {
    const ids = [...pending.keys()];
    const found = new Map<string, { relatesTo: string; relType: string }>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await db
        .selectFrom('events as e')
        .innerJoin('event_relations as r', 'r.event_nid', 'e.event_nid')
        .select(['e.event_id', 'r.relates_to', 'r.rel_type'])
        .where('e.event_id', 'in', ids.slice(i, i + 500))
        .execute();
      for (const r of rows) found.set(r.event_id, { relatesTo: r.relates_to, relType: r.rel_type });
    }
    const next = new Map<string, string[]>();
    for (const [id, askers] of pending) {
      const rel = found.get(id);
      if (rel !== undefined && rel.relType === THREAD) for (const a of askers) out.set(a, rel.relatesTo);
      else if (rel !== undefined) next.set(rel.relatesTo, [...(next.get(rel.relatesTo) ?? []), ...askers]);
    }
    pending = next;
  }
  for (const id of eventIds) if (!out.has(id)) out.set(id, MAIN_THREAD);
  return out;
}

/**
 * The thread of each event, from its content when that tells (an m.thread relation, or none: the
 * main timeline), else from the event it relates to (threadsOf). No statement when no event
 * relates to another through a relation other than m.thread.
 */
export async function threadsOfEvents(db: Kysely<Schema>, events: readonly { readonly eventId: string; readonly content: JsonObject }[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const parents = new Map<string, string>();
  for (const e of events) {
    const rel = relationOf(e.content);
    if (rel === undefined) out.set(e.eventId, MAIN_THREAD);
    else if (rel.relType === THREAD) out.set(e.eventId, rel.eventId);
    else parents.set(e.eventId, rel.eventId);
  }
  if (parents.size > 0) {
    const threads = await threadsReading(db, [...parents.values()], THREAD_HOPS);
    for (const [id, parent] of parents) out.set(id, threads.get(parent) ?? MAIN_THREAD);
  }
  return out;
}
