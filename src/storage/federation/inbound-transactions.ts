// Inbound transactions already answered (migration 012).

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

/** The answer given to `origin`'s transaction `txnId`, if it was processed. */
export async function findInboundTransaction(db: Kysely<Schema>, origin: string, txnId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('federation_inbound_transactions')
    .select('answer')
    .where('origin', '=', origin)
    .where('txn_id', '=', txnId)
    .executeTakeFirst();
  return row?.answer;
}

export async function recordInboundTransaction(db: Kysely<Schema>, origin: string, txnId: string, answer: string, receivedTs: number): Promise<void> {
  await db
    .insertInto('federation_inbound_transactions')
    .values({ origin, txn_id: txnId, answer, received_ts: receivedTs })
    .onConflict((oc) => oc.columns(['origin', 'txn_id']).doNothing())
    .execute();
}

/** Forgets transactions received before `beforeTs`; returns how many. */
export async function pruneInboundTransactions(db: Kysely<Schema>, beforeTs: number): Promise<number> {
  const result = await db.deleteFrom('federation_inbound_transactions').where('received_ts', '<', beforeTs).executeTakeFirst();
  return Number(result.numDeletedRows);
}
