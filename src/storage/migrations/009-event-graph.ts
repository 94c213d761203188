// The room as an event graph. Events may now be stored off the timeline (outliers, rejected and
// soft-failed events have no stream position; backfilled ones get negative positions), the graph's
// edges get tables of their own (auth events, prev events, the prev events we lack), and current
// state changes are recorded as deltas by position, with each room's joined servers beside them.
// Existing data is upgraded in place: every event before this migration was on the timeline of a
// linear room unless it was rejected.

import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import type { HearthMigration } from './index.js';

/** Events read per round while filling event_auth and event_edges from their JSON. */
const FILL_BATCH = 1000;
/** Rows per multi-row insert (two parameters each: far below both backends' limits). */
const INSERT_CHUNK = 1000;

export const eventGraph: HearthMigration = {
  name: '009-event-graph',
  async up(db: Kysely<unknown>, dialect: DialectName) {
    // PostgreSQL runs each migration in a transaction; on SQLite Kysely does not, and a rebuild
    // stopped halfway (a crash between dropping and renaming) must not leave the table behind.
    if (dialect === 'sqlite') await db.transaction().execute((trx) => upgrade(trx, dialect));
    else await upgrade(db, dialect);
  },
};

async function upgrade(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  // SQLite: tables keyed by their primary key alone are stored as that one b-tree.
  const keyedTable = <T extends { modifyEnd(node: ReturnType<typeof sql>): T }>(t: T): T =>
    dialect === 'sqlite' ? t.modifyEnd(sql`without rowid`) : t;

  if (dialect === 'postgres') {
    await sql`alter table events alter column stream_ordering drop not null`.execute(db);
    await sql`alter table events add column status text not null default 'timeline'`.execute(db);
    await sql`update events set status = 'rejected', stream_ordering = null where rejected <> 0`.execute(db);
    await sql`alter table events drop column rejected`.execute(db);
  } else {
    await rebuildSqliteEvents(db);
  }

  await keyedTable(
    db.schema
      .createTable('event_auth')
      .addColumn('event_nid', 'bigint', (c) => c.notNull())
      .addColumn('auth_event_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('event_auth_pk', ['event_nid', 'auth_event_id']),
  ).execute();
  await keyedTable(
    db.schema
      .createTable('event_edges')
      .addColumn('event_nid', 'bigint', (c) => c.notNull())
      .addColumn('prev_event_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('event_edges_pk', ['event_nid', 'prev_event_id']),
  ).execute();
  // Which stored events cite an event as a prev event (is it still an extremity, a gap's end).
  await db.schema.createIndex('event_edges_prev').on('event_edges').column('prev_event_id').execute();
  await keyedTable(
    db.schema
      .createTable('backward_extremities')
      .addColumn('room_nid', 'bigint', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('backward_extremities_pk', ['room_nid', 'event_id']),
  ).execute();
  await keyedTable(
    db.schema
      .createTable('current_state_deltas')
      .addColumn('position', 'bigint', (c) => c.notNull())
      .addColumn('room_nid', 'bigint', (c) => c.notNull())
      .addColumn('state_key_nid', 'bigint', (c) => c.notNull())
      .addColumn('event_nid', 'bigint')
      .addColumn('prev_event_nid', 'bigint')
      .addPrimaryKeyConstraint('current_state_deltas_pk', ['room_nid', 'position', 'state_key_nid']),
  ).execute();
  // Sync across rooms reads deltas by position.
  await db.schema.createIndex('current_state_deltas_position').on('current_state_deltas').column('position').execute();
  await keyedTable(
    db.schema
      .createTable('room_joined_servers')
      .addColumn('room_nid', 'bigint', (c) => c.notNull())
      .addColumn('server_name', 'text', (c) => c.notNull())
      .addColumn('joined_members', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('room_joined_servers_pk', ['room_nid', 'server_name']),
  ).execute();
  await db.schema.alterTable('rooms').addColumn('latest_position', 'bigint').execute();

  await fillGraphEdges(db);
  // Prev events cited that this server does not have (none for rooms that never federated).
  await sql`insert into backward_extremities (room_nid, event_id)
    select distinct e.room_nid, g.prev_event_id from event_edges g join events e on e.event_nid = g.event_nid
    where not exists (select 1 from events p where p.event_id = g.prev_event_id)`.execute(db);
  await fillCurrentStateDeltas(db);
  await sql`update rooms set latest_position = (select max(e.stream_ordering) from events e where e.room_nid = rooms.room_nid)`.execute(db);
  const server =
    dialect === 'postgres' ? sql`substr(user_id, strpos(user_id, ':') + 1)` : sql`substr(user_id, instr(user_id, ':') + 1)`;
  await sql`insert into room_joined_servers (room_nid, server_name, joined_members)
    select room_nid, ${server}, count(*) from room_memberships where membership = 'join' group by room_nid, ${server}`.execute(db);
}

/**
 * SQLite cannot drop a NOT NULL constraint: the table is rebuilt (create, copy, drop, rename) and
 * the indexes of migration 003 are created again on it.
 */
async function rebuildSqliteEvents(db: Kysely<unknown>): Promise<void> {
  await sql`create table events_new (
    event_nid integer primary key autoincrement,
    event_id text not null unique,
    room_nid bigint not null,
    type text not null,
    state_key text,
    sender text not null,
    origin_server_ts bigint not null,
    depth bigint not null,
    stream_ordering bigint unique,
    status text not null default 'timeline',
    json text not null,
    unsigned_json text,
    redacts text,
    redacted_by text,
    rejection_reason text,
    state_before_nid bigint,
    state_after_nid bigint,
    txn_device_id text,
    txn_id text
  )`.execute(db);
  const kept = sql`event_nid, event_id, room_nid, type, state_key, sender, origin_server_ts, depth, json, unsigned_json,
    redacts, redacted_by, rejection_reason, state_before_nid, state_after_nid, txn_device_id, txn_id`;
  await sql`insert into events_new (${kept}, stream_ordering, status)
    select ${kept},
      case when rejected <> 0 then null else stream_ordering end,
      case when rejected <> 0 then 'rejected' else 'timeline' end
    from events order by event_nid`.execute(db);
  // Keep the auto-increment counter where it was: a nid is never handed out twice.
  await sql`update sqlite_sequence set seq = max(seq, coalesce((select seq from sqlite_sequence where name = 'events'), 0))
    where name = 'events_new'`.execute(db);
  await sql`drop table events`.execute(db);
  await sql`alter table events_new rename to events`.execute(db);

  // The indexes of migration 003, unchanged.
  await db.schema.createIndex('events_room_stream').on('events').columns(['room_nid', 'stream_ordering']).execute();
  await db.schema.createIndex('events_txn').on('events').columns(['room_nid', 'sender', 'txn_device_id', 'txn_id']).unique().execute();
  await db.schema
    .createIndex('events_room_state')
    .on('events')
    .columns(['room_nid', 'type', 'state_key', 'stream_ordering'])
    .where(sql.ref('state_key'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('events_member_target')
    .on('events')
    .columns(['state_key', 'stream_ordering'])
    .where(sql.ref('type'), '=', 'm.room.member')
    .execute();
  await db.schema.createIndex('events_redacts').on('events').column('redacts').where(sql.ref('redacts'), 'is not', null).execute();
}

/** The event ids a PDU field cites: plain ids (room versions 3 and later) or [id, {hashes}] pairs (1 and 2). */
function citedIds(refs: unknown): string[] {
  if (!Array.isArray(refs)) return [];
  const out = new Set<string>();
  for (const ref of refs) {
    const id: unknown = Array.isArray(ref) ? ref[0] : ref;
    if (typeof id === 'string') out.add(id);
  }
  return [...out];
}

/** event_auth and event_edges from every event's JSON, a batch of events at a time. */
async function fillGraphEdges(db: Kysely<unknown>): Promise<void> {
  for (let after = -1; ; ) {
    const { rows } = await sql<{ event_nid: number; json: string }>`select event_nid, json from events
      where event_nid > ${after} order by event_nid limit ${FILL_BATCH}`.execute(db);
    if (rows.length === 0) return;
    const auth: [number, string][] = [];
    const edges: [number, string][] = [];
    for (const r of rows) {
      const nid = Number(r.event_nid);
      const pdu = JSON.parse(r.json) as { auth_events?: unknown; prev_events?: unknown };
      for (const id of citedIds(pdu.auth_events)) auth.push([nid, id]);
      for (const id of citedIds(pdu.prev_events)) edges.push([nid, id]);
    }
    await insertPairs(db, 'event_auth', 'auth_event_id', auth);
    await insertPairs(db, 'event_edges', 'prev_event_id', edges);
    after = Number(rows[rows.length - 1]!.event_nid);
  }
}

async function insertPairs(db: Kysely<unknown>, table: string, column: string, pairs: readonly [number, string][]): Promise<void> {
  for (let i = 0; i < pairs.length; i += INSERT_CHUNK) {
    const values = pairs.slice(i, i + INSERT_CHUNK).map(([nid, id]) => sql`(${nid}, ${id})`);
    await sql`insert into ${sql.table(table)} (event_nid, ${sql.ref(column)}) values ${sql.join(values)}`.execute(db);
  }
}

/**
 * A delta per timeline state event, at its own position, from the event before it at that key.
 * Before this migration rooms were linear: each accepted state event replaced its key's entry.
 */
async function fillCurrentStateDeltas(db: Kysely<unknown>): Promise<void> {
  await sql`insert into event_state_keys (event_type, state_key)
    select distinct e.type, e.state_key from events e
    where e.state_key is not null and e.stream_ordering is not null
      and not exists (select 1 from event_state_keys k where k.event_type = e.type and k.state_key = e.state_key)`.execute(db);
  await sql`insert into current_state_deltas (position, room_nid, state_key_nid, event_nid, prev_event_nid)
    select e.stream_ordering, e.room_nid, k.state_key_nid, e.event_nid,
      lag(e.event_nid) over (partition by e.room_nid, k.state_key_nid order by e.stream_ordering)
    from events e join event_state_keys k on k.event_type = e.type and k.state_key = e.state_key
    where e.state_key is not null and e.stream_ordering is not null`.execute(db);
}
