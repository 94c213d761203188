// EDUs other servers send: what each may claim is checked here. An origin speaks only for its own
// users, and only in rooms they are joined to (the typing and receipt services check membership).

import { isUserOf } from '../protocol/ids/user-id.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { DEFAULT_TYPING_TIMEOUT_MS, type TypingService } from '../users/typing.js';
import type { EduHandlers } from './transactions.js';

export interface EduDeps {
  readonly typing: Pick<TypingService, 'start' | 'stop'>;
  readonly isJoined: (userId: string, roomId: string) => Promise<boolean>;
  readonly receipts: { sendReceipt(userId: string, roomId: string, receiptType: string, eventId: string, threadId?: unknown): Promise<void> };
}

/** Receipt types that travel between servers (`m.read.private` never does). */
const FEDERATED_RECEIPTS = new Set(['m.read']);

export function eduHandlers(deps: EduDeps): EduHandlers {
  return {
    // m.typing: {room_id, user_id, typing}; a remote typist times out like a local one.
    async typing(origin: string, content: JsonObject) {
      const { room_id: roomId, user_id: userId, typing } = content;
      if (typeof roomId !== 'string' || typeof typing !== 'boolean' || !isUserOf(userId, origin)) return;
      if (!(await deps.isJoined(userId, roomId))) return;
      if (typing) deps.typing.start(userId, roomId, DEFAULT_TYPING_TIMEOUT_MS);
      else deps.typing.stop(userId, roomId);
    },
    // m.receipt: {roomId: {receiptType: {userId: {event_ids, data: {ts, thread_id?}}}}}.
    async receipt(origin: string, content: JsonObject) {
      for (const [roomId, byType] of Object.entries(content)) {
        if (!isJsonObject(byType)) continue;
        for (const [receiptType, byUser] of Object.entries(byType)) {
          if (!FEDERATED_RECEIPTS.has(receiptType) || !isJsonObject(byUser)) continue;
          for (const [userId, receipt] of Object.entries(byUser)) {
            if (!isUserOf(userId, origin) || !isJsonObject(receipt)) continue;
            const eventIds = receipt['event_ids'];
            const eventId = Array.isArray(eventIds) ? eventIds[0] : undefined;
            if (typeof eventId !== 'string') continue;
            const data = isJsonObject(receipt['data']) ? receipt['data'] : {};
            // The receipt service checks the membership and the event, and refuses what fails.
            await deps.receipts.sendReceipt(userId, roomId, receiptType, eventId, data['thread_id']).catch(() => undefined);
          }
        }
      }
    },
  };
}
