// The push-rule pass: every event on the timeline is evaluated with the push rules of each local
// user it may notify (the room's joined members when it was sent, and the invitee of an invite;
// not the users application services own),
// and what notifies is stored (storage/push/notifications.ts) for GET /notifications and the
// pushers, which are then woken. A durable stream consumer on the events stream, apart from the
// send path: sending never waits for it, and a restart reads on from where it stopped (a batch
// seen twice stores nothing twice).
//
// Notifications older than a month are deleted, hourly.
//
// Room facts evaluation needs (member count, power levels, display names) are read once per room
// and kept until the room's state changes. Sync's unread counts evaluate the same rules on their own (sync/unread.ts), so that
// they are never behind the timeline they come with.

import type { Kysely } from 'kysely';
import { evaluatePushRules, senderPowerIn, type PushRuleSet, type SenderPower } from '../protocol/push-rules/index.js';
import type { RoomReader } from '../rooms/reader.js';
import type { StoredEvent } from '../rooms/stored-event.js';
import { timelineAfter, type TimelineRow } from '../storage/appservice/queues.js';
import { insertNotifications, pruneNotifications, type NotificationRow } from '../storage/push/notifications.js';
import { MAIN_THREAD, threadsOfEvents } from '../storage/rooms/relations.js';
import type { Schema } from '../storage/schema.js';
import type { StreamBus } from '../streams/bus.js';
import { StreamConsumer } from '../streams/consumer.js';
import { claimConsumerPosition } from '../storage/streams.js';
import type { PushRuleSource } from '../sync/unread.js';

/**
 * Events committed within this of the first are evaluated in the same batch: a busy room's
 * events share its reads and their notifications one insert. (Pushes wait as long; sync's
 * counts never do, see sync/unread.ts.)
 */
const GATHER_MS = 50;
const BATCH = 200;
/** Evaluations between turns given to other work. */
const YIELD_EVERY = 250;
/** Rooms whose facts are remembered (until their state changes). */
const ROOM_FACTS_CACHE = 2000;
/** Notifications are kept this long (GET /notifications shows the last month, as the reference server). */
const KEEP_MS = 30 * 24 * 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Display names remembered at most. */
const NAME_CACHE = 100_000;

export interface PushActionsOptions {
  readonly db: Kysely<Schema>;
  readonly bus: StreamBus;
  readonly reader: RoomReader;
  readonly serverName: string;
  readonly pushRules: PushRuleSource;
  readonly ignoredUsers: (userId: string) => Promise<ReadonlySet<string>>;
  /** Users an application service owns exclusively (and services' own senders): never notified, as on the reference server. */
  readonly appServiceUser?: (userId: string) => boolean;
  /** Told which users were notified of something (their pushers have work). */
  readonly notified: (userIds: ReadonlySet<string>) => void;
  readonly log: { warn(message: string, details?: object): void };
  readonly now?: () => number;
}

/** A local member the room's events are evaluated for. */
interface Member {
  readonly userId: string;
  /** Their membership's stream position: events before it were sent before they joined. */
  readonly since: number;
  readonly displayName: string | null;
}

interface RoomFacts {
  readonly members: readonly Member[];
  readonly memberCount: number;
  readonly senderPower: (sender: string) => SenderPower;
}

export class PushActions {
  readonly consumer: StreamConsumer<TimelineRow>;
  private readonly now: () => number;
  /** Members' display names, by their membership event (which never changes). */
  private readonly names = new Map<number, string | null>();
  /** Per room, its facts as of a state snapshot: they hold until the room's state changes. */
  private readonly facts = new Map<string, { readonly snapshotNid: number; readonly facts: RoomFacts }>();
  private pruner: NodeJS.Timeout | undefined;
  private readonly startAfter: number;
  private began: number | undefined;

  constructor(private readonly options: PushActionsOptions) {
    this.now = options.now ?? Date.now;
    this.startAfter = options.bus.current().events;
    this.consumer = new StreamConsumer<TimelineRow>({
      name: 'push:actions',
      stream: 'events',
      db: options.db,
      bus: options.bus,
      // A server seen for the first time starts at what is committed now.
      startAfter: this.startAfter,
      batchSize: BATCH,
      gatherMs: GATHER_MS,
      log: options.log,
      read: (after, limit) => timelineAfter(options.db, after, limit),
      handle: (rows) => this.handle(rows),
      ...(options.now !== undefined ? { now: options.now } : {}),
    });
  }

  /** Events in (after, upTo] have been evaluated and what notifies is stored (undefined before start). */
  window(): { readonly after: number; readonly upTo: number } | undefined {
    return this.began === undefined ? undefined : { after: this.began, upTo: this.consumer.position };
  }

  async start(): Promise<void> {
    // Where the pass began is kept (the position of a consumer row that never moves): sync counts
    // unread events before it by evaluating them itself.
    const began = await claimConsumerPosition(this.options.db, 'push:actions:began', 'events', this.startAfter, this.now());
    await this.consumer.start();
    this.began = began.position;
    const prune = () =>
      void pruneNotifications(this.options.db, this.now() - KEEP_MS).catch((err) => this.options.log.warn('push: pruning notifications failed', { error: String(err) }));
    prune();
    this.pruner = setInterval(prune, PRUNE_EVERY_MS);
    this.pruner.unref?.();
  }

  async stop(): Promise<void> {
    if (this.pruner !== undefined) clearInterval(this.pruner);
    await this.consumer.stop();
  }

  private async handle(rows: readonly TimelineRow[]): Promise<void> {
    const { reader } = this.options;
    const events = await reader.streamedEvents(rows.map((r) => r.nid));
    const byRoom = new Map<string, StoredEvent[]>();
    for (const row of rows) {
      const e = events.get(row.nid);
      if (e === undefined || e.streamOrdering === undefined) continue;
      const list = byRoom.get(e.roomId);
      if (list === undefined) byRoom.set(e.roomId, [e]);
      else list.push(e);
    }
    const out: NotificationRow[] = [];
    // Per member: their rules and whom they ignore, read once a batch.
    const judges = new Map<string, { readonly rules: PushRuleSet; readonly ignored: ReadonlySet<string> }>();
    const judgeOf = async (userId: string) => {
      let judge = judges.get(userId);
      if (judge === undefined) judges.set(userId, (judge = { rules: await this.options.pushRules.rulesOf(userId), ignored: await this.options.ignoredUsers(userId) }));
      return judge;
    };
    const now = this.now();
    let evaluated = 0;
    for (const [roomId, roomEvents] of byRoom) {
      const facts = await this.roomFacts(roomId);
      if (facts === undefined) continue;
      for (const m of facts.members) await judgeOf(m.userId);
      for (const e of roomEvents) {
        const position = e.streamOrdering!;
        const targets = facts.members.filter((m) => m.since < position);
        // An invite notifies its (local) invitee, who is not a member yet.
        const invitee = e.type === 'm.room.member' && e.pdu.content['membership'] === 'invite' ? e.stateKey : undefined;
        if (invitee !== undefined && this.isLocal(invitee) && this.options.appServiceUser?.(invitee) !== true && !targets.some((m) => m.userId === invitee)) {
          targets.push({ userId: invitee, since: 0, displayName: null });
          await judgeOf(invitee);
        }
        const event = { type: e.type, sender: e.sender, room_id: e.roomId, content: e.pdu.content, ...(e.stateKey !== undefined ? { state_key: e.stateKey } : {}) };
        const power = facts.senderPower(e.sender);
        for (const member of targets) {
          if (member.userId === e.sender) continue;
          const judge = judges.get(member.userId)!;
          if (judge.ignored.has(e.sender)) continue;
          const result = evaluatePushRules(judge.rules, event, { userId: member.userId, displayName: member.displayName, roomMemberCount: facts.memberCount, ...power });
          if (result === null || !result.notify) continue;
          out.push({
            user_id: member.userId,
            stream_ordering: position,
            room_id: roomId,
            event_nid: e.nid,
            actions_json: JSON.stringify(result.actions),
            highlight: result.highlight ? 1 : 0,
            received_ts: now,
            thread_id: MAIN_THREAD,
          });
        }
        // A big room's batch is long work: requests get their turn between slices of it.
        evaluated += targets.length;
        if (evaluated >= YIELD_EVERY) {
          evaluated = 0;
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    }
    if (out.length === 0) return;
    // Each notification's thread, for unread counts per thread (sync/unread.ts).
    const notifying = new Map<number, StoredEvent>();
    for (const row of out) notifying.set(row.event_nid, events.get(row.event_nid)!);
    const threads = await threadsOfEvents(this.options.db, [...notifying.values()].map((e) => ({ eventId: e.eventId, content: e.pdu.content })));
    for (const row of out) row.thread_id = threads.get(notifying.get(row.event_nid)!.eventId) ?? MAIN_THREAD;
    await insertNotifications(this.options.db, out);
    this.options.notified(new Set(out.map((r) => r.user_id)));
  }

  private rememberName(eventNid: number, name: string | null): void {
    if (this.names.size >= NAME_CACHE) this.names.delete(this.names.keys().next().value as number);
    this.names.set(eventNid, name);
  }

  private isLocal(userId: string): boolean {
    return userId.endsWith(`:${this.options.serverName}`);
  }

  /** The room's local joined members with their display names, its member count and power levels. */
  private async roomFacts(roomId: string): Promise<RoomFacts | undefined> {
    const { db, reader } = this.options;
    const room = await reader.roomRow(roomId);
    if (room === undefined || room.state_snapshot_nid === null) return undefined;
    const snapshotNid = Number(room.state_snapshot_nid);
    const known = this.facts.get(roomId);
    if (known !== undefined && known.snapshotNid === snapshotNid) return known.facts;
    const rows = await db
      .selectFrom('room_memberships')
      .select(['user_id', 'event_nid', 'stream_ordering'])
      .where('room_nid', '=', Number(room.room_nid))
      .where('membership', '=', 'join')
      .where('user_id', 'like', `%:${this.options.serverName}`)
      .execute();
    const local = rows.filter((r) => this.isLocal(r.user_id) && this.options.appServiceUser?.(r.user_id) !== true);
    // Display names by membership event, read without passing through the shared event cache
    // (a big room's members would push out what it holds).
    const unknown = local.map((r) => Number(r.event_nid)).filter((nid) => !this.names.has(nid));
    if (unknown.length > 0) {
      await reader.visitEventPdus(unknown, (e) => {
        const name = e.redactedBy === undefined ? e.pdu.content['displayname'] : undefined;
        this.rememberName(e.nid, typeof name === 'string' ? name : null);
      });
    }
    const members = local.map((r) => ({ userId: r.user_id, since: Number(r.stream_ordering), displayName: this.names.get(Number(r.event_nid)) ?? null }));
    const senderPower = members.length > 0 ? await reader.senderPowerAt(snapshotNid, roomId) : senderPowerIn(undefined);
    const facts = { members, memberCount: Number(room.joined_members), senderPower };
    this.facts.delete(roomId);
    if (this.facts.size >= ROOM_FACTS_CACHE) this.facts.delete(this.facts.keys().next().value as string);
    this.facts.set(roomId, { snapshotNid, facts });
    return facts;
  }
}

