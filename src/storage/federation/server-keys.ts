// Other servers' verify keys (migration 011): written from verified key responses, read by the
// key ring and the notary API.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export interface StoredServerKey {
  readonly serverName: string;
  readonly keyId: string;
  /** Unpadded base64. */
  readonly publicKey: string;
  /** The response's valid_until_ts (already capped by the caller). */
  readonly validUntilTs: number;
  /** For a key from `old_verify_keys`; null otherwise. */
  readonly expiredTs: number | null;
  readonly fetchedAt: number;
  /** The signed key response the key came from. */
  readonly keyJson: string;
}

// Rows (or names) per statement: well under SQLite's 32,766 bound parameters (7 per row) and
// PostgreSQL's 65,535.
const ROWS_PER_STATEMENT = 500;

/**
 * Stores keys; a key already stored is replaced only by one whose response is valid until at
 * least as late, so that an older answer (a notary's stale cache) never undoes a newer one.
 */
export async function upsertServerKeys(db: Kysely<Schema>, keys: readonly StoredServerKey[]): Promise<void> {
  for (let i = 0; i < keys.length; i += ROWS_PER_STATEMENT) {
    const rows = keys.slice(i, i + ROWS_PER_STATEMENT).map((k) => ({
      server_name: k.serverName,
      key_id: k.keyId,
      public_key: k.publicKey,
      valid_until_ts: k.validUntilTs,
      expired_ts: k.expiredTs,
      fetched_at: k.fetchedAt,
      key_json: k.keyJson,
    }));
    await db
      .insertInto('server_keys')
      .values(rows)
      .onConflict((oc) =>
        oc
          .columns(['server_name', 'key_id'])
          .doUpdateSet((eb) => ({
            public_key: eb.ref('excluded.public_key'),
            valid_until_ts: eb.ref('excluded.valid_until_ts'),
            expired_ts: eb.ref('excluded.expired_ts'),
            fetched_at: eb.ref('excluded.fetched_at'),
            key_json: eb.ref('excluded.key_json'),
          }))
          .where((eb) => eb('server_keys.valid_until_ts', '<=', eb.ref('excluded.valid_until_ts'))),
      )
      .execute();
  }
}

/** Every stored key of the given servers. */
export async function selectServerKeys(db: Kysely<Schema>, serverNames: readonly string[]): Promise<StoredServerKey[]> {
  const names = [...new Set(serverNames)];
  const out: StoredServerKey[] = [];
  for (let i = 0; i < names.length; i += ROWS_PER_STATEMENT) {
    const rows = await db
      .selectFrom('server_keys')
      .select(['server_name', 'key_id', 'public_key', 'valid_until_ts', 'expired_ts', 'fetched_at', 'key_json'])
      .where('server_name', 'in', names.slice(i, i + ROWS_PER_STATEMENT))
      .execute();
    for (const r of rows) {
      out.push({
        serverName: r.server_name,
        keyId: r.key_id,
        publicKey: r.public_key,
        validUntilTs: Number(r.valid_until_ts),
        expiredTs: r.expired_ts === null ? null : Number(r.expired_ts),
        fetchedAt: Number(r.fetched_at),
        keyJson: r.key_json,
      });
    }
  }
  return out;
}
