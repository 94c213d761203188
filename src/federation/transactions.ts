// Inbound transactions (PUT /send/{txnId}): another server's PDUs and EDUs. A transaction is
// processed once: its answer is kept per origin and transaction id, and a resend of the same id
// (the origin retrying after a lost answer) gets that answer without anything being done again,
// also while the first is still being processed. PDUs go to the room server's pipeline, which
// checks each one on receipt and keeps one room's PDUs in order; EDUs are checked for what their
// origin may claim (its own users, in rooms they are in or sharing a room with ours; edus.ts).

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { ReceiveOutcome } from '../rooms/input/receive.js';
import { findInboundTransaction, pruneInboundTransactions, recordInboundTransaction } from '../storage/federation/inbound-transactions.js';
import type { Schema } from '../storage/schema.js';

/** The spec's limits on one transaction. */
export const MAX_PDUS = 50;
export const MAX_EDUS = 100;
/** How long an answer is kept for resends: origins retry for far less. */
const ANSWER_KEPT_MS = 24 * 3600_000;
const PRUNE_EVERY_MS = 3600_000;

export interface TransactionAnswer {
  readonly pdus: Record<string, { error?: string }>;
}

/** What EDUs do; each handler checks the EDU's claims and drops what it cannot accept. */
export interface EduHandlers {
  typing?(origin: string, content: JsonObject): Promise<void>;
  receipt?(origin: string, content: JsonObject): Promise<void>;
  directToDevice?(origin: string, content: JsonObject): Promise<void>;
  deviceListUpdate?(origin: string, content: JsonObject): Promise<void>;
  signingKeyUpdate?(origin: string, content: JsonObject): Promise<void>;
  presence?(origin: string, content: JsonObject): Promise<void>;
}

/** The handler of each EDU type; other types are dropped. */
const EDU_HANDLERS: Readonly<Record<string, keyof EduHandlers>> = {
  'm.typing': 'typing',
  'm.receipt': 'receipt',
  'm.direct_to_device': 'directToDevice',
  'm.device_list_update': 'deviceListUpdate',
  'm.signing_key_update': 'signingKeyUpdate',
  'm.presence': 'presence',
};

export interface TransactionReceiverDeps {
  readonly db: Kysely<Schema>;
  readonly rooms: {
    receive(origin: string, pdus: readonly unknown[]): Promise<ReceiveOutcome[]>;
    serverAclAllows(origin: string, roomId: string): Promise<boolean>;
    receivedEventId(pdu: unknown): Promise<string | undefined>;
  };
  readonly edus: EduHandlers;
  readonly now?: () => number;
  /** Logs an EDU that failed (it is dropped; the transaction still succeeds). */
  readonly warn?: (message: string, fields: Record<string, unknown>) => void;
}

export class TransactionReceiver {
  /** Transactions being processed, by origin and id: a resend waits for the first. */
  private readonly inProgress = new Map<string, Promise<TransactionAnswer>>();
  private readonly now: () => number;
  private lastPrune = 0;

  constructor(private readonly deps: TransactionReceiverDeps) {
    this.now = deps.now ?? Date.now;
  }

  async receive(origin: string, txnId: string, body: unknown): Promise<TransactionAnswer> {
    const { pdus, edus } = parseTransaction(body);
    const key = `${origin}\u0000${txnId}`;
    const running = this.inProgress.get(key);
    if (running !== undefined) return running;
    const done = this.process(origin, txnId, pdus, edus);
    this.inProgress.set(key, done);
    try {
      return await done;
    } finally {
      this.inProgress.delete(key);
    }
  }

  private async process(origin: string, txnId: string, pdus: readonly unknown[], edus: readonly JsonObject[]): Promise<TransactionAnswer> {
    const seen = await findInboundTransaction(this.deps.db, origin, txnId);
    if (seen !== undefined) return JSON.parse(seen) as TransactionAnswer;
    // PDUs for rooms whose server ACL denies the origin are refused before anything else.
    const denied = await this.deniedRooms(origin, pdus.map((p) => (isJsonObject(p) ? p['room_id'] : undefined)));
    const allowed = pdus.filter((p) => !denied.has((p as JsonObject)['room_id'] as string));
    const outcomes = allowed.length === 0 ? [] : await this.deps.rooms.receive(origin, allowed);
    const answer: TransactionAnswer = { pdus: {} };
    for (const o of outcomes) {
      if (o.eventId === undefined) continue;
      answer.pdus[o.eventId] = o.status === 'dropped' || o.status === 'rejected' ? { error: o.reason ?? o.status } : {};
    }
    for (const p of pdus) {
      if (!denied.has((p as JsonObject)['room_id'] as string)) continue;
      const id = await this.deps.rooms.receivedEventId(p);
      if (id !== undefined) answer.pdus[id] = { error: 'This server is denied by the room\'s server ACL' };
    }
    for (const edu of edus) await this.edu(origin, edu, denied);
    const now = this.now();
    await recordInboundTransaction(this.deps.db, origin, txnId, JSON.stringify(answer), now);
    if (now - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now;
      await pruneInboundTransactions(this.deps.db, now - ANSWER_KEPT_MS);
    }
    return answer;
  }

  /** The rooms among `roomIds` whose server ACL denies `origin`. */
  private async deniedRooms(origin: string, roomIds: readonly unknown[]): Promise<Set<string>> {
    const denied = new Set<string>();
    for (const roomId of new Set(roomIds)) {
      if (typeof roomId === 'string' && !(await this.deps.rooms.serverAclAllows(origin, roomId))) denied.add(roomId);
    }
    return denied;
  }

  private async edu(origin: string, edu: JsonObject, denied: Set<string>): Promise<void> {
    const type = edu['edu_type'];
    let content = edu['content'];
    if (typeof type !== 'string' || !isJsonObject(content)) return;
    // Typing and receipts name their rooms: those whose ACL denies the origin are left out.
    const rooms = type === 'm.typing' ? [content['room_id']] : type === 'm.receipt' ? Object.keys(content) : [];
    for (const r of await this.deniedRooms(origin, rooms.filter((id) => !denied.has(id as string)))) denied.add(r);
    if (type === 'm.typing' && denied.has(content['room_id'] as string)) return;
    if (type === 'm.receipt') content = Object.fromEntries(Object.entries(content).filter(([roomId]) => !denied.has(roomId)));
    const name = Object.hasOwn(EDU_HANDLERS, type) ? EDU_HANDLERS[type] : undefined;
    const handler = name === undefined ? undefined : this.deps.edus[name];
    if (handler === undefined) return;
    try {
      await handler.call(this.deps.edus, origin, content);
    } catch (err) {
      // One bad EDU never fails the transaction: the origin would resend it forever.
      this.deps.warn?.('an EDU was dropped', { origin, type, err: err instanceof HearthError ? err.message : String(err) });
    }
  }
}

function parseTransaction(body: unknown): { pdus: readonly unknown[]; edus: readonly JsonObject[] } {
  if (!isJsonObject(body)) throw HearthError.badJson('The transaction must be a JSON object');
  const pdus = body['pdus'];
  const edus = body['edus'] ?? [];
  if (!Array.isArray(pdus)) throw HearthError.badJson('pdus must be a list');
  if (!Array.isArray(edus)) throw HearthError.badJson('edus must be a list');
  if (pdus.length > MAX_PDUS) throw HearthError.badJson(`A transaction holds at most ${MAX_PDUS} PDUs`);
  if (edus.length > MAX_EDUS) throw HearthError.badJson(`A transaction holds at most ${MAX_EDUS} EDUs`);
  return { pdus, edus: edus.filter(isJsonObject) };
}
