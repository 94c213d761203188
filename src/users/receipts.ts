// Read receipts (m.read, m.read.private, threaded or not) on the receipts stream, and read markers
// (m.fully_read as room account data, plus receipts). Private receipts reach only their owner.
// Receipts and the fully-read marker never move back to an earlier event.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { parseRoomId } from '../protocol/ids.js';
import type { JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import { allocateStreamPosition } from '../streams/positions.js';
import { PRIVATE_READ, selectReceipt, selectReceiptsAfter, selectReceiptsSince, upsertReceipt, type ReceiptRow } from '../storage/user-data/receipts.js';
import type { StreamBus } from '../streams/bus.js';
import { FULLY_READ_TYPE, type AccountDataService } from './account-data.js';

export const READ = 'm.read';
export const READ_PRIVATE = PRIVATE_READ;
export const FULLY_READ = FULLY_READ_TYPE;
const RECEIPT_TYPES: readonly string[] = [READ, READ_PRIVATE];

export interface ReceiptServiceDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
  readonly accountData: AccountDataService;
  readonly isJoined: (userId: string, roomId: string) => Promise<boolean>;
  /**
   * The event's place in the room's order (any number that grows along the room's timeline), or
   * undefined when the room holds no such event.
   */
  readonly eventOrder: (roomId: string, eventId: string) => Promise<number | undefined>;
  /** After a public receipt moved (federation tells the room's other servers of local users' ones). */
  readonly onReceipt?: (receipt: { userId: string; roomId: string; receiptType: string; eventId: string; threadId: string; ts: number }) => void;
  readonly now?: () => number;
}

/** The m.receipt EDU content of one room: event → receipt type → user → {ts, thread_id?}. */
export type ReceiptContent = Record<string, Record<string, Record<string, { ts: number; thread_id?: string }>>>;

/**
 * Receipt rows as m.receipt contents per room, one per thread (unthreaded first) as the spec
 * batches them, so that a user's receipts in two threads on one event do not overwrite each other.
 */
export function receiptContents(rows: readonly ReceiptRow[]): Map<string, ReceiptContent[]> {
  const byRoom = new Map<string, Map<string, ReceiptContent>>();
  for (const r of rows) {
    let threads = byRoom.get(r.roomId);
    if (!threads) byRoom.set(r.roomId, (threads = new Map()));
    let content = threads.get(r.threadId);
    if (!content) threads.set(r.threadId, (content = {}));
    const byType = (content[r.eventId] ??= {});
    const byUser = (byType[r.receiptType] ??= {});
    byUser[r.userId] = r.threadId === '' ? { ts: r.ts } : { ts: r.ts, thread_id: r.threadId };
  }
  const out = new Map<string, ReceiptContent[]>();
  for (const [roomId, threads] of byRoom) {
    const unthreaded = threads.get('');
    threads.delete('');
    out.set(roomId, unthreaded ? [unthreaded, ...threads.values()] : [...threads.values()]);
  }
  return out;
}

export interface ReadMarkers {
  readonly fullyRead?: string;
  readonly read?: string;
  readonly readPrivate?: string;
}

export class ReceiptService {
  private readonly now: () => number;

  constructor(private readonly deps: ReceiptServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * POST /rooms/{roomId}/receipt/{receiptType}/{eventId}. `m.fully_read` sets the read marker.
   * 400 M_INVALID_PARAM for another type or a bad thread_id; 403 when not joined; 404 when the
   * room has no such event.
   */
  async sendReceipt(userId: string, roomId: string, receiptType: string, eventId: string, threadId?: unknown): Promise<void> {
    parseRoomId(roomId);
    if (receiptType !== FULLY_READ && !RECEIPT_TYPES.includes(receiptType)) {
      throw HearthError.invalidParam(`Receipt type must be one of ${[...RECEIPT_TYPES, FULLY_READ].join(', ')}`);
    }
    if (threadId !== undefined && (typeof threadId !== 'string' || threadId === '')) {
      throw HearthError.invalidParam('thread_id field must be a non-empty string');
    }
    // A thread is named by its root's event id, the main timeline by 'main'.
    if (typeof threadId === 'string' && threadId !== 'main' && !threadId.startsWith('$')) {
      throw HearthError.invalidParam("thread_id must be 'main' or the event ID of a thread root");
    }
    if (receiptType === FULLY_READ && threadId !== undefined) {
      throw HearthError.invalidParam(`thread_id is not compatible with ${FULLY_READ} receipts`);
    }
    await this.requireJoined(userId, roomId);
    const order = await this.requireEvent(roomId, eventId);
    if (receiptType === FULLY_READ) await this.moveFullyRead(userId, roomId, eventId, order);
    else await this.store(userId, roomId, receiptType, eventId, order, threadId ?? '');
  }

  /** POST /rooms/{roomId}/read_markers: any of the fully-read marker and the two receipts. */
  async setReadMarkers(userId: string, roomId: string, markers: ReadMarkers): Promise<void> {
    parseRoomId(roomId);
    await this.requireJoined(userId, roomId);
    const wanted = [markers.fullyRead, markers.read, markers.readPrivate];
    const orders = await Promise.all(wanted.map((id) => (id === undefined ? undefined : this.requireEvent(roomId, id))));
    if (markers.fullyRead !== undefined) await this.moveFullyRead(userId, roomId, markers.fullyRead, orders[0]!);
    if (markers.read !== undefined) await this.store(userId, roomId, READ, markers.read, orders[1]!, '');
    if (markers.readPrivate !== undefined) await this.store(userId, roomId, READ_PRIVATE, markers.readPrivate, orders[2]!, '');
  }

  /**
   * For sync: per room, the receipts written after `afterPosition` (all for 0) as m.receipt
   * contents, one per thread (unthreaded first) as the spec batches them, so that a user's
   * receipts in two threads on one event do not overwrite each other. Others' private receipts
   * are left out.
   */
  async receiptsSince(viewerId: string, roomIds: Iterable<string>, afterPosition: number): Promise<Map<string, ReceiptContent[]>> {
    return receiptContents(await selectReceiptsSince(this.deps.db, [...roomIds], afterPosition, viewerId));
  }

  /** Receipts of every room (private ones too) with positions in (after, upTo], at most `limit`, in position order. */
  receiptsAfter(after: number, upTo: number, limit: number): Promise<ReceiptRow[]> {
    return selectReceiptsAfter(this.deps.db, after, upTo, limit);
  }

  private async requireJoined(userId: string, roomId: string): Promise<void> {
    if (!(await this.deps.isJoined(userId, roomId))) throw HearthError.forbidden(`User ${userId} not in room ${roomId}`);
  }

  private async requireEvent(roomId: string, eventId: string): Promise<number> {
    const order = await this.deps.eventOrder(roomId, eventId);
    if (order === undefined) throw HearthError.notFound('Event not found in this room');
    return order;
  }

  private async store(
    userId: string,
    roomId: string,
    receiptType: string,
    eventId: string,
    eventOrder: number,
    threadId: string,
  ): Promise<void> {
    const key = { roomId, receiptType, userId, threadId };
    // Allocating first holds the stream's row lock, so the check below and the write are not
    // interleaved with another writer's; a receipt that turns out stale leaves a harmless gap.
    const ts = this.now();
    const position = await this.deps.db.transaction().execute(async (trx) => {
      const p = await allocateStreamPosition(trx, 'receipts');
      const existing = await selectReceipt(trx, key);
      if (existing && (existing.eventId === eventId || (existing.eventOrder !== null && existing.eventOrder > eventOrder))) {
        return undefined;
      }
      await upsertReceipt(trx, { ...key, eventId, eventOrder, ts, position: p });
      return p;
    });
    if (position === undefined) return;
    if (receiptType !== READ_PRIVATE) this.deps.onReceipt?.({ userId, roomId, receiptType, eventId, threadId, ts });
    // A private receipt concerns its owner only; a public one everyone in the room.
    this.deps.notifier.notify(
      receiptType === READ_PRIVATE
        ? { stream: 'receipts', position, userIds: [userId] }
        : { stream: 'receipts', position, roomIds: [roomId] },
    );
  }

  private async moveFullyRead(userId: string, roomId: string, eventId: string, order: number): Promise<void> {
    const current = await this.deps.accountData.get(userId, roomId, FULLY_READ);
    const currentId = current?.['event_id'];
    if (typeof currentId === 'string') {
      if (currentId === eventId) return;
      const currentOrder = await this.deps.eventOrder(roomId, currentId);
      if (currentOrder !== undefined && currentOrder > order) return;
    }
    const content: JsonObject = { event_id: eventId };
    await this.deps.accountData.write(userId, roomId, FULLY_READ, content);
  }
}
