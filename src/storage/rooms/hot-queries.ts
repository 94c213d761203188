// The statements every send runs, compiled once per database: the transaction-id lookup, the
// event rows with their auth and prev references, the events-stream positions, the rooms' latest
// positions and the forward extremity of a linear room. On PostgreSQL a batch's rows go in as
// one array per column, so a batch costs the same few round trips whatever its size.

import { CompiledQuery, sql, type Kysely } from 'kysely';
import { PREPARED, type DialectName } from '../database.js';
import type { Schema } from '../schema.js';
import { compileOnce, type CompiledStatement } from './compiled.js';
import type { NewEventRow } from './events.js';

type Row<T> = Required<{ [K in keyof T]: T[K] }>;

/** An event row to insert, with the auth and prev events it cites (rows of event_auth, event_edges). */
export interface NewEvent {
  readonly row: Row<NewEventRow>;
  readonly authEventIds: readonly string[];
  readonly prevEventIds: readonly string[];
}

/** What a batch moves forward in one room: its latest position, and the one forward extremity replacing the one stored. */
export interface RoomAdvance {
  readonly roomNid: number;
  readonly position: number | undefined;
  readonly extremity: number | undefined;
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

// PostgreSQL: a batch's event rows and their references in one statement, one array per column.
// Rows go in in the order given (so nids rise in that order) and are matched back by event id.
const EVENTS_SQL = (() => {
  const n = EVENT_COLUMNS.length;
  const names = EVENT_COLUMNS.map(([c]) => c).join(', ');
  const arrays = EVENT_COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ');
  const refs = (table: string, column: string, first: number) =>
    `insert into ${table} (event_nid, ${column})
      select ins.event_nid, g.id from unnest($${first}::text[], $${first + 1}::text[]) as g(event_id, id) join ins on ins.event_id = g.event_id
      on conflict do nothing`;
  return `${PREPARED}with ins as (
      insert into events (${names})
      select ${names} from unnest(${arrays}) with ordinality as r(${names}, i) order by i
      returning event_nid, event_id
    ), auth as (${refs('event_auth', 'auth_event_id', n + 1)}
    ), edges as (${refs('event_edges', 'prev_event_id', n + 3)}
    )
    select event_id, event_nid from ins`;
})();

// PostgreSQL: every room's latest position and single forward extremity in one statement.
const ADVANCE_SQL = `${PREPARED}with v as (
    select * from unnest($1::int8[], $2::int8[], $3::int8[]) as v(room_nid, position, extremity)
  ), latest as (
    update rooms r set latest_position = v.position from v
    where r.room_nid = v.room_nid and v.position is not null and (r.latest_position is null or r.latest_position < v.position)
  )
  update forward_extremities f set event_nid = v.extremity from v where f.room_nid = v.room_nid and v.extremity is not null`;

export class HotRoomQueries {
  private readonly txnLookup: CompiledStatement<{ room: number; sender: string; device: string; txn: string }, { event_id: string }>;
  private readonly insertEvent: CompiledStatement<Row<NewEventRow>, { event_nid: number }>;
  private readonly allocate: CompiledStatement<{ count: number }, { position: number }>;
  private readonly moveExtremity: CompiledStatement<{ room: number; event: number }, unknown>;
  private readonly latest: CompiledStatement<{ room: number; position: number }, unknown>;
  /**
   * SQLite: one row at a time through prepared statements, cheaper there than parsing arrays or
   * JSON (no round trips to save). PostgreSQL: a batch in a statement or two.
   */
  private readonly rowAtATime: boolean;
  private readonly authRow: CompiledStatement<{ event: number; id: string }, unknown>;
  private readonly edgeRow: CompiledStatement<{ event: number; id: string }, unknown>;

  constructor(db: Kysely<Schema>, dialect: DialectName = 'sqlite') {
    this.txnLookup = compileOnce((p) =>
      db
        .selectFrom('events')
        .select('event_id')
        .where('room_nid', '=', p('room'))
        .where('sender', '=', p('sender'))
        .where('txn_device_id', '=', p('device'))
        .where('txn_id', '=', p('txn')),
    );
    this.insertEvent = compileOnce((p) =>
      db
        .insertInto('events')
        .values({
          event_id: p('event_id'),
          room_nid: p('room_nid'),
          type: p('type'),
          state_key: p('state_key'),
          sender: p('sender'),
          origin_server_ts: p('origin_server_ts'),
          depth: p('depth'),
          stream_ordering: p('stream_ordering'),
          json: p('json'),
          unsigned_json: p('unsigned_json'),
          redacts: p('redacts'),
          redacted_by: p('redacted_by'),
          status: p('status'),
          rejection_reason: p('rejection_reason'),
          state_before_nid: p('state_before_nid'),
          state_after_nid: p('state_after_nid'),
          txn_device_id: p('txn_device_id'),
          txn_id: p('txn_id'),
        })
        .returning('event_nid'),
    );
    this.allocate = compileOnce((p) =>
      db
        .insertInto('stream_positions')
        .values({ stream: 'events', position: p('count') })
        .onConflict((oc) => oc.column('stream').doUpdateSet({ position: sql<number>`stream_positions.position + ${p('count')}` }))
        .returning('position'),
    );
    this.moveExtremity = compileOnce((p) =>
      db.updateTable('forward_extremities').set({ event_nid: p('event') }).where('room_nid', '=', p('room')),
    );
    this.latest = compileOnce((p) =>
      db
        .updateTable('rooms')
        .set({ latest_position: p('position') })
        .where('room_nid', '=', p('room'))
        .where((eb) => eb.or([eb('latest_position', 'is', null), eb('latest_position', '<', p('position'))])),
    );
    this.rowAtATime = dialect === 'sqlite';
    this.authRow = compileOnce((p) =>
      db.insertInto('event_auth').values({ event_nid: p('event'), auth_event_id: p('id') }).onConflict((oc) => oc.doNothing()),
    );
    this.edgeRow = compileOnce((p) =>
      db.insertInto('event_edges').values({ event_nid: p('event'), prev_event_id: p('id') }).onConflict((oc) => oc.doNothing()),
    );
  }

  /**
   * Inserts event rows with their auth and prev references (an id cited twice is kept once);
   * returns their nids, in the order given.
   */
  async insertEvents(trx: Kysely<Schema>, events: readonly NewEvent[]): Promise<number[]> {
    if (events.length === 0) return [];
    if (this.rowAtATime) {
      const nids: number[] = [];
      for (const e of events) {
        const { rows } = await this.insertEvent(trx, e.row);
        const event = Number(rows[0]!.event_nid);
        for (const id of e.authEventIds) await this.authRow(trx, { event, id });
        for (const id of e.prevEventIds) await this.edgeRow(trx, { event, id });
        nids.push(event);
      }
      return nids;
    }
    const columns = EVENT_COLUMNS.map(([c]) => events.map((e) => e.row[c]));
    const refs = (ids: (e: NewEvent) => readonly string[]): [string[], string[]] => {
      const of: string[] = [];
      const cited: string[] = [];
      for (const e of events) for (const id of ids(e)) (of.push(e.row.event_id), cited.push(id));
      return [of, cited];
    };
    const params = [...columns, ...refs((e) => e.authEventIds), ...refs((e) => e.prevEventIds)];
    const { rows } = await trx.executeQuery<{ event_id: string; event_nid: number }>(CompiledQuery.raw(EVENTS_SQL, params));
    const nidOf = new Map(rows.map((r) => [r.event_id, Number(r.event_nid)]));
    return events.map((e) => nidOf.get(e.row.event_id)!);
  }

  /** Moves rooms' latest positions forward (never back) and their single forward extremities. */
  async advanceRooms(trx: Kysely<Schema>, rooms: readonly RoomAdvance[]): Promise<void> {
    if (rooms.length === 0) return;
    if (this.rowAtATime) {
      for (const r of rooms) {
        if (r.position !== undefined) await this.latest(trx, { room: r.roomNid, position: r.position });
        if (r.extremity !== undefined) await this.moveExtremity(trx, { room: r.roomNid, event: r.extremity });
      }
      return;
    }
    const params = [rooms.map((r) => r.roomNid), rooms.map((r) => r.position ?? null), rooms.map((r) => r.extremity ?? null)];
    await trx.executeQuery(CompiledQuery.raw(ADVANCE_SQL, params));
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
