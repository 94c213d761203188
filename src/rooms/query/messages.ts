// GET /rooms/{roomId}/messages: a page of the room's timeline, backwards or forwards from a token,
// as the user may see it (history visibility), without the messages of users they ignore, and as
// the filter asks.

import type { Actor } from '../actor.js';
import type { ClientEvent } from '../client-event.js';
import type { RoomCore } from '../core.js';
import type { RoomEventFilter } from '../../protocol/filters.js';
import type { StoredEvent } from '../stored-event.js';
import { decodeTimelineToken, encodeTimelineToken } from '../tokens.js';
import { roomAccess, requireHistoryAccess } from './access.js';
import { StatesBefore } from '../visibility-at.js';
import { loadVisibilityHistory } from './history.js';
import { paginate } from './paginate.js';

export interface MessagesRequest {
  readonly from?: string;
  readonly to?: string;
  readonly dir: 'b' | 'f';
  readonly limit: number;
  readonly filter?: RoomEventFilter;
}

export interface MessagesResponse {
  start: string;
  end?: string;
  chunk: ClientEvent[];
  state?: ClientEvent[];
}

/** Who a user ignores (their m.ignored_user_list); the users area provides it. */
export type IgnoredUsersOf = (userId: string) => Promise<ReadonlySet<string>>;

export const ignoresNobody: IgnoredUsersOf = () => Promise.resolve(new Set<string>());

export async function roomMessages(
  core: RoomCore,
  actor: Actor,
  roomId: string,
  req: MessagesRequest,
  ignoredUsers: IgnoredUsersOf = ignoresNobody,
): Promise<MessagesResponse> {
  const access = await roomAccess(core, roomId, actor.userId);
  requireHistoryAccess(access, actor.userId);
  const from = req.from === undefined ? undefined : decodeTimelineToken(req.from);
  const to = req.to === undefined ? undefined : decodeTimelineToken(req.to);
  const [history, ignored] = await Promise.all([loadVisibilityHistory(core.db, access.room.nid, actor.userId), ignoredUsers(actor.userId)]);
  const page = await paginate(core.reader, {
    roomNid: access.room.nid,
    userId: actor.userId,
    history,
    statesBefore: new StatesBefore(core.db, actor.userId),
    ignored,
    dir: req.dir,
    from,
    to,
    limit: req.limit,
    ...(req.filter !== undefined ? { filter: req.filter } : {}),
  });
  const now = core.now();
  const viewer = { userId: actor.userId, deviceId: actor.deviceId };
  // Without `from`: backwards from the newest event, forwards from before the oldest (which may be
  // a backfilled one, below 0).
  const start = req.from ?? encodeTimelineToken(req.dir === 'b' ? (page.firstSeen ?? 0) : page.firstSeen !== undefined ? page.firstSeen - 1 : 0);
  const out: MessagesResponse = { start, chunk: await core.reader.clientEvents(page.events, { now, viewer }) };
  if (page.next !== undefined) out.end = encodeTimelineToken(page.next);
  if (req.filter?.lazy_load_members === true) out.state = await lazyMembers(core, page.events, { now, viewer });
  return out;
}

/** The member events of the senders of `events`, from the state after the last of them. */
export async function lazyMembers(
  core: RoomCore,
  events: readonly StoredEvent[],
  options: { now: number; viewer: { userId: string; deviceId: string | null } },
): Promise<ClientEvent[]> {
  const last = events[events.length - 1];
  if (last?.stateAfterNid === undefined) return [];
  const senders = [...new Set(events.map((e) => e.sender))];
  const members = await core.reader.stateSubsetOfSnapshot(last.stateAfterNid, 'm.room.member', senders);
  return core.reader.clientEvents([...members.values()], options);
}

