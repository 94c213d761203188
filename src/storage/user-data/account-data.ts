// Account data, global (room_id '') and per room, each row carrying the account_data stream
// position of its last write.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../../protocol/json.js';
import type { Schema } from '../schema.js';

export const GLOBAL_ROOM = '';

export interface AccountDataRow {
  /** '' for global account data. */
  readonly roomId: string;
  readonly type: string;
  readonly content: JsonObject;
  readonly position: number;
}

export async function upsertAccountData(
  db: Kysely<Schema>,
  userId: string,
  roomId: string,
  type: string,
  content: JsonObject,
  position: number,
): Promise<void> {
  const text = JSON.stringify(content);
  await db
    .insertInto('account_data')
    .values({ user_id: userId, room_id: roomId, type, content: text, stream_position: position })
    .onConflict((oc) =>
      oc.columns(['user_id', 'room_id', 'type']).doUpdateSet({ content: text, stream_position: position }),
    )
    .execute();
}

export async function selectAccountData(
  db: Kysely<Schema>,
  userId: string,
  roomId: string,
  type: string,
): Promise<JsonObject | undefined> {
  const row = await db
    .selectFrom('account_data')
    .select('content')
    .where('user_id', '=', userId)
    .where('room_id', '=', roomId)
    .where('type', '=', type)
    .executeTakeFirst();
  return row && (JSON.parse(row.content) as JsonObject);
}

/** Every item the user wrote after `afterPosition` (all of it for 0), oldest write first. */
export async function selectAccountDataSince(
  db: Kysely<Schema>,
  userId: string,
  afterPosition: number,
): Promise<AccountDataRow[]> {
  const rows = await db
    .selectFrom('account_data')
    .select(['room_id', 'type', 'content', 'stream_position'])
    .where('user_id', '=', userId)
    .where('stream_position', '>', afterPosition)
    .orderBy('stream_position')
    .execute();
  return rows.map((r) => ({
    roomId: r.room_id,
    type: r.type,
    content: JSON.parse(r.content) as JsonObject,
    position: Number(r.stream_position),
  }));
}
