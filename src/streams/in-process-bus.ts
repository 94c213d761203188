// The stream bus of one process (bus.ts). Writers call `notify` after their transaction commits,
// naming the users and rooms a change concerns; a sync that found nothing new calls `wait` with the
// positions it has seen and sleeps until something for its user or rooms moves, or its timeout
// passes; a stream consumer listens to its whole stream.

import type { StreamBus, StreamChange, WaitOptions } from './bus.js';
import { STREAMS, type StreamName, type StreamPositions, zeroPositions } from './positions.js';

interface Waiter {
  readonly userId: string;
  readonly rooms: ReadonlySet<string>;
  wake(): void;
}

/** Recent changes kept so that a change landing between a sync's read and its wait is not missed. */
const RECENT_LIMIT = 4096;

export class InProcessBus implements StreamBus {
  private readonly positions = zeroPositions();
  private readonly byUser = new Map<string, Set<Waiter>>();
  private readonly byRoom = new Map<string, Set<Waiter>>();
  private readonly recent: StreamChange[] = [];
  /** Per stream, the oldest position still in `recent` (changes before it were dropped). */
  private readonly recentFloor = zeroPositions();
  private readonly listeners = new Map<StreamName, Set<(change: StreamChange) => void>>();

  constructor(initial?: Partial<StreamPositions>) {
    for (const s of STREAMS) {
      const p = initial?.[s] ?? 0;
      this.positions[s] = p;
      this.recentFloor[s] = p;
    }
  }

  current(): StreamPositions {
    return { ...this.positions };
  }

  notify(change: StreamChange): void {
    if (change.position > this.positions[change.stream]) this.positions[change.stream] = change.position;
    this.recent.push(change);
    if (this.recent.length > RECENT_LIMIT) {
      const dropped = this.recent.shift()!;
      this.recentFloor[dropped.stream] = Math.max(this.recentFloor[dropped.stream], dropped.position);
    }
    const woken = new Set<Waiter>();
    for (const u of change.userIds ?? []) for (const w of this.byUser.get(u) ?? []) woken.add(w);
    for (const r of change.roomIds ?? []) for (const w of this.byRoom.get(r) ?? []) woken.add(w);
    for (const w of woken) w.wake();
    for (const listener of this.listeners.get(change.stream) ?? []) listener(change);
  }

  listen(stream: StreamName, listener: (change: StreamChange) => void): () => void {
    let set = this.listeners.get(stream);
    if (!set) this.listeners.set(stream, (set = new Set()));
    // A wrapper per call, so that the same function listening twice stops twice.
    const entry = (change: StreamChange) => listener(change);
    set.add(entry);
    return () => {
      set.delete(entry);
    };
  }

  /** Whether a change after `since` concerns this user or these rooms (or may, if forgotten). */
  private missed(userId: string, rooms: ReadonlySet<string>, since: StreamPositions): boolean {
    for (const s of STREAMS) if (since[s] < this.recentFloor[s]) return true;
    for (let i = this.recent.length - 1; i >= 0; i--) {
      const c = this.recent[i]!;
      if (c.position <= since[c.stream]) continue;
      if (c.userIds?.includes(userId)) return true;
      if (c.roomIds?.some((r) => rooms.has(r))) return true;
    }
    return false;
  }

  wait(options: WaitOptions): Promise<boolean> {
    const rooms = new Set(options.roomIds);
    if (this.missed(options.userId, rooms, options.since)) return Promise.resolve(true);
    if (options.timeoutMs <= 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let done = false;
      let unregister: (() => void) | undefined;
      const finish = (woken: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        unregister?.();
        remove(this.byUser, options.userId, waiter);
        for (const r of rooms) remove(this.byRoom, r, waiter);
        resolve(woken);
      };
      const waiter: Waiter = { userId: options.userId, rooms, wake: () => finish(true) };
      add(this.byUser, options.userId, waiter);
      for (const r of rooms) add(this.byRoom, r, waiter);
      const timer = setTimeout(() => finish(false), options.timeoutMs);
      const off = options.onCancel?.(() => finish(false));
      if (done) off?.();
      else unregister = off;
    });
  }

  get waiting(): number {
    let n = 0;
    for (const set of this.byUser.values()) n += set.size;
    return n;
  }
}

function add(index: Map<string, Set<Waiter>>, key: string, w: Waiter): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(w);
}

function remove(index: Map<string, Set<Waiter>>, key: string, w: Waiter): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(w);
  if (set.size === 0) index.delete(key);
}
