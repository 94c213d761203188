// Typing notifications: held in memory per room, each typist until their timeout. Every change
// moves the typing counter, which starts at the clock's milliseconds so that it keeps increasing
// across restarts and sync tokens from before a restart stay behind it.

import { HearthError } from '../protocol/errors.js';
import type { StreamBus } from '../streams/bus.js';

export const DEFAULT_TYPING_TIMEOUT_MS = 30_000;
/** The longest a client may claim to be typing in one request, as the reference server caps it. */
export const MAX_TYPING_TIMEOUT_MS = 120_000;

export interface TypingServiceDeps {
  readonly notifier: StreamBus;
  /** Whether the user is joined to the room (the room server answers). */
  readonly isJoined: (userId: string, roomId: string) => Promise<boolean>;
  /** After a user of this server set their typing state (federation tells the room's other servers). */
  readonly onTyping?: (userId: string, roomId: string, typing: boolean) => void;
  readonly now?: () => number;
}

interface RoomTyping {
  /** Typist → their timer. */
  readonly typists: Map<string, NodeJS.Timeout>;
  /** The counter value of the room's last change. */
  lastChange: number;
}

export class TypingService {
  private readonly rooms = new Map<string, RoomTyping>();
  private position: number;
  private closed = false;

  constructor(private readonly deps: TypingServiceDeps) {
    this.position = (deps.now ?? Date.now)();
  }

  /** The latest typing position (for the notifier's start and sync tokens). */
  currentPosition(): number {
    return this.position;
  }

  /**
   * PUT /rooms/{roomId}/typing/{userId}. Only for oneself (403), only in a joined room (403);
   * the timeout defaults to 30 s and is capped at 120 s.
   */
  async setTyping(requesterId: string, userId: string, roomId: string, typing: boolean, timeoutMs?: number): Promise<void> {
    if (requesterId !== userId) throw HearthError.forbidden("Cannot set another user's typing state");
    if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0)) {
      throw HearthError.invalidParam("'timeout' must be a non-negative integer");
    }
    if (!(await this.deps.isJoined(userId, roomId))) throw HearthError.forbidden(`User ${userId} not in room ${roomId}`);
    if (typing) this.start(userId, roomId, Math.min(timeoutMs ?? DEFAULT_TYPING_TIMEOUT_MS, MAX_TYPING_TIMEOUT_MS));
    else this.stop(userId, roomId);
    this.deps.onTyping?.(userId, roomId, typing);
  }

  /** Marks the user as typing until the timeout (restarting it if already typing). */
  start(userId: string, roomId: string, timeoutMs: number): void {
    if (this.closed) return;
    let room = this.rooms.get(roomId);
    if (!room) this.rooms.set(roomId, (room = { typists: new Map(), lastChange: 0 }));
    const previous = room.typists.get(userId);
    if (previous) clearTimeout(previous);
    const timer = setTimeout(() => this.stop(userId, roomId), timeoutMs);
    timer.unref();
    room.typists.set(userId, timer);
    // Extending an ongoing typing notice changes nothing a client sees.
    if (!previous) this.changed(roomId, room);
  }

  /** Marks the user as no longer typing (on request, on timeout, or when they leave the room). */
  stop(userId: string, roomId: string): void {
    const room = this.rooms.get(roomId);
    const timer = room?.typists.get(userId);
    if (!room || !timer) return;
    clearTimeout(timer);
    room.typists.delete(userId);
    this.changed(roomId, room);
  }

  /** Who is typing in the room now. */
  typingIn(roomId: string): string[] {
    return [...(this.rooms.get(roomId)?.typists.keys() ?? [])];
  }

  /**
   * For sync: the rooms among `roomIds` whose typing changed after `position`, each with who is
   * typing now (the m.typing content's user_ids). With position 0 (an initial sync) only rooms
   * where someone is typing.
   */
  typingSince(roomIds: Iterable<string>, position: number): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const roomId of roomIds) {
      const room = this.rooms.get(roomId);
      if (!room || room.lastChange <= position) continue;
      if (position === 0 && room.typists.size === 0) continue;
      out.set(roomId, [...room.typists.keys()]);
    }
    return out;
  }

  /** Stops every timer; typing notices end with the process. */
  close(): void {
    this.closed = true;
    for (const room of this.rooms.values()) for (const timer of room.typists.values()) clearTimeout(timer);
    this.rooms.clear();
  }

  private changed(roomId: string, room: RoomTyping): void {
    room.lastChange = ++this.position;
    this.deps.notifier.notify({ stream: 'typing', position: room.lastChange, roomIds: [roomId] });
  }
}
