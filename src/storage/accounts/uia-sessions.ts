// User-interactive authentication sessions. Kept in the database so that any process can continue
// a session another began.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../../protocol/json.js';
import type { Schema } from '../schema.js';

export interface UiaSessionRecord {
  readonly sessionId: string;
  readonly operation: string;
  readonly userId: string | null;
  readonly completed: string[];
  readonly params: JsonObject;
  readonly createdTs: number;
}

export async function insertUiaSession(db: Kysely<Schema>, s: UiaSessionRecord): Promise<void> {
  await db
    .insertInto('uia_sessions')
    .values({
      session_id: s.sessionId,
      operation: s.operation,
      user_id: s.userId,
      completed: JSON.stringify(s.completed),
      params: JSON.stringify(s.params),
      created_ts: s.createdTs,
    })
    .execute();
}

export async function findUiaSession(db: Kysely<Schema>, sessionId: string): Promise<UiaSessionRecord | undefined> {
  const row = await db.selectFrom('uia_sessions').selectAll().where('session_id', '=', sessionId).executeTakeFirst();
  if (!row) return undefined;
  return {
    sessionId: row.session_id,
    operation: row.operation,
    userId: row.user_id,
    completed: JSON.parse(row.completed) as string[],
    params: JSON.parse(row.params) as JsonObject,
    createdTs: Number(row.created_ts),
  };
}

export async function updateUiaSession(
  db: Kysely<Schema>,
  sessionId: string,
  completed: readonly string[],
  params: JsonObject,
): Promise<void> {
  await db
    .updateTable('uia_sessions')
    .set({ completed: JSON.stringify(completed), params: JSON.stringify(params) })
    .where('session_id', '=', sessionId)
    .execute();
}

export async function deleteUiaSession(db: Kysely<Schema>, sessionId: string): Promise<void> {
  await db.deleteFrom('uia_sessions').where('session_id', '=', sessionId).execute();
}

export async function deleteUserUiaSessions(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.deleteFrom('uia_sessions').where('user_id', '=', userId).execute();
}

export async function deleteUiaSessionsCreatedBefore(db: Kysely<Schema>, ts: number): Promise<number> {
  const res = await db.deleteFrom('uia_sessions').where('created_ts', '<', ts).executeTakeFirst();
  return Number(res.numDeletedRows);
}
