// Presence of local users on the presence stream. A user is online while they sync (or set it),
// unavailable after being idle for a while or when they say so, offline once they stop syncing.
// Changes are shown to the users who share a room with them.
//
// Other servers' users' presence is as their servers say (`setRemotePresence`), and offline once
// a server has said nothing of a user for 30 minutes; local users' changes go to the other servers
// in their rooms through `onChange`, and again every 25 minutes while they are not offline, so
// that those servers do not time them out.
//
// Every sync and every send asks for the user's presence, so rows are kept in memory (written
// through to the database), and so is the recent log of who changed at which position and who
// was told: a sync finds there whether anything changed for it since its token without reading
// the database.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isUserOf } from '../protocol/ids/user-id.js';
import type { Schema } from '../storage/schema.js';
import { allocateStreamPosition } from '../streams/positions.js';
import {
  selectPresence,
  selectPresenceAfter,
  selectPresenceSince,
  selectPresentUsers,
  upsertPresence,
  type PresenceRow,
  type PresenceWithProfile,
  type PresenceState,
} from '../storage/user-data/presence.js';
import type { StreamBus } from '../streams/bus.js';

export type { PresenceState } from '../storage/user-data/presence.js';
export const PRESENCE_STATES: readonly PresenceState[] = ['online', 'offline', 'unavailable'];

/** Timings as the reference server uses them. */
export const SYNC_ONLINE_TIMEOUT_MS = 30_000;
export const IDLE_TIMEOUT_MS = 5 * 60_000;
/** Within this of their last activity a user is `currently_active`; activity inside it is not re-announced. */
export const LAST_ACTIVE_GRANULARITY_MS = 60_000;
export const MAX_STATUS_MSG_LENGTH = 1024;
/** Presence rows kept in memory (least recently used dropped first). */
const ROWS_KEPT = 50_000;
/** Recent changes remembered (with their audiences); a sync token older than them reads the database. */
const CHANGES_KEPT = 2_000;
/** Audience entries remembered over all those changes (about 50 bytes each). */
const AUDIENCE_KEPT = 200_000;
/** Another server's user not heard of for this long is offline; ours are re-announced more often. */
export const FEDERATION_TIMEOUT_MS = 30 * 60_000;
export const FEDERATION_PING_MS = 25 * 60_000;

export interface PresenceServiceDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
  /** Users who share at least one room with the user (the room server answers). */
  readonly usersSharingRooms: (userId: string) => Promise<Iterable<string>>;
  readonly now?: () => number;
  /** With presence off, nothing is stored and everyone reads as offline. Default on. */
  readonly enabled?: boolean;
  readonly syncOnlineTimeoutMs?: number;
  readonly idleTimeoutMs?: number;
  /** This server's name: other servers' users are not timed out by local syncs. Default: every user is local. */
  readonly serverName?: string;
  /** A local user's presence changed (or is repeated for other servers): federation's EDU sender. */
  readonly onChange?: (userId: string, content: PresenceContent) => void;
}

/** Another server's word on its user's presence (m.presence). */
export interface RemotePresence {
  readonly presence: PresenceState;
  readonly statusMsg: string | null;
  readonly lastActiveAgo: number;
}

export interface PresenceContent {
  presence: PresenceState;
  last_active_ago?: number;
  status_msg?: string;
  currently_active?: boolean;
  displayname?: string;
  avatar_url?: string;
}

export interface PresenceEvent {
  readonly type: 'm.presence';
  readonly sender: string;
  readonly content: PresenceContent;
}

type SyncPresence = PresenceState | undefined;

export class PresenceService {
  private readonly now: () => number;
  private readonly enabled: boolean;
  private readonly syncTimeout: number;
  private readonly idleTimeout: number;
  /** Syncs in progress per user, and when each user last finished one. */
  private readonly activeSyncs = new Map<string, number>();
  private readonly lastSyncEnd = new Map<string, number>();
  private readonly startedAt: number;
  private timer: NodeJS.Timeout | undefined;
  /** Rows by user (null: the user has none), as stored. */
  private readonly rows = new Map<string, PresenceRow | null>();
  /** Who changed at which position and who shares a room with them, oldest first; positions after `changesFloor` are all here. */
  private readonly changes: PresenceChange[] = [];
  private changesFloor: number | undefined;
  private audienceKept = 0;
  /** When other servers last spoke of their users, and when local users were last told to them. */
  private readonly remoteHeard = new Map<string, number>();
  private readonly federated = new Map<string, number>();

  constructor(private readonly deps: PresenceServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.enabled = deps.enabled ?? true;
    this.syncTimeout = deps.syncOnlineTimeoutMs ?? SYNC_ONLINE_TIMEOUT_MS;
    this.idleTimeout = deps.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
    this.startedAt = this.now();
  }

  /** PUT /presence/{userId}/status: only for oneself (403). */
  async setPresence(requesterId: string, userId: string, state: unknown, statusMsg?: unknown): Promise<void> {
    if (requesterId !== userId) throw HearthError.forbidden('Can only set your own presence state');
    if (typeof state !== 'string' || !(PRESENCE_STATES as readonly string[]).includes(state)) {
      throw HearthError.invalidParam(`'presence' must be one of ${PRESENCE_STATES.join(', ')}`);
    }
    if (statusMsg !== undefined && statusMsg !== null && typeof statusMsg !== 'string') {
      throw HearthError.invalidParam("'status_msg' must be a string");
    }
    if (typeof statusMsg === 'string' && statusMsg.length > MAX_STATUS_MSG_LENGTH) {
      throw HearthError.invalidParam(`'status_msg' is too long (max ${MAX_STATUS_MSG_LENGTH})`);
    }
    if (!this.enabled) return;
    const now = this.now();
    this.lastSyncEnd.set(userId, now);
    const current = await this.rowOf(userId);
    await this.store(userId, {
      state: state as PresenceState,
      statusMsg: typeof statusMsg === 'string' ? statusMsg : null,
      lastActiveTs: state === 'online' ? now : (current?.lastActiveTs ?? now),
    });
  }

  /**
   * GET /presence/{userId}/status: oneself or a user sharing a room (else 403). A user who never
   * set a presence reads as offline.
   */
  async getPresence(requesterId: string, userId: string): Promise<PresenceContent> {
    if (requesterId !== userId) {
      const visible = new Set(await this.deps.usersSharingRooms(requesterId));
      if (!visible.has(userId)) throw HearthError.forbidden('You are not allowed to see their presence');
    }
    const row = this.enabled ? await this.rowOf(userId) : undefined;
    if (!row) return { presence: 'offline' };
    return this.contentOf(row, this.now());
  }

  /**
   * A sync starts with `set_presence` (absent means online). `offline` leaves presence alone;
   * `online` brings an offline user online; `unavailable` marks the user idle. Call the returned
   * function when the sync request ends: a user with no sync for a while goes offline.
   */
  async setPresenceFromSync(userId: string, setPresence: SyncPresence = 'online'): Promise<() => void> {
    if (!this.enabled || setPresence === 'offline') return () => {};
    this.activeSyncs.set(userId, (this.activeSyncs.get(userId) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const n = (this.activeSyncs.get(userId) ?? 1) - 1;
      if (n <= 0) this.activeSyncs.delete(userId);
      else this.activeSyncs.set(userId, n);
      this.lastSyncEnd.set(userId, this.now());
    };
    try {
      const current = await this.rowOf(userId);
      const now = this.now();
      if (setPresence === 'online' && (!current || current.state === 'offline')) {
        await this.store(userId, { state: 'online', statusMsg: current?.statusMsg ?? null, lastActiveTs: now });
      } else if (setPresence === 'unavailable' && current?.state !== 'unavailable') {
        await this.store(userId, { state: 'unavailable', statusMsg: current?.statusMsg ?? null, lastActiveTs: current?.lastActiveTs ?? now });
      }
    } catch (err) {
      release();
      throw err;
    }
    return release;
  }

  /**
   * The user did something (sent an event): online again, and the last-active time moves on.
   * Within the granularity of the previous announcement nothing is written.
   */
  async bumpActive(userId: string): Promise<void> {
    if (!this.enabled) return;
    const now = this.now();
    const current = await this.rowOf(userId);
    if (current && current.state === 'online' && now - current.lastActiveTs < LAST_ACTIVE_GRANULARITY_MS) return;
    await this.store(userId, { state: 'online', statusMsg: current?.statusMsg ?? null, lastActiveTs: now });
  }

  /**
   * Another server's update of its user (the caller checked the user is of that server and shares
   * a room with a local user). Repeats of what is stored only keep the user from timing out.
   */
  async setRemotePresence(userId: string, update: RemotePresence): Promise<void> {
    if (!this.enabled || this.isLocal(userId)) return;
    const now = this.now();
    remember(this.remoteHeard, userId, now);
    const lastActiveTs = now - Math.max(0, update.lastActiveAgo);
    const current = await this.rowOf(userId);
    if (
      current?.state === update.presence &&
      current.statusMsg === update.statusMsg &&
      Math.abs(current.lastActiveTs - lastActiveTs) < LAST_ACTIVE_GRANULARITY_MS
    ) {
      return;
    }
    await this.store(userId, { state: update.presence, statusMsg: update.statusMsg, lastActiveTs });
  }

  /** The profile shown with presence changed: announce the presence again. */
  async profileChanged(userId: string): Promise<void> {
    if (!this.enabled) return;
    const current = await this.rowOf(userId);
    if (current) await this.store(userId, current);
  }

  /**
   * For sync: m.presence events of the user and those sharing a room with them that changed
   * after `afterPosition` (everyone's for 0), oldest change first.
   */
  async presenceSince(userId: string, afterPosition: number): Promise<PresenceEvent[]> {
    if (!this.enabled) return [];
    let users: string[];
    const changed = this.changedAfter(afterPosition, userId);
    if (changed === undefined) {
      const visible = new Set(await this.deps.usersSharingRooms(userId));
      visible.add(userId);
      users = [...visible];
    } else {
      if (changed.size === 0) return [];
      users = [...changed];
    }
    const now = this.now();
    return (await selectPresenceSince(this.deps.db, users, afterPosition)).map((r) => this.eventOf(r, now));
  }

  /** Everyone's presence changes with positions in (after, upTo], oldest first, at most `limit` (none when presence is off). */
  async changesAfter(after: number, upTo: number, limit: number): Promise<{ readonly position: number; readonly event: PresenceEvent }[]> {
    if (!this.enabled) return [];
    const now = this.now();
    return (await selectPresenceAfter(this.deps.db, after, upTo, limit)).map((r) => ({ position: r.position, event: this.eventOf(r, now) }));
  }

  /**
   * For sync: the current presence of these users, whether or not it changed lately (offline for
   * a user who never had any), for users who just started sharing a room with the syncing user.
   */
  async presenceOf(userIds: readonly string[]): Promise<PresenceEvent[]> {
    if (!this.enabled || userIds.length === 0) return [];
    const rows = new Map((await selectPresenceSince(this.deps.db, userIds, 0)).map((r) => [r.userId, r]));
    const now = this.now();
    return userIds.map((userId) => {
      const r = rows.get(userId);
      return r === undefined ? { type: 'm.presence', sender: userId, content: { presence: 'offline' } } : this.eventOf(r, now);
    });
  }

  /**
   * Applies the timeouts: online users idle past the idle timeout become unavailable; users
   * who have not synced within the sync timeout (and are not syncing now) become offline. Other
   * servers' users become offline when their server has not spoken of them for a while; local
   * users not offline are told to other servers again before those would time them out.
   */
  async sweep(): Promise<void> {
    if (!this.enabled) return;
    const now = this.now();
    for (const row of await selectPresentUsers(this.deps.db)) {
      if (!this.isLocal(row.userId)) {
        if (now - (this.remoteHeard.get(row.userId) ?? this.startedAt) > FEDERATION_TIMEOUT_MS) {
          this.remoteHeard.delete(row.userId);
          await this.store(row.userId, { ...row, state: 'offline' });
        }
        continue;
      }
      const next = this.timedOut(row, now);
      if (next !== undefined) await this.store(row.userId, { ...row, state: next });
      else if (this.deps.onChange !== undefined && now - (this.federated.get(row.userId) ?? 0) > FEDERATION_PING_MS) {
        remember(this.federated, row.userId, now);
        this.deps.onChange(row.userId, this.contentOf(row, now));
      }
    }
  }

  /** The state a local user's timeouts move them to, if any. */
  private timedOut(row: PresenceRow, now: number): PresenceState | undefined {
    const idle = row.state === 'online' && now - row.lastActiveTs > this.idleTimeout;
    if ((this.activeSyncs.get(row.userId) ?? 0) > 0) return idle ? 'unavailable' : undefined;
    const lastSeen = this.lastSyncEnd.get(row.userId) ?? this.startedAt;
    if (now - lastSeen > this.syncTimeout) return 'offline';
    return idle ? 'unavailable' : undefined;
  }

  /** Runs `sweep` every `intervalMs` until close(). */
  start(intervalMs = 5_000): void {
    if (this.timer || !this.enabled) return;
    this.timer = setInterval(() => void this.sweep().catch(() => {}), intervalMs);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The m.presence event of a row read with its profile. */
  private eventOf(row: PresenceWithProfile, now: number): PresenceEvent {
    const content = this.contentOf(row, now);
    if (row.displayname !== null) content.displayname = row.displayname;
    if (row.avatarUrl !== null) content.avatar_url = row.avatarUrl;
    return { type: 'm.presence', sender: row.userId, content };
  }

  private contentOf(row: PresenceRow, now: number): PresenceContent {
    const ago = Math.max(0, now - row.lastActiveTs);
    const content: PresenceContent = { presence: row.state, last_active_ago: ago };
    if (row.statusMsg !== null) content.status_msg = row.statusMsg;
    if (row.state === 'online') content.currently_active = ago < LAST_ACTIVE_GRANULARITY_MS;
    return content;
  }

  /**
   * The users whose presence changed after the position, told to this user (they shared a room
   * then, or it is the user); undefined when changes that far back are not remembered.
   */
  private changedAfter(afterPosition: number, userId: string): Set<string> | undefined {
    if (afterPosition <= 0 || this.changesFloor === undefined || afterPosition < this.changesFloor) return undefined;
    const users = new Set<string>();
    for (let i = this.changes.length - 1; i >= 0 && this.changes[i]!.position > afterPosition; i--) {
      const c = this.changes[i]!;
      if (c.audience.has(userId)) users.add(c.userId);
    }
    return users;
  }

  private async rowOf(userId: string): Promise<PresenceRow | undefined> {
    const kept = this.rows.get(userId);
    if (kept !== undefined) return kept ?? undefined;
    const row = await selectPresence(this.deps.db, userId);
    // A store that finished meanwhile has the newer row.
    if (!this.rows.has(userId)) this.keep(userId, row ?? null);
    return this.rows.get(userId) ?? undefined;
  }

  private keep(userId: string, row: PresenceRow | null): void {
    this.rows.delete(userId);
    this.rows.set(userId, row);
    if (this.rows.size > ROWS_KEPT) this.rows.delete(this.rows.keys().next().value as string);
  }

  private async store(userId: string, next: Pick<PresenceRow, 'state' | 'statusMsg' | 'lastActiveTs'>): Promise<void> {
    // Positions read before this store are covered by the log from here on.
    this.changesFloor ??= this.deps.notifier.current().presence;
    const row = await this.deps.db.transaction().execute(async (trx) => {
      const position = await allocateStreamPosition(trx, 'presence');
      const stored: PresenceRow = { userId, state: next.state, statusMsg: next.statusMsg, lastActiveTs: next.lastActiveTs, position };
      await upsertPresence(trx, stored);
      return stored;
    });
    const kept = this.rows.get(userId);
    if (kept === undefined || kept === null || kept.position < row.position) this.keep(userId, row);
    const audience = new Set(await this.deps.usersSharingRooms(userId));
    audience.add(userId);
    this.remember({ position: row.position, userId, audience });
    this.deps.notifier.notify({ stream: 'presence', position: row.position, userIds: [...audience] });
    if (this.deps.onChange !== undefined && this.isLocal(userId)) {
      const now = this.now();
      remember(this.federated, userId, now);
      this.deps.onChange(userId, this.contentOf(row, now));
    }
  }

  private isLocal(userId: string): boolean {
    return this.deps.serverName === undefined || isUserOf(userId, this.deps.serverName);
  }

  /** Logs a change, kept in position order (concurrent stores may commit out of order). */
  private remember(change: PresenceChange): void {
    let i = this.changes.length;
    while (i > 0 && this.changes[i - 1]!.position > change.position) i--;
    this.changes.splice(i, 0, change);
    this.audienceKept += change.audience.size;
    if (this.changes.length <= CHANGES_KEPT && this.audienceKept <= AUDIENCE_KEPT) return;
    // Drop the older half (by count and by audience), at least one change.
    let n = 0;
    while (n < this.changes.length && (n < this.changes.length - CHANGES_KEPT / 2 || this.audienceKept > AUDIENCE_KEPT / 2)) {
      this.audienceKept -= this.changes[n]!.audience.size;
      n++;
    }
    const dropped = this.changes.splice(0, n);
    this.changesFloor = Math.max(this.changesFloor ?? 0, dropped[dropped.length - 1]!.position);
  }
}

/** Sets a time in a map bounded like the rows (least recently set dropped first). */
function remember(map: Map<string, number>, userId: string, ts: number): void {
  map.delete(userId);
  map.set(userId, ts);
  if (map.size > ROWS_KEPT) map.delete(map.keys().next().value as string);
}

interface PresenceChange {
  readonly position: number;
  readonly userId: string;
  /** The users told of it: the user and those sharing a room with them at the time. */
  readonly audience: ReadonlySet<string>;
}
