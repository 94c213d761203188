// One sync response for one range of the streams: rooms by membership, then the per-user
// sections (presence, account data, to-device, device lists). A stream that did not move since
// the token is not read at all.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../protocol/json.js';
import type { RoomReader } from '../rooms/reader.js';
import { membershipOf, type StoredEvent } from '../rooms/stored-event.js';
import { membersOfRoom } from '../storage/rooms/memberships.js';
import type { Schema } from '../storage/schema.js';
import type { AccountDataChanges } from '../users/account-data.js';
import type { PresenceEvent } from '../users/presence.js';
import type { ToDeviceBatch } from '../users/to-device.js';
import type { DeviceListTracker } from './device-lists.js';
import { ephemeralEvents, type EphemeralSources } from './ephemeral.js';
import { inviteSections, knockSections } from './invites.js';
import { joinedRoomSections } from './joined-room.js';
import { leftRoomSections } from './leaves.js';
import { moved, projectFields, type SyncPass } from './pass.js';
import { emptyResponse, type SyncResponse } from './response.js';
import { planRooms, type JoinPlan, type MembershipCache } from './room-plans.js';
import { encodeSyncToken } from '../streams/token.js';
import type { StreamName } from '../streams/positions.js';
import type { IgnoredUsers } from './ignored-users.js';
import type { SharedReads } from './shared-reads.js';
import type { UnreadCounter } from './unread.js';

/** The spec's recommended bound on to-device messages per response. */
export const TO_DEVICE_LIMIT = 100;

export interface SyncSources extends EphemeralSources {
  readonly db: Kysely<Schema>;
  readonly reader: RoomReader;
  readonly unread: UnreadCounter;
  readonly shared: SharedReads;
  readonly memberships: MembershipCache;
  readonly ignored: IgnoredUsers;
  readonly accountData: { accountDataSince(userId: string, afterPosition: number, options?: { initial?: boolean }): Promise<AccountDataChanges> };
  readonly presence: {
    presenceSince(userId: string, afterPosition: number): Promise<PresenceEvent[]>;
    presenceOf(userIds: readonly string[]): Promise<PresenceEvent[]>;
  };
  readonly toDevice: {
    toDeviceFor(userId: string, deviceId: string, afterPosition: number, limit?: number, upTo?: number): Promise<ToDeviceBatch>;
  };
  /** `device_lists` of incremental syncs (absent: always empty). */
  readonly deviceLists?: Pick<DeviceListTracker, 'changes'>;
  /** The syncing device's one-time key counts and unused fallback key types. */
  readonly deviceKeys?: { keyCounts(userId: string, deviceId: string): Promise<{ oneTimeKeys: Record<string, number>; unusedFallbacks: readonly string[] }> };
}

export interface BuiltSync {
  readonly response: SyncResponse;
  /** The positions next_batch names. */
  readonly positions: Record<StreamName, number>;
  /** The rooms the user is joined to (what a long-poll listens to besides the user). */
  readonly joinedRoomIds: string[];
}

export async function buildSync(src: SyncSources, input: Omit<SyncPass, 'ignored'>): Promise<BuiltSync> {
  const { db, reader } = src;
  const userId = input.userId;
  const since = input.since;
  const positions: Record<StreamName, number> = { ...input.upTo };

  // Account data first: it holds the ignore list the rest is read through.
  const global: JsonObject[] = [];
  const roomAccountData = new Map<string, JsonObject[]>();
  const changes = moved(input, 'account_data') ? await src.accountData.accountDataSince(userId, since?.account_data ?? 0, { initial: since === undefined }) : undefined;
  const ignored = await src.ignored.of(userId, since?.account_data, input.upTo.account_data, changes);
  const pass: SyncPass = { ...input, ignored: () => Promise.resolve(ignored) };
  if (changes !== undefined) {
    positions.account_data = Math.max(positions.account_data, changes.position);
    for (const e of changes.global) if (pass.filter.accountData.matches({ type: e.type })) global.push({ type: e.type, content: e.content });
    for (const [roomId, events] of changes.rooms) {
      const kept = events.filter((e) => pass.filter.roomAccountData.matches({ type: e.type, room_id: roomId }));
      if (kept.length > 0) roomAccountData.set(roomId, kept.map((e) => ({ type: e.type, content: e.content })));
    }
  }

  const plans = await planRooms(db, reader, src.shared, pass, src.memberships);
  const joinedRoomIds = [...plans.joined.keys()];
  const ephemeral = await ephemeralEvents(src, pass, joinedRoomIds);
  const joinedAccountData = new Map([...roomAccountData].filter(([roomId]) => plans.joined.has(roomId)));

  const response = emptyResponse('');
  const memberEvents: StoredEvent[] = [];
  response.rooms.join = await joinedRoomSections(src, pass, plans.joined, {
    ephemeral: ephemeral.events,
    ownReceipts: ephemeral.ownReceipts,
    accountData: joinedAccountData,
    ...(since !== undefined ? { memberEvents } : {}),
  });
  response.rooms.invite = inviteSections(pass, plans.invites, ignored);
  response.rooms.knock = knockSections(pass, plans.knocks);
  response.rooms.leave = await leftRoomSections(db, reader, src.shared, pass, plans.leaves, roomAccountData);
  response.account_data.events = global;

  const sharing = since === undefined ? [] : await newlySharing(db, userId, memberEvents, plans.joined.values());
  if (moved(pass, 'presence') || sharing.length > 0) {
    const changed = moved(pass, 'presence') ? await src.presence.presenceSince(userId, since?.presence ?? 0) : [];
    // One event per user; the current presence of those newly sharing a room wins.
    const byUser = new Map(changed.map((e) => [e.sender, e]));
    for (const e of await src.presence.presenceOf(sharing)) byUser.set(e.sender, e);
    response.presence.events = [...byUser.values()]
      .filter((e) => !ignored.has(e.sender) && pass.filter.presence.matches({ type: e.type, sender: e.sender }))
      .map((e) => projectFields(pass, { type: e.type, sender: e.sender, content: { ...e.content } }));
  }

  if (pass.deviceId !== null && moved(pass, 'to_device')) {
    const batch = await src.toDevice.toDeviceFor(userId, pass.deviceId, since?.to_device ?? 0, TO_DEVICE_LIMIT, pass.upTo.to_device);
    positions.to_device = batch.position;
    response.to_device.events = batch.events.map((e) => ({ sender: e.sender, type: e.type, content: e.content }));
  }

  // Initial syncs have no device_lists: the client reads every device list it needs anyway.
  if (since !== undefined && src.deviceLists !== undefined && (moved(pass, 'events') || moved(pass, 'device_lists'))) {
    response.device_lists = await src.deviceLists.changes({
      userId,
      since,
      upTo: pass.upTo,
      window: moved(pass, 'events') ? await pass.window() : undefined,
      joinedRoomNids: [...plans.joined.values()].map((p) => p.roomNid),
      events: (nids) => src.shared.events(nids),
    });
  }

  if (pass.deviceId !== null && src.deviceKeys !== undefined) {
    const counts = await src.deviceKeys.keyCounts(userId, pass.deviceId);
    response.device_one_time_keys_count = { ...counts.oneTimeKeys };
    response.device_unused_fallback_key_types = [...counts.unusedFallbacks];
  }

  response.next_batch = encodeSyncToken(positions);
  return { response, positions, joinedRoomIds };
}

/**
 * The users an incremental sync sends the presence of whatever their presence stream did, as the
 * reference server does: those whose member event in a joined room's state or timeline joins,
 * invites or knocks them (unless a later one there removes them), and every member of the rooms
 * the user joined since the token. Not the user.
 */
async function newlySharing(
  db: Kysely<Schema>,
  userId: string,
  memberEvents: readonly StoredEvent[],
  joined: Iterable<JoinPlan>,
): Promise<string[]> {
  const users = new Set<string>();
  for (const e of memberEvents) {
    if (e.stateKey === undefined) continue;
    const m = membershipOf(e);
    if (m === 'join' || m === 'invite' || m === 'knock') users.add(e.stateKey);
    else users.delete(e.stateKey);
  }
  for (const plan of joined) {
    // A room new to the client in an incremental sync (see room-plans).
    if (plan.range.after !== undefined) continue;
    for (const m of await membersOfRoom(db, plan.roomNid, ['join'])) users.add(m.user_id);
  }
  users.delete(userId);
  return [...users];
}
