// The statements every send runs, compiled once per database: the transaction-id lookup, the
// event row, the events-stream positions and the forward extremity of a linear room.

import { sql, type Kysely } from 'kysely';
import type { Schema } from '../schema.js';
import { compileOnce, type CompiledStatement } from './compiled.js';
import type { NewEventRow } from './events.js';

type Row<T> = Required<{ [K in keyof T]: T[K] }>;

export class HotRoomQueries {
  private readonly txnLookup: CompiledStatement<{ room: number; sender: string; device: string; txn: string }, { event_id: string }>;
  private readonly insertEvent: CompiledStatement<Row<NewEventRow>, { event_nid: number }>;
  private readonly allocate: CompiledStatement<{ count: number }, { position: number }>;
  private readonly moveExtremity: CompiledStatement<{ room: number; event: number }, unknown>;

  constructor(db: Kysely<Schema>) {
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
