// Cross-signing keys (master, self-signing, user-signing) of local users, and the signatures
// uploaded for device keys and master keys.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../../protocol/json.js';
import type { Schema } from '../schema.js';

const IDS_PER_STATEMENT = 500;

export type CrossSigningKeyType = 'master' | 'self_signing' | 'user_signing';

export interface StoredCrossSigningKey {
  readonly publicKey: string;
  /** The key object as uploaded. */
  readonly key: JsonObject;
}

export interface StoredSignature {
  readonly signerUserId: string;
  readonly signingKeyId: string;
  readonly targetUserId: string;
  readonly targetKeyId: string;
  readonly signature: string;
}

/** The cross-signing keys of these users, by user and key type. */
export async function selectCrossSigningKeys(
  db: Kysely<Schema>,
  userIds: readonly string[],
): Promise<Map<string, Map<CrossSigningKeyType, StoredCrossSigningKey>>> {
  const out = new Map<string, Map<CrossSigningKeyType, StoredCrossSigningKey>>();
  for (let i = 0; i < userIds.length; i += IDS_PER_STATEMENT) {
    const rows = await db
      .selectFrom('cross_signing_keys')
      .select(['user_id', 'key_type', 'public_key', 'key_json'])
      .where('user_id', 'in', userIds.slice(i, i + IDS_PER_STATEMENT))
      .execute();
    for (const r of rows) {
      let forUser = out.get(r.user_id);
      if (forUser === undefined) out.set(r.user_id, (forUser = new Map()));
      forUser.set(r.key_type as CrossSigningKeyType, { publicKey: r.public_key, key: JSON.parse(r.key_json) as JsonObject });
    }
  }
  return out;
}

export async function upsertCrossSigningKey(
  db: Kysely<Schema>,
  userId: string,
  type: CrossSigningKeyType,
  key: StoredCrossSigningKey,
): Promise<void> {
  const values = { public_key: key.publicKey, key_json: JSON.stringify(key.key) };
  await db
    .insertInto('cross_signing_keys')
    .values({ user_id: userId, key_type: type, ...values })
    .onConflict((oc) => oc.columns(['user_id', 'key_type']).doUpdateSet(values))
    .execute();
}

/** Stores signatures; one already stored under the same signer, key and target is replaced. */
export async function upsertSignatures(db: Kysely<Schema>, signatures: readonly StoredSignature[]): Promise<void> {
  for (let i = 0; i < signatures.length; i += 200) {
    await db
      .insertInto('cross_signing_signatures')
      .values(
        signatures.slice(i, i + 200).map((s) => ({
          signer_user_id: s.signerUserId,
          signing_key_id: s.signingKeyId,
          target_user_id: s.targetUserId,
          target_key_id: s.targetKeyId,
          signature: s.signature,
        })),
      )
      .onConflict((oc) =>
        oc
          .columns(['target_user_id', 'target_key_id', 'signer_user_id', 'signing_key_id'])
          .doUpdateSet((eb) => ({ signature: eb.ref('excluded.signature') })),
      )
      .execute();
  }
}

/**
 * The signatures on these users' keys that `viewer` may see: those the key's owner made (with
 * their self-signing key or their devices) and those `viewer` made. Other users' user-signing
 * signatures stay private to their signers.
 */
export async function selectVisibleSignatures(db: Kysely<Schema>, targetUserIds: readonly string[], viewer: string): Promise<StoredSignature[]> {
  const out: StoredSignature[] = [];
  for (let i = 0; i < targetUserIds.length; i += IDS_PER_STATEMENT) {
    const rows = await db
      .selectFrom('cross_signing_signatures')
      .select(['signer_user_id', 'signing_key_id', 'target_user_id', 'target_key_id', 'signature'])
      .where('target_user_id', 'in', targetUserIds.slice(i, i + IDS_PER_STATEMENT))
      .where((eb) => eb.or([eb('signer_user_id', '=', eb.ref('target_user_id')), eb('signer_user_id', '=', viewer)]))
      .execute();
    for (const r of rows) {
      out.push({
        signerUserId: r.signer_user_id,
        signingKeyId: r.signing_key_id,
        targetUserId: r.target_user_id,
        targetKeyId: r.target_key_id,
        signature: r.signature,
      });
    }
  }
  return out;
}

/** Removes every signature on these keys of the user (devices deleted, a master key replaced). */
export async function deleteSignaturesOn(db: Kysely<Schema>, targetUserId: string, targetKeyIds: readonly string[]): Promise<void> {
  for (let i = 0; i < targetKeyIds.length; i += IDS_PER_STATEMENT) {
    await db
      .deleteFrom('cross_signing_signatures')
      .where('target_user_id', '=', targetUserId)
      .where('target_key_id', 'in', targetKeyIds.slice(i, i + IDS_PER_STATEMENT))
      .execute();
  }
}

/** Removes every signature the user made with these keys (a device deleted, a signing key replaced). */
export async function deleteSignaturesMadeWith(db: Kysely<Schema>, signerUserId: string, signingKeyIds: readonly string[]): Promise<void> {
  for (let i = 0; i < signingKeyIds.length; i += IDS_PER_STATEMENT) {
    await db
      .deleteFrom('cross_signing_signatures')
      .where('signer_user_id', '=', signerUserId)
      .where('signing_key_id', 'in', signingKeyIds.slice(i, i + IDS_PER_STATEMENT))
      .execute();
  }
}

/** Which of these IDs name devices of the user. */
export async function selectExistingDeviceIds(db: Kysely<Schema>, userId: string, deviceIds: readonly string[]): Promise<string[]> {
  if (deviceIds.length === 0) return [];
  const rows = await db.selectFrom('devices').select('device_id').where('user_id', '=', userId).where('device_id', 'in', [...deviceIds]).execute();
  return rows.map((r) => r.device_id);
}
