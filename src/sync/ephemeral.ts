// The `ephemeral` section of joined rooms: m.typing (who types now, when that changed since the
// token) and m.receipt (receipts written since the token). Each stream is read only when it moved.

import type { JsonObject } from '../protocol/json.js';
import { moved, type SyncPass } from './pass.js';

export interface EphemeralSources {
  readonly typing: { typingSince(roomIds: Iterable<string>, position: number): Map<string, string[]> };
  readonly receipts: { receiptsSince(viewerId: string, roomIds: Iterable<string>, afterPosition: number): Promise<Map<string, object[]>> };
}

export interface Ephemeral {
  /** Per joined room, its ephemeral events (rooms without any are absent). */
  readonly events: Map<string, JsonObject[]>;
  /** The rooms where the user's own read receipts moved (their unread counts start elsewhere now). */
  readonly ownReceipts: Set<string>;
}

function hasOwnReceipt(content: object, userId: string): boolean {
  for (const byType of Object.values(content) as Record<string, Record<string, unknown>>[]) {
    for (const byUser of Object.values(byType)) if (Object.hasOwn(byUser, userId)) return true;
  }
  return false;
}

export async function ephemeralEvents(sources: EphemeralSources, pass: SyncPass, roomIds: readonly string[]): Promise<Ephemeral> {
  const out = new Map<string, JsonObject[]>();
  const ownReceipts = new Set<string>();
  const matcher = pass.filter.ephemeral;
  const add = (roomId: string, event: JsonObject) => {
    if (!matcher.matches({ type: event['type'] as string, room_id: roomId })) return;
    let list = out.get(roomId);
    if (!list) out.set(roomId, (list = []));
    list.push(event);
  };
  if (roomIds.length === 0) return { events: out, ownReceipts };
  if (moved(pass, 'typing')) {
    for (const [roomId, userIds] of sources.typing.typingSince(roomIds, pass.since?.typing ?? 0)) {
      add(roomId, { type: 'm.typing', content: { user_ids: userIds } });
    }
  }
  if (moved(pass, 'receipts')) {
    const receipts = await sources.receipts.receiptsSince(pass.userId, roomIds, pass.since?.receipts ?? 0);
    for (const [roomId, contents] of receipts) {
      for (const content of contents) {
        if (hasOwnReceipt(content, pass.userId)) ownReceipts.add(roomId);
        add(roomId, { type: 'm.receipt', content: content as JsonObject });
      }
    }
  }
  return { events: out, ownReceipts };
}
