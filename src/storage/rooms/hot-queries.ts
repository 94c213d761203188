// The statements every send runs, compiled once per database: the transaction-id lookup and a
// batch's append: events-stream positions, event rows with their auth and prev references, the
// rooms' latest positions and the forward extremity of a linear room. On PostgreSQL the append is
// one statement (a round trip costs more than the work), its rows as one array per column; on
// SQLite its statements are prepared on the connection and run inside the writer's transaction.

import { CompiledQuery, sql, type Kysely } from 'kysely';
import type BetterSqlite3 from 'better-sqlite3';
import { PREPARED, sqliteHandleOf, type DialectName } from '../database.js';
import type { Schema } from '../schema.js';
import { compileOnce, type CompiledStatement } from './compiled.js';
import type { NewEventRow } from './events.js';
import { kyselyStateWrites, SqliteStateWrites, type StateWrites } from './state-writes.js';

type Row<T> = Required<{ [K in keyof T]: T[K] }>;

/** An event row to insert, with the auth and prev events it cites (rows of event_auth, event_edges). */
export interface NewEvent {
  /** Its stream_ordering is that of `streamRank` when it has one. */
  readonly row: Row<NewEventRow>;
  /** Which of the batch's new events-stream positions it takes (0 for the first), if any. */
  readonly streamRank: number | undefined;
  readonly authEventIds: readonly string[];
  readonly prevEventIds: readonly string[];
}

/** What a batch moves forward in one room. */
export interface RoomAdvance {
  readonly roomNid: number;
  /** The rank of its newest position taken in the batch: the room's latest position (never moved back). */
  readonly latestRank: number | undefined;
  /** The one forward extremity replacing the one stored: an event inserted in the batch (by id) or stored before (by nid). */
  readonly extremity: { readonly eventId: string } | { readonly nid: number } | undefined;
}

export interface AppendBatch {
  /** How many events-stream positions the batch takes. */
  readonly positions: number;
  /** Inserted in this order (their nids rise in it). */
  readonly events: readonly NewEvent[];
  readonly rooms: readonly RoomAdvance[];
}

export interface Appended {
  /** The nids of the inserted events, in order. */
  readonly nids: number[];
  /** The position of rank 0 (meaningless when the batch took none). */
  readonly firstPosition: number;
}

// The events columns a send fills, with their PostgreSQL types.
const EVENT_COLUMNS = [
  ['event_id', 'text'],
  ['room_nid', 'int8'],
  ['type', 'text'],
  ['state_key', 'text'],
  ['sender', 'text'],
  ['origin_server_ts', 'int8'],
  ['depth', 'int8'],
  ['stream_ordering', 'int8'],
  ['json', 'text'],
  ['unsigned_json', 'text'],
  ['redacts', 'text'],
  ['redacted_by', 'text'],
  ['status', 'text'],
  ['rejection_reason', 'text'],
  ['state_before_nid', 'int8'],
  ['state_after_nid', 'int8'],
  ['txn_device_id', 'text'],
  ['txn_id', 'text'],
] as const satisfies readonly (readonly [keyof NewEventRow, string])[];

// PostgreSQL: the whole append in one statement. Rows go in in the order given (so nids rise in
// that order) and are matched back by event id; the last row carries the first position.
const APPEND_SQL = (() => {
  const n = EVENT_COLUMNS.length;
  const names = EVENT_COLUMNS.map(([c]) => c).join(', ');
  const arrays = EVENT_COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ');
  const values = EVENT_COLUMNS.map(([c]) => (c === 'stream_ordering' ? `coalesce(a.first + r.rank, r.stream_ordering)` : `r.${c}`)).join(', ');
  const refs = (table: string, column: string, first: number) =>
    `insert into ${table} (event_nid, ${column})
      select ins.event_nid, g.id from unnest($${first}::text[], $${first + 1}::text[]) as g(event_id, id) join ins on ins.event_id = g.event_id
      on conflict do nothing`;
  const count = `$${n + 6}::int8`;
  const rooms = `$${n + 7}::int8[], $${n + 8}::int8[], $${n + 9}::int8[], $${n + 10}::text[]`;
  return `${PREPARED}with alloc as (
      insert into stream_positions (stream, position) select 'events', ${count} where ${count} > 0
      on conflict (stream) do update set position = stream_positions.position + excluded.position
      returning position - ${count} + 1 as first
    ), a as (
      select (select first from alloc) as first
    ), ins as (
      insert into events (${names})
      select ${values} from unnest(${arrays}, $${n + 1}::int8[]) with ordinality as r(${names}, rank, i), a order by r.i
      returning event_nid, event_id
    ), auth as (${refs('event_auth', 'auth_event_id', n + 2)}
    ), edges as (${refs('event_edges', 'prev_event_id', n + 4)}
    ), v as (
      select * from unnest(${rooms}) as v(room_nid, latest_rank, extremity_nid, extremity_id)
    ), latest as (
      update rooms r set latest_position = a.first + v.latest_rank from v, a
      where r.room_nid = v.room_nid and v.latest_rank is not null and (r.latest_position is null or r.latest_position < a.first + v.latest_rank)
    ), moved as (
      update forward_extremities f set event_nid = coalesce(v.extremity_nid, (select ins.event_nid from ins where ins.event_id = v.extremity_id)) from v
      where f.room_nid = v.room_nid and (v.extremity_nid is not null or v.extremity_id is not null)
    )
    select event_id, event_nid as nid from ins
    union all select null, first from a`;
})();

/**
 * SQLite: the append's statements prepared on the connection itself. Run synchronously inside the
 * writer's transaction they cost a few microseconds each, where Kysely's promise chain around
 * each one costs several times that (a send runs about ten).
 */
class SqliteAppend {
  private readonly allocate: BetterSqlite3.Statement;
  private readonly insertEvent: BetterSqlite3.Statement;
  private readonly authRow: BetterSqlite3.Statement;
  private readonly edgeRow: BetterSqlite3.Statement;
  private readonly latest: BetterSqlite3.Statement;
  private readonly moveExtremity: BetterSqlite3.Statement;

  constructor(sqlite: BetterSqlite3.Database) {
    this.allocate = sqlite.prepare(
      `insert into stream_positions (stream, position) values ('events', ?)
       on conflict (stream) do update set position = stream_positions.position + excluded.position returning position`,
    );
    const names = EVENT_COLUMNS.map(([c]) => c);
    this.insertEvent = sqlite.prepare(`insert into events (${names.join(', ')}) values (${names.map(() => '?').join(', ')}) returning event_nid`);
    this.authRow = sqlite.prepare('insert into event_auth (event_nid, auth_event_id) values (?, ?) on conflict do nothing');
    this.edgeRow = sqlite.prepare('insert into event_edges (event_nid, prev_event_id) values (?, ?) on conflict do nothing');
    this.latest = sqlite.prepare('update rooms set latest_position = ? where room_nid = ? and (latest_position is null or latest_position < ?)');
    this.moveExtremity = sqlite.prepare('update forward_extremities set event_nid = ? where room_nid = ?');
  }

  run({ positions, events, rooms }: AppendBatch): Appended {
    const firstPosition = positions > 0 ? Number((this.allocate.get(positions) as { position: number }).position) - positions + 1 : 0;
    const nids: number[] = [];
    const nidOf = new Map<string, number>();
    for (const e of events) {
      const values = EVENT_COLUMNS.map(([c]) => (c === 'stream_ordering' && e.streamRank !== undefined ? firstPosition + e.streamRank : e.row[c]));
      const event = Number((this.insertEvent.get(values) as { event_nid: number }).event_nid);
      for (const id of e.authEventIds) this.authRow.run(event, id);
      for (const id of e.prevEventIds) this.edgeRow.run(event, id);
      nids.push(event);
      nidOf.set(e.row.event_id, event);
    }
    for (const r of rooms) {
      if (r.latestRank !== undefined) this.latest.run(firstPosition + r.latestRank, r.roomNid, firstPosition + r.latestRank);
      if (r.extremity !== undefined) this.moveExtremity.run('nid' in r.extremity ? r.extremity.nid : nidOf.get(r.extremity.eventId)!, r.roomNid);
    }
    return { nids, firstPosition };
  }
}

export class HotRoomQueries {
  private readonly txnLookup: CompiledStatement<{ room: number; sender: string; device: string; txn: string }, { event_id: string }>;
  private readonly allocate: CompiledStatement<{ count: number }, { position: number }>;
  /** Prepared on first use: the tables may not exist yet when this is made. */
  private sqlite: SqliteAppend | undefined;
  private sqliteState: SqliteStateWrites | undefined;
  private readonly sqliteHandle: BetterSqlite3.Database | undefined;

  constructor(
    db: Kysely<Schema>,
    private readonly dialect: DialectName = 'sqlite',
  ) {
    this.sqliteHandle = dialect === 'sqlite' ? sqliteHandleOf(db) : undefined;
    this.txnLookup = compileOnce((p) =>
      db
        .selectFrom('events')
        .select('event_id')
        .where('room_nid', '=', p('room'))
        .where('sender', '=', p('sender'))
        .where('txn_device_id', '=', p('device'))
        .where('txn_id', '=', p('txn')),
    );
    this.allocate = compileOnce((p) =>
      db
        .insertInto('stream_positions')
        .values({ stream: 'events', position: p('count') })
        .onConflict((oc) => oc.column('stream').doUpdateSet({ position: sql<number>`stream_positions.position + ${p('count')}` }))
        .returning('position'),
    );
  }

  /** The state writes of a batch in the transaction `trx` (SQLite: on the connection itself). */
  stateWrites(trx: Kysely<Schema>): StateWrites {
    if (this.sqliteHandle === undefined || !trx.isTransaction) return kyselyStateWrites(trx);
    return (this.sqliteState ??= new SqliteStateWrites(this.sqliteHandle));
  }

  /**
   * Takes the batch's events-stream positions, inserts its event rows with their auth and prev
   * references (an id cited twice is kept once) and moves its rooms forward. Atomic outside a
   * transaction too: on PostgreSQL it is one statement, on SQLite it takes a transaction of its own.
   */
  async appendEvents(trx: Kysely<Schema>, batch: AppendBatch): Promise<Appended> {
    if (batch.positions === 0 && batch.events.length === 0 && batch.rooms.length === 0) return { nids: [], firstPosition: 0 };
    if (this.dialect === 'sqlite') {
      const handle = this.sqliteHandle;
      if (handle === undefined) throw new Error('the SQLite append runs on a database openDatabase opened');
      const append = (this.sqlite ??= new SqliteAppend(handle));
      // The connection is shared: its own statements run only inside a transaction, the writer's
      // or, alone, one of their own taken with the connection (so no other query is in between).
      if (trx.isTransaction) return append.run(batch);
      return trx.connection().execute(async () => handle.transaction(() => append.run(batch))());
    }
    const { events, rooms } = batch;
    const columns = EVENT_COLUMNS.map(([c]) => events.map((e) => e.row[c]));
    const refs = (ids: (e: NewEvent) => readonly string[]): [string[], string[]] => {
      const of: string[] = [];
      const cited: string[] = [];
      for (const e of events) for (const id of ids(e)) (of.push(e.row.event_id), cited.push(id));
      return [of, cited];
    };
    const params = [
      ...columns,
      events.map((e) => e.streamRank ?? null),
      ...refs((e) => e.authEventIds),
      ...refs((e) => e.prevEventIds),
      batch.positions,
      rooms.map((r) => r.roomNid),
      rooms.map((r) => r.latestRank ?? null),
      rooms.map((r) => (r.extremity !== undefined && 'nid' in r.extremity ? r.extremity.nid : null)),
      rooms.map((r) => (r.extremity !== undefined && 'eventId' in r.extremity ? r.extremity.eventId : null)),
    ];
    const { rows } = await trx.executeQuery<{ event_id: string | null; nid: number | null }>(CompiledQuery.raw(APPEND_SQL, params));
    const nidOf = new Map<string, number>();
    let firstPosition = 0;
    for (const r of rows) {
      if (r.event_id !== null) nidOf.set(r.event_id, Number(r.nid));
      else if (r.nid !== null) firstPosition = Number(r.nid);
    }
    return { nids: events.map((e) => nidOf.get(e.row.event_id)!), firstPosition };
  }

  /** The event a device sent into a room with this transaction id, if any. */
  async eventIdByTxn(db: Kysely<Schema>, room: number, sender: string, device: string, txn: string): Promise<string | undefined> {
    const { rows } = await this.txnLookup(db, { room, sender, device, txn });
    return rows[0]?.event_id;
  }

  /**
   * Allocates `count` consecutive positions on the events stream within the caller's
   * transaction (as storage/streams.ts does one at a time); returns the first.
   */
  async allocateEventPositions(trx: Kysely<Schema>, count: number): Promise<number> {
    const { rows } = await this.allocate(trx, { count });
    return Number(rows[0]!.position) - count + 1;
  }
}
