// The statements every send runs, compiled once per database: the transaction-id lookup, the
// event row, its auth and prev references, the events-stream positions, the room's latest
// position and the forward extremity of a linear room.

import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import type { Schema } from '../schema.js';
import { compileOnce, type CompiledStatement } from './compiled.js';
import type { NewEventRow } from './events.js';

type Row<T> = Required<{ [K in keyof T]: T[K] }>;

export class HotRoomQueries {
  private readonly txnLookup: CompiledStatement<{ room: number; sender: string; device: string; txn: string }, { event_id: string }>;
  private readonly insertEvent: CompiledStatement<Row<NewEventRow>, { event_nid: number }>;
  private readonly allocate: CompiledStatement<{ count: number }, { position: number }>;
  private readonly moveExtremity: CompiledStatement<{ room: number; event: number }, unknown>;
  private readonly latest: CompiledStatement<{ room: number; position: number }, unknown>;
  /** PostgreSQL: (event nid, id) pairs as one JSON array, one round trip whatever the count. */
  private readonly graphInserts: { readonly auth: string; readonly edges: string };
  /** SQLite: one row at a time through a prepared statement, cheaper than parsing JSON. */
  private readonly authRow: CompiledStatement<{ event: number; id: string }, unknown>;
  private readonly edgeRow: CompiledStatement<{ event: number; id: string }, unknown>;
  private readonly rowAtATime: boolean;

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
    const pairs = (table: string, column: string) =>
      `insert into ${table} (event_nid, ${column}) select (p->>0)::bigint, p->>1 from jsonb_array_elements($1::jsonb) as p on conflict do nothing`;
    this.graphInserts = { auth: pairs('event_auth', 'auth_event_id'), edges: pairs('event_edges', 'prev_event_id') };
    this.rowAtATime = dialect === 'sqlite';
    this.authRow = compileOnce((p) =>
      db.insertInto('event_auth').values({ event_nid: p('event'), auth_event_id: p('id') }).onConflict((oc) => oc.doNothing()),
    );
    this.edgeRow = compileOnce((p) =>
      db.insertInto('event_edges').values({ event_nid: p('event'), prev_event_id: p('id') }).onConflict((oc) => oc.doNothing()),
    );
  }

  /** The auth and prev references of new events (event_auth, event_edges). */
  async insertGraphRows(trx: Kysely<Schema>, rows: readonly { eventNid: number; authEventIds: readonly string[]; prevEventIds: readonly string[] }[]): Promise<void> {
    if (this.rowAtATime) {
      for (const r of rows) {
        for (const id of r.authEventIds) await this.authRow(trx, { event: r.eventNid, id });
        for (const id of r.prevEventIds) await this.edgeRow(trx, { event: r.eventNid, id });
      }
      return;
    }
    const auth = rows.flatMap((r) => r.authEventIds.map((id) => [r.eventNid, id]));
    const edges = rows.flatMap((r) => r.prevEventIds.map((id) => [r.eventNid, id]));
    if (auth.length > 0) await trx.executeQuery(CompiledQuery.raw(this.graphInserts.auth, [JSON.stringify(auth)]));
    if (edges.length > 0) await trx.executeQuery(CompiledQuery.raw(this.graphInserts.edges, [JSON.stringify(edges)]));
  }

  /** Moves a room's latest position forward (never back). */
  async setLatestPosition(trx: Kysely<Schema>, room: number, position: number): Promise<void> {
    await this.latest(trx, { room, position });
  }

  /** The event a device sent into a room with this transaction id, if any. */
  async eventIdByTxn(db: Kysely<Schema>, room: number, sender: string, device: string, txn: string): Promise<string | undefined> {
    const { rows } = await this.txnLookup(db, { room, sender, device, txn });
    return rows[0]?.event_id;
  }

  /** Inserts one event row; returns its nid. */
  async insertEventRow(trx: Kysely<Schema>, row: Row<NewEventRow>): Promise<number> {
    const { rows } = await this.insertEvent(trx, row);
    return Number(rows[0]!.event_nid);
  }

  /**
   * Allocates `count` consecutive positions on the events stream within the caller's
   * transaction (as storage/streams.ts does one at a time); returns the first.
   */
  async allocateEventPositions(trx: Kysely<Schema>, count: number): Promise<number> {
    const { rows } = await this.allocate(trx, { count });
    return Number(rows[0]!.position) - count + 1;
  }

  /** Points a room's single forward extremity at another event. */
  async moveForwardExtremity(trx: Kysely<Schema>, room: number, event: number): Promise<void> {
    await this.moveExtremity(trx, { room, event });
  }
}
