// Room aliases of this server: alias → room id, with who created it.

import type { Kysely, Selectable } from 'kysely';
import type { RoomAliasesTable, Schema } from '../schema.js';

export type AliasRow = Selectable<RoomAliasesTable>;

/** Adds an alias; false when it already exists. */
export async function insertAlias(
  db: Kysely<Schema>,
  row: { alias: string; roomId: string; creator: string; createdTs: number },
): Promise<boolean> {
  const inserted = await db
    .insertInto('room_aliases')
    .values({ alias: row.alias, room_id: row.roomId, creator: row.creator, created_ts: row.createdTs })
    .onConflict((oc) => oc.column('alias').doNothing())
    .returning('alias')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function aliasRow(db: Kysely<Schema>, alias: string): Promise<AliasRow | undefined> {
  return db.selectFrom('room_aliases').selectAll().where('alias', '=', alias).executeTakeFirst();
}

export async function aliasesOfRoom(db: Kysely<Schema>, roomId: string): Promise<string[]> {
  const rows = await db.selectFrom('room_aliases').select('alias').where('room_id', '=', roomId).orderBy('alias').execute();
  return rows.map((r) => r.alias);
}

export async function deleteAlias(db: Kysely<Schema>, alias: string): Promise<boolean> {
  const r = await db.deleteFrom('room_aliases').where('alias', '=', alias).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Points every alias of `fromRoomId` at `toRoomId` (a room upgrade); returns the aliases moved. */
export async function moveAliases(db: Kysely<Schema>, fromRoomId: string, toRoomId: string): Promise<string[]> {
  const rows = await db.updateTable('room_aliases').set({ room_id: toRoomId }).where('room_id', '=', fromRoomId).returning('alias').execute();
  return rows.map((r) => r.alias).sort();
}
