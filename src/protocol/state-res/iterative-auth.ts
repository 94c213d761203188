// The iterative auth checks of state resolution v2: apply each event, in order, to a room state
// when the authorization rules allow it against that state, and skip it otherwise.

import { authStateKeysForEvent } from '../auth-events.js';
import { checkEventAuth } from '../event-auth.js';
import { stateKey, type RoomEvent, type StateKey } from '../events.js';
import type { RoomVersion } from '../room-versions.js';
import { AuthGraph, YIELD_EVERY, yieldToEventLoop } from './auth-graph.js';

/**
 * Runs the iterative auth checks over `eventIds` (all loaded) from `base`. The auth state for
 * each event holds, for each key the rules need, the event from the state built so far, or else
 * the event's own auth event with that key unless that auth event was rejected.
 */
export async function iterativeAuthChecks(
  graph: AuthGraph,
  version: RoomVersion,
  eventIds: readonly string[],
  base: ReadonlyMap<StateKey, string>,
): Promise<Map<StateKey, string>> {
  const state = new Map(base);
  // v12: from an empty state, the create event comes from the room id (no event cites it).
  await graph.loadCreate(version);
  const createKey = stateKey('m.room.create', '');

  // Fetch up front every event's auth events and the base state's events for the keys needed;
  // whatever enters the state later comes from the (loaded) list itself.
  await graph.loadAuthEvents(eventIds);
  const authIds: string[] = [];
  for (const id of eventIds) authIds.push(...(graph.get(id)?.auth_events ?? []));
  await graph.loadRejections(authIds);
  const typesOf = new Map<string, StateKey[]>();
  const wanted: string[] = [];
  for (const id of eventIds) {
    const ev = graph.get(id);
    if (ev === undefined) continue;
    const keys = authStateKeysForEvent(ev, version);
    typesOf.set(id, keys);
    for (const k of keys) {
      const v = base.get(k);
      if (v !== undefined) wanted.push(v);
    }
  }
  await graph.load(wanted);

  let steps = 0;
  for (const id of eventIds) {
    if (++steps % YIELD_EVERY === 0) await yieldToEventLoop();
    const ev = graph.get(id);
    if (ev === undefined || ev.state_key === undefined) continue;

    const own = new Map<StateKey, RoomEvent>();
    for (const a of ev.auth_events) {
      // Rejected auth events are never used: auth events are not re-authorized here.
      if (graph.isRejected(a)) continue;
      const authEv = graph.get(a);
      if (authEv?.state_key !== undefined) own.set(stateKey(authEv.type, authEv.state_key), authEv);
    }
    const authState = new Map<StateKey, RoomEvent>();
    for (const k of typesOf.get(id) ?? []) {
      const current = state.get(k);
      const chosen = (current !== undefined ? graph.get(current) : undefined) ?? own.get(k) ?? (k === createKey ? graph.create : undefined);
      if (chosen !== undefined) authState.set(k, chosen);
    }
    if (checkEventAuth(ev, authState, version).allowed) {
      state.set(stateKey(ev.type, ev.state_key), id);
    }
  }
  return state;
}
