// GET /rooms/{roomId}/event/{eventId} and /context/{eventId}: one event, or one event with what
// surrounds it, as the user may see them. An event the user may not see is answered like an
// unknown one (404), as the spec asks; so is a message from a user they ignore, whose messages
// are also left out of the context around an event.

import { HearthError } from '../../protocol/errors.js';
import type { Actor } from '../actor.js';
import type { ClientEvent } from '../client-event.js';
import type { RoomCore } from '../core.js';
import type { RoomEventFilter } from '../../protocol/filters.js';
import { byStreamOrder, isServed, positionOf, type StoredEvent } from '../stored-event.js';
import { encodeTimelineToken } from '../tokens.js';
import type { VisibilityHistory } from '../visibility.js';
import { roomAccess, requireHistoryAccess } from './access.js';
import { StatesBefore } from '../visibility-at.js';
import { loadVisibilityHistory } from './history.js';
import { ignoresNobody, lazyMembers, type IgnoredUsersOf } from './messages.js';
import { paginate } from './paginate.js';

async function visible(statesBefore: StatesBefore, history: VisibilityHistory, e: StoredEvent): Promise<boolean> {
  await statesBefore.load([e]);
  return statesBefore.canSee(history, e, positionOf(e));
}

export async function visibleEvent(core: RoomCore, actor: Actor, roomId: string, eventId: string, needsHistoryAccess: boolean, ignoredUsers: IgnoredUsersOf) {
  const access = await roomAccess(core, roomId, actor.userId);
  if (needsHistoryAccess) requireHistoryAccess(access, actor.userId);
  const event = await core.reader.event(eventId);
  if (event === undefined || event.roomId !== roomId || !isServed(event)) throw HearthError.notFound('Event not found');
  const [history, ignored] = await Promise.all([loadVisibilityHistory(core.db, access.room.nid, actor.userId), ignoredUsers(actor.userId)]);
  const statesBefore = new StatesBefore(core.db, actor.userId);
  if (!(await visible(statesBefore, history, event))) throw HearthError.notFound('Event not found');
  if (event.stateKey === undefined && ignored.has(event.sender)) throw HearthError.notFound('Event not found');
  return { access, event, history, statesBefore, ignored };
}

export async function roomEvent(core: RoomCore, actor: Actor, roomId: string, eventId: string, ignoredUsers: IgnoredUsersOf = ignoresNobody): Promise<ClientEvent> {
  const { event } = await visibleEvent(core, actor, roomId, eventId, false, ignoredUsers);
  const [out] = await core.reader.clientEvents([event], { now: core.now(), viewer: actor });
  return out!;
}

export interface EventContext {
  start: string;
  end: string;
  event: ClientEvent;
  events_before: ClientEvent[];
  events_after: ClientEvent[];
  state: ClientEvent[];
}

export async function eventContext(
  core: RoomCore,
  actor: Actor,
  roomId: string,
  eventId: string,
  options: { limit: number; filter?: RoomEventFilter },
  ignoredUsers: IgnoredUsersOf = ignoresNobody,
): Promise<EventContext> {
  const { access, event, history, statesBefore, ignored } = await visibleEvent(core, actor, roomId, eventId, true, ignoredUsers);
  const beforeLimit = Math.floor(options.limit / 2);
  const common = { roomNid: access.room.nid, userId: actor.userId, history, statesBefore, ignored, to: undefined, ...(options.filter !== undefined ? { filter: options.filter } : {}) };
  const position = positionOf(event);
  const before = await paginate(core.reader, { ...common, dir: 'b', from: position - 1, limit: beforeLimit });
  const after = await paginate(core.reader, { ...common, dir: 'f', from: position, limit: options.limit - beforeLimit });
  const now = core.now();
  const viewer = { userId: actor.userId, deviceId: actor.deviceId };
  const lastAfter = after.events[after.events.length - 1] ?? event;
  const stateEvents =
    options.filter?.lazy_load_members === true
      ? await lazyMembers(core, [...before.events, event, ...after.events].sort(byStreamOrder), { now, viewer })
      : await core.reader.clientEvents([...(await core.reader.stateAfter(lastAfter)).values()], { now, viewer });
  const oldest = before.events[before.events.length - 1];
  return {
    start: encodeTimelineToken(positionOf(oldest ?? event) - 1),
    end: encodeTimelineToken(positionOf(lastAfter)),
    event: (await core.reader.clientEvents([event], { now, viewer }))[0]!,
    events_before: await core.reader.clientEvents(before.events, { now, viewer }),
    events_after: await core.reader.clientEvents(after.events, { now, viewer }),
    state: stateEvents,
  };
}
