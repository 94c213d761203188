// GET /sync: everything a client needs, initial and incremental. An incremental sync that finds
// nothing waits (long-poll) on the notifier for the user and their joined rooms, and answers as
// soon as something for them is committed, or with an empty response once its timeout passes,
// the client goes away or the server stops.

import type { Kysely } from 'kysely';
import { compileFilter, type CompiledFilter } from '../protocol/filters.js';
import type { RoomReader } from '../rooms/reader.js';
import type { Schema } from '../storage/schema.js';
import type { StreamEvent } from '../storage/sync/events.js';
import type { PresenceState } from '../users/presence.js';
import { IgnoredUsers } from './ignored-users.js';
import { SentMembers } from './lazy-members.js';
import type { StreamBus } from '../streams/bus.js';
import type { SyncPass } from './pass.js';
import { hasContent, type SyncResponse } from './response.js';
import type { MembershipAt } from './room-plans.js';
import { SharedReads } from './shared-reads.js';
import { buildSync, type BuiltSync, type SyncSources } from './sync-builder.js';
import { decodeSyncToken, TOKEN_STREAMS } from '../streams/token.js';
import type { StreamName, StreamPositions } from '../streams/positions.js';
import { type PushRuleSource, type StoredNotifications, UnreadCounter } from './unread.js';
import { countNotifications } from '../storage/push/notifications.js';

/** Longest a long-poll waits, whatever the client asks. */
export const MAX_SYNC_TIMEOUT_MS = 5 * 60_000;
const FILTER_CACHE = 1000;
const DEFAULT_FILTER = compileFilter(undefined);
const MEMBERSHIPS_KEPT = 20_000;

export interface SyncServiceDeps extends Omit<SyncSources, 'db' | 'reader' | 'unread' | 'shared' | 'memberships' | 'ignored'> {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
  /** The room server's reader (RoomService.reader). */
  readonly rooms: RoomReader;
  readonly accountData: SyncSources['accountData'] & { ignoredUsers(userId: string): Promise<Set<string>> };
  readonly filters: { getFilter(userId: string, idOrInlineJson: string): Promise<{ compiled: CompiledFilter }> };
  readonly typing: SyncSources['typing'] & { currentPosition(): number };
  readonly toDevice: SyncSources['toDevice'] & { deleteToDeviceUpTo(userId: string, deviceId: string, position: number): Promise<number> };
  readonly presence: SyncSources['presence'] & { setPresenceFromSync(userId: string, setPresence?: PresenceState): Promise<() => void> };
  /** The users' own push rules, for unread counts (default: the server-default rules only). */
  readonly pushRules?: PushRuleSource;
  /** The push-rule pass's rows: unread counts read them rather than evaluate those events again. */
  readonly storedNotifications?: Pick<StoredNotifications, 'window'>;
  readonly now?: () => number;
  /** Cap on the client's timeout (default 5 minutes). */
  readonly maxTimeoutMs?: number;
  /** Events-stream ranges up to this long are read once for every sync covering them (default 1000). */
  readonly windowMaxEvents?: number;
}

export interface SyncRequest {
  readonly userId: string;
  /** Null for tokens without a device: no to-device messages. */
  readonly deviceId: string | null;
  readonly since?: string;
  /** A filter id or an inline JSON filter. */
  readonly filter?: string;
  readonly fullState?: boolean;
  readonly setPresence?: PresenceState;
  /** How long to wait for news, in milliseconds (default 0). */
  readonly timeoutMs?: number;
  /** Registers a listener for the client going away (a waiting sync then returns at once). */
  readonly onClientGone?: (listener: () => void) => () => void;
}

export class SyncService {
  private readonly sources: SyncSources;
  private readonly now: () => number;
  private readonly maxTimeoutMs: number;
  private readonly filterCache = new Map<string, CompiledFilter>();
  /** Per device, the to-device position already acknowledged (its messages deleted). */
  private readonly acknowledged = new Map<string, number>();
  /** Long-polls waiting now, ended at once when the server stops. */
  private readonly waits = new Set<() => void>();
  private stopped = false;
  private readonly shared: SharedReads;
  /** Per user, their memberships as the last sync read them (see MembershipCache). */
  private readonly memberships = new Map<string, { at: number; list: readonly MembershipAt[] }>();
  /** Per device, the lazy-loaded member events it was sent. */
  private readonly sentMembers: SentMembers;

  constructor(private readonly deps: SyncServiceDeps) {
    this.shared = new SharedReads(deps.db, deps.rooms, deps.windowMaxEvents);
    this.now = deps.now ?? Date.now;
    this.sentMembers = new SentMembers({}, this.now);
    this.maxTimeoutMs = deps.maxTimeoutMs ?? MAX_SYNC_TIMEOUT_MS;
    const memberships = this.memberships;
    this.sources = {
      ...deps,
      reader: deps.rooms,
      unread: new UnreadCounter(
        deps.db,
        deps.rooms,
        deps.pushRules,
        deps.storedNotifications === undefined ? undefined : { window: () => deps.storedNotifications!.window(), counts: (userId, ranges) => countNotifications(deps.db, userId, ranges) },
      ),
      shared: this.shared,
      ignored: new IgnoredUsers((userId) => deps.accountData.ignoredUsers(userId)),
      memberships: {
        get: (userId) => memberships.get(userId),
        set: (userId, value) => {
          memberships.delete(userId);
          memberships.set(userId, value);
          if (memberships.size > MEMBERSHIPS_KEPT) memberships.delete(memberships.keys().next().value as string);
        },
      },
    };
  }

  async sync(req: SyncRequest): Promise<SyncResponse> {
    const filter = await this.filterOf(req.userId, req.filter);
    const current = this.currentPositions();
    // A token ahead of this server's streams (another server's, a restored database) is held to them.
    const since = req.since === undefined ? undefined : clamp(decodeSyncToken(req.since), current);
    const fullState = req.fullState === true;
    const timeoutMs = Math.max(0, Math.min(req.timeoutMs ?? 0, this.maxTimeoutMs));
    const release = await this.deps.presence.setPresenceFromSync(req.userId, req.setPresence);
    try {
      if (since !== undefined && req.deviceId !== null) await this.acknowledgeToDevice(req.userId, req.deviceId, since.to_device);
      const deadline = this.now() + timeoutMs;
      let from = since;
      // A long-poll with nothing new for it since its token (the usual case: the client is back
      // from the previous answer) waits before building anything.
      if (from !== undefined && !fullState && !this.stopped && timeoutMs > 0) {
        const rooms = this.joinedRoomsAt(req.userId, from.events);
        if (rooms !== undefined) await this.wait(req.userId, { positions: from, joinedRoomIds: rooms }, timeoutMs, req.onClientGone);
      }
      for (;;) {
        const built = await buildSync(this.sources, this.pass(req, filter, from, fullState));
        const remaining = deadline - this.now();
        if (from === undefined || fullState || hasContent(built.response) || remaining <= 0) return built.response;
        if (this.stopped) return built.response;
        const woken = await this.wait(req.userId, built, remaining, req.onClientGone);
        if (!woken) return built.response;
        // Nothing relevant happened up to these positions: continue from them.
        from = built.positions;
      }
    } finally {
      release();
    }
  }

  /** The server is stopping: waiting syncs answer now, later ones do not wait. */
  stopping(): void {
    this.stopped = true;
    for (const cancel of [...this.waits]) cancel();
  }

  /** The rooms the user is joined to, when the memberships kept are as of `position` or later. */
  private joinedRoomsAt(userId: string, position: number): string[] | undefined {
    const known = this.memberships.get(userId);
    if (known === undefined || known.at < position) return undefined;
    const out: string[] = [];
    for (const m of known.list) if (m.membership === 'join') out.push(m.roomId);
    return out;
  }

  /** Waits for news for the user or their rooms after the built positions; false on timeout or cancellation. */
  private wait(
    userId: string,
    built: Pick<BuiltSync, 'positions' | 'joinedRoomIds'>,
    timeoutMs: number,
    onClientGone: SyncRequest['onClientGone'],
  ): Promise<boolean> {
    return this.deps.notifier.wait({
      userId,
      roomIds: built.joinedRoomIds,
      since: built.positions,
      timeoutMs,
      onCancel: (cancel) => {
        this.waits.add(cancel);
        const offClient = onClientGone?.(cancel);
        return () => {
          this.waits.delete(cancel);
          offClient?.();
        };
      },
    });
  }

  private pass(req: SyncRequest, filter: CompiledFilter, since: StreamPositions | undefined, fullState: boolean): Omit<SyncPass, 'ignored'> {
    const upTo = since === undefined ? this.currentPositions() : atLeast(this.currentPositions(), since);
    let window: Promise<readonly StreamEvent[] | undefined> | undefined;
    const dedupe = filter.state.lazyLoadMembers && !filter.state.includeRedundantMembers;
    return {
      userId: req.userId,
      deviceId: req.deviceId,
      filter,
      since,
      upTo,
      fullState,
      ...(dedupe ? { sentMembers: this.sentMembers.of(req.userId, req.deviceId, since === undefined) } : {}),
      now: this.now(),
      window: () => (window ??= since === undefined ? Promise.resolve(undefined) : this.shared.window(since.events, upTo.events)),
    };
  }

  /** The positions every committed change has reached (typing from its own counter). */
  private currentPositions(): Record<StreamName, number> {
    const positions = this.deps.notifier.current();
    return { ...positions, typing: Math.max(positions.typing, this.deps.typing.currentPosition()) };
  }

  /** Messages up to the token's position reached the device: they are deleted (once per position). */
  private async acknowledgeToDevice(userId: string, deviceId: string, position: number): Promise<void> {
    const key = `${userId}\u0000${deviceId}`;
    if (position <= (this.acknowledged.get(key) ?? 0)) return;
    await this.deps.toDevice.deleteToDeviceUpTo(userId, deviceId, position);
    this.acknowledged.delete(key);
    this.acknowledged.set(key, position);
    if (this.acknowledged.size > 100_000) this.acknowledged.delete(this.acknowledged.keys().next().value as string);
  }

  private async filterOf(userId: string, filter: string | undefined): Promise<CompiledFilter> {
    const key = `${userId}\u0000${filter ?? ''}`;
    const cached = this.filterCache.get(key);
    if (cached !== undefined) return cached;
    const compiled = filter === undefined || filter === '' ? DEFAULT_FILTER : (await this.deps.filters.getFilter(userId, filter)).compiled;
    // Stored filters never change, and inline ones are their own key.
    if (this.filterCache.size >= FILTER_CACHE) this.filterCache.delete(this.filterCache.keys().next().value as string);
    this.filterCache.set(key, compiled);
    return compiled;
  }
}

/** A token's positions held to the server's current ones (a token from ahead of them). */
export function clamp(since: Record<StreamName, number>, current: StreamPositions): Record<StreamName, number> {
  for (const s of TOKEN_STREAMS) since[s] = Math.min(since[s], current[s]);
  return since;
}

/** The current positions, none behind the token's. */
export function atLeast(current: Record<StreamName, number>, since: StreamPositions): Record<StreamName, number> {
  for (const s of TOKEN_STREAMS) current[s] = Math.max(current[s], since[s]);
  return current;
}
