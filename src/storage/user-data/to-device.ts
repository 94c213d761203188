// Send-to-device messages, queued per recipient device until a later sync acknowledges them, the
// transaction ids already used by each sending device, and the message ids of other servers' users
// already delivered (migration 014).

import type { Kysely } from 'kysely';
import type { JsonObject } from '../../protocol/json.js';
import type { Schema } from '../schema.js';

export interface QueuedToDevice {
  readonly userId: string;
  readonly deviceId: string;
  readonly sender: string;
  readonly type: string;
  readonly content: JsonObject;
}

export interface DeliveredToDevice {
  readonly position: number;
  readonly sender: string;
  readonly type: string;
  readonly content: JsonObject;
}

/**
 * Records the sender's transaction id; false when that device already used it (the messages were
 * queued then and must not be queued again).
 */
export async function claimToDeviceTxn(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
  txnId: string,
  now: number,
): Promise<boolean> {
  const inserted = await db
    .insertInto('to_device_txns')
    .values({ user_id: userId, device_id: deviceId, txn_id: txnId, created_ts: now })
    .onConflict((oc) => oc.columns(['user_id', 'device_id', 'txn_id']).doNothing())
    .returning('txn_id')
    .executeTakeFirst();
  return inserted !== undefined;
}

const INSERT_BATCH = 200;

export async function insertToDeviceMessages(
  db: Kysely<Schema>,
  messages: readonly QueuedToDevice[],
  position: number,
): Promise<void> {
  for (let i = 0; i < messages.length; i += INSERT_BATCH) {
    await db
      .insertInto('to_device_messages')
      .values(
        messages.slice(i, i + INSERT_BATCH).map((m) => ({
          user_id: m.userId,
          device_id: m.deviceId,
          stream_position: position,
          sender: m.sender,
          type: m.type,
          content: JSON.stringify(m.content),
        })),
      )
      .execute();
  }
}

/** Messages for the device with positions in (after, upTo], oldest first, at most `limit`. */
export async function selectToDevice(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
  after: number,
  upTo: number,
  limit: number,
): Promise<DeliveredToDevice[]> {
  const rows = await db
    .selectFrom('to_device_messages')
    .select(['stream_position', 'sender', 'type', 'content'])
    .where('user_id', '=', userId)
    .where('device_id', '=', deviceId)
    .where('stream_position', '>', after)
    .where('stream_position', '<=', upTo)
    .orderBy('stream_position')
    .orderBy('message_id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    position: Number(r.stream_position),
    sender: r.sender,
    type: r.type,
    content: JSON.parse(r.content) as JsonObject,
  }));
}

export interface AddressedToDevice extends DeliveredToDevice {
  readonly userId: string;
  readonly deviceId: string;
}

/**
 * Messages to any device with positions in (after, upTo], oldest first: the first `limit` and
 * the rest of the last position they reach (one send's messages share a position).
 */
export async function selectToDeviceAfter(db: Kysely<Schema>, after: number, upTo: number, limit: number): Promise<AddressedToDevice[]> {
  const query = db
    .selectFrom('to_device_messages')
    .select(['stream_position', 'user_id', 'device_id', 'sender', 'type', 'content', 'message_id'])
    .where('stream_position', '>', after)
    .orderBy('stream_position')
    .orderBy('message_id');
  const rows = await query.where('stream_position', '<=', upTo).limit(limit).execute();
  if (rows.length === limit) {
    const last = rows[rows.length - 1]!;
    const rest = await query.where('stream_position', '=', last.stream_position).where('message_id', '>', last.message_id).execute();
    rows.push(...rest);
  }
  return rows.map((r) => ({
    position: Number(r.stream_position),
    userId: r.user_id,
    deviceId: r.device_id,
    sender: r.sender,
    type: r.type,
    content: JSON.parse(r.content) as JsonObject,
  }));
}

/** Removes the device's messages up to and including `position`; returns how many. */
export async function deleteToDeviceUpTo(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
  position: number,
): Promise<number> {
  const res = await db
    .deleteFrom('to_device_messages')
    .where('user_id', '=', userId)
    .where('device_id', '=', deviceId)
    .where('stream_position', '<=', position)
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Device ids of a local user, from the accounts tables. */
export async function selectDeviceIds(db: Kysely<Schema>, userId: string): Promise<string[]> {
  const rows = await db.selectFrom('devices').select('device_id').where('user_id', '=', userId).execute();
  return rows.map((r) => r.device_id);
}

/**
 * Records a to-device message id of another server's user; false when it was recorded before
 * (the message was delivered then).
 */
export async function claimInboundToDevice(db: Kysely<Schema>, origin: string, sender: string, messageId: string, now: number): Promise<boolean> {
  const inserted = await db
    .insertInto('federation_inbound_to_device')
    .values({ origin, sender, message_id: messageId, received_ts: now })
    .onConflict((oc) => oc.columns(['origin', 'sender', 'message_id']).doNothing())
    .returning('message_id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function pruneInboundToDevice(db: Kysely<Schema>, beforeTs: number): Promise<void> {
  await db.deleteFrom('federation_inbound_to_device').where('received_ts', '<', beforeTs).execute();
}
