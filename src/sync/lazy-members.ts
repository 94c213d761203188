// Lazy-loaded members already sent: with `lazy_load_members` (and not `include_redundant_members`)
// an incremental sync leaves out of `state` the member events this device was already sent, as the
// reference server does. What was sent is remembered per user and device, in memory only: at most
// PER_DEVICE member events per device (the least recently used go first), at most TOTAL over all
// devices (the device used least recently goes first), and a device unused for MAX_AGE_MS is
// forgotten. Forgetting only makes a later sync send a member event again. An initial sync starts
// a new sequence: the client may have forgotten everything, so the record starts over.

const PER_DEVICE = 100;
const TOTAL = 100_000;
const MAX_AGE_MS = 30 * 60_000;

export interface SentMembersLimits {
  readonly perDevice: number;
  readonly total: number;
  readonly maxAgeMs: number;
}

/** The member events one device was sent, by room and user. */
export interface DeviceMembers {
  /** Whether exactly this member event (by nid) was sent for (room, user). */
  has(roomNid: number, userId: string, eventNid: number): boolean;
  add(roomNid: number, userId: string, eventNid: number): void;
}

interface Entry {
  usedAt: number;
  /** `${roomNid} ${userId}` → event nid, least recently used first. */
  readonly members: Map<string, number>;
}

export class SentMembers {
  private readonly devices = new Map<string, Entry>();
  private size = 0;
  private readonly limits: SentMembersLimits;

  constructor(
    limits: Partial<SentMembersLimits> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { perDevice: PER_DEVICE, total: TOTAL, maxAgeMs: MAX_AGE_MS, ...limits };
  }

  /** How many member events are remembered over all devices. */
  get entries(): number {
    return this.size;
  }

  /** The record of a device; `initial` (an initial sync) clears it first. */
  of(userId: string, deviceId: string | null, initial: boolean): DeviceMembers {
    const now = this.now();
    this.expire(now);
    const key = `${userId}\u0000${deviceId ?? ''}`;
    const kept = this.devices.get(key);
    const entry: Entry = kept ?? { usedAt: now, members: new Map() };
    if (kept !== undefined) {
      this.devices.delete(key);
      if (initial) {
        this.size -= kept.members.size;
        kept.members.clear();
      }
    }
    entry.usedAt = now;
    this.devices.set(key, entry);
    const members = entry.members;
    return {
      has: (roomNid, user, eventNid) => members.get(`${roomNid} ${user}`) === eventNid,
      add: (roomNid, user, eventNid) => {
        // Dropped meanwhile (too old, or to make room): the device starts over at its next sync.
        if (this.devices.get(key) !== entry) return;
        const k = `${roomNid} ${user}`;
        if (members.delete(k)) this.size--;
        members.set(k, eventNid);
        this.size++;
        if (members.size > this.limits.perDevice) {
          members.delete(members.keys().next().value as string);
          this.size--;
        }
        this.shrink(entry);
      },
    };
  }

  /** Drops the devices unused for too long (the least recently used are first in the map). */
  private expire(now: number): void {
    for (const [key, entry] of this.devices) {
      if (now - entry.usedAt <= this.limits.maxAgeMs) break;
      this.drop(key, entry);
    }
  }

  /** Keeps the total under its bound, dropping the least recently used devices but `keep`. */
  private shrink(keep: Entry): void {
    for (const [key, entry] of this.devices) {
      if (this.size <= this.limits.total) return;
      if (entry !== keep) this.drop(key, entry);
    }
  }

  private drop(key: string, entry: Entry): void {
    this.devices.delete(key);
    this.size -= entry.members.size;
  }
}
