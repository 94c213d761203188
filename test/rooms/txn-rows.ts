// For the transaction-id tests: a migrated database holding one room, the hot queries counting the
// transaction-id lookups that reach the database, and event rows stored as a send stores them.

import { after, before } from 'node:test';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { HotRoomQueries } from '../../src/storage/rooms/hot-queries.js';
import { insertRoom } from '../../src/storage/rooms/rooms.js';
import type { Schema } from '../../src/storage/schema.js';
import type { TestDatabase } from '../support/databases.js';
import { forwardTo } from '../support/forward.js';

export interface TxnRows {
  readonly database: Database<Schema>;
  readonly queries: HotRoomQueries;
  readonly roomNid: number;
  /** Calls of queries.eventIdByTxn; tests set it to 0 before the calls they count. */
  lookups: number;
  /** Stores an event row sent by `sender` from `device` with `txn`; returns its event id. */
  store(sender: string, device: string, txn: string): Promise<string>;
}

/**
 * For a suite on one storage backend: registers hooks that set up a fresh database with the room
 * `roomId` before the suite's tests and drop it after them, and returns an object standing for it.
 */
export function useTxnRows(backend: { create(): Promise<TestDatabase> }, roomId: string): TxnRows {
  let target: TestDatabase | undefined;
  let opened: Database<Schema> | undefined;
  let rows: TxnRows | undefined;
  before(async () => {
    target = await backend.create();
    const database = (opened = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 }));
    await migrateToLatest(database.db as never, database.dialect);
    const queries = new HotRoomQueries(database.db, database.dialect);
    const roomNid = await insertRoom(database.db, { roomId, version: '10', creator: '@a:hs', createdTs: 0, isPublic: false });
    let position = 0;
    const made: TxnRows = {
      database,
      queries,
      roomNid,
      lookups: 0,
      async store(sender, device, txn) {
        position++;
        const eventId = `$e${position}`;
        const row = {
          event_id: eventId, room_nid: roomNid, type: 'm.room.message', state_key: null, sender, origin_server_ts: 0, depth: position,
          stream_ordering: position, json: '{}', unsigned_json: null, redacts: null, redacted_by: null, status: 'timeline', rejection_reason: null,
          state_before_nid: null, state_after_nid: null, txn_device_id: device, txn_id: txn,
        } as const;
        await database.db.transaction().execute((trx) =>
          queries.appendEvents(trx, { positions: 0, events: [{ row, streamRank: undefined, authEventIds: [], prevEventIds: [] }], rooms: [] }),
        );
        return eventId;
      },
    };
    const lookup = queries.eventIdByTxn.bind(queries);
    queries.eventIdByTxn = (...args) => {
      made.lookups++;
      return lookup(...args);
    };
    rows = made;
  });
  after(async () => {
    await opened?.close();
    await target?.drop();
  });
  return forwardTo(() => rows, 'the transaction-id rows');
}
