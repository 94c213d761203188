// The resident server's side of joins and leaves over federation (server-server API, "Joining
// Rooms" and "Leaving Rooms (Rejections)"), without the HTTP:
// - make_join / make_leave: a template member event for a user of the asking server, built in the
//   room's queue against the current head as a local event would be (prev_events, depth,
//   auth_events), neither hashed nor signed (the joining server fills it in and signs it), and
//   refused now when the auth rules would refuse it (as the reference server checks).
// - send_join / send_leave: the signed event, checked for what it claims, then received like any
//   PDU (signatures, hashes, auth: rooms/input/receive.ts). A join is answered with the state
//   before it and that state's auth chain.
// Restricted rooms: a join this server can vouch for (restricted-join.ts) names one of its users
// in join_authorised_via_users_server and is signed here too on send_join.

import { authTypesForEvent } from '../../protocol/auth-events.js';
import { HearthError } from '../../protocol/errors.js';
import { checkEventAuth } from '../../protocol/event-auth.js';
import { stateKey, type Pdu } from '../../protocol/events.js';
import { computeEventId, hashAndSignEvent, type PduDraft } from '../../protocol/hashes.js';
import { isUserOf, serverNameOf, tryParseUserId } from '../../protocol/ids.js';
import { isJsonObject, type JsonObject } from '../../protocol/json.js';
import { authChainIds } from '../../storage/rooms/graph.js';
import { serverJoinedNow } from '../../storage/rooms/for-servers.js';
import { refsFor } from '../builder.js';
import type { RoomCore } from '../core.js';
import { keysToDecide, type EventRef, type RoomHead } from '../head.js';
import type { ReceiveOutcome } from '../input/receive.js';
import type { RoomInfo } from '../reader.js';
import { pdusOf, serverAclAllows, stateIdsForServer, type ServingDeps } from '../query/for-servers.js';
import { allowedByMembership, needsVoucher, voucherOn } from './restricted-join.js';

export type RemoteMembership = 'join' | 'leave' | 'knock';

/** GET /make_join, /make_leave: the room's version and the template to sign. */
export interface MembershipTemplate {
  room_version: string;
  event: JsonObject;
}

/** PUT /send_join (v2 body; v1 wraps it): the state before the join and its auth chain. */
export interface SendJoinResponse {
  state: Pdu[];
  auth_chain: Pdu[];
  /** The join as stored here. */
  event?: Pdu;
  members_omitted: false;
  /** Servers with joined members in the state before the join. */
  servers_in_room: string[];
}

/** PUT /send_knock: the room's stripped state, for the knocking user's sync. */
export interface SendKnockResponse {
  knock_room_state: JsonObject[];
}

/** The room versions a server supports when make_join names none (the spec's default). */
const DEFAULT_SUPPORTED_VERSIONS: readonly string[] = ['1'];

/** The user's server; 403 when it is not `origin` (a server asks only for its own users). */
function requireUserOf(origin: string, userId: unknown, what: string): string {
  if (!isUserOf(userId, origin)) throw HearthError.forbidden(`${what} ${String(userId)} is not a user of ${origin}`);
  return userId;
}

/**
 * The template of `userId`'s member event with `membership`, built against `head` without
 * advancing it; throws what the auth rules say now. Runs in the room's queue, after the keys the
 * decision reads were loaded.
 */
function templateOn(head: RoomHead, userId: string, membership: RemoteMembership, now: number, serverName: string): JsonObject {
  const content: JsonObject = { membership };
  // A restricted room: one of our users vouches (the caller checked the allowed rooms).
  if (membership === 'join' && needsVoucher(head)(userId)) {
    const voucher = voucherOn(head, serverName);
    if (voucher === undefined) throw new HearthError(400, 'M_UNABLE_TO_AUTHORISE_JOIN', 'No user of this server in the room can invite');
    content['join_authorised_via_users_server'] = voucher;
  }
  return memberTemplate(head, userId, userId, content, now);
}

/**
 * `sender`'s member event about `target` with `content`, built against `head` as a local event
 * would be (the extremities, one past the deepest, auth events from the current state) without
 * advancing it, neither hashed nor signed; 403 when the auth rules deny it now. Runs in the room's
 * queue, after the keys the decision reads were loaded.
 */
export function memberTemplate(head: RoomHead, sender: string, target: string, content: JsonObject, now: number): JsonObject {
  const version = head.version;
  const subject = { type: 'm.room.member', sender, state_key: target, content };
  const prevRefs = head.citedExtremities();
  let depth = 0;
  for (const r of prevRefs) if (r.depth > depth) depth = r.depth;
  depth += 1;
  const authRefs: EventRef[] = [];
  for (const key of authTypesForEvent(subject, version)) {
    const ref = head.stateRefs.get(key);
    if (ref !== undefined) authRefs.push(ref);
  }
  const template: JsonObject = {
    room_id: head.roomId,
    sender,
    type: 'm.room.member',
    state_key: target,
    content,
    origin_server_ts: now,
    depth,
    prev_events: refsFor(head, prevRefs) as JsonObject['prev_events'],
    auth_events: refsFor(head, authRefs) as JsonObject['auth_events'],
  };
  // The rules as they stand now; the signed event is checked again when it is received.
  const auth = checkEventAuth(
    {
      ...subject,
      event_id: `$template:${head.roomId}`,
      room_id: head.roomId,
      origin_server_ts: now,
      depth,
      prev_events: prevRefs.map((r) => r.eventId),
      auth_events: authRefs.map((r) => r.eventId),
    },
    head.state,
    version,
  );
  if (!auth.allowed) throw HearthError.forbidden(auth.reason);
  return template;
}

/**
 * GET /make_join, /make_leave, /make_knock. Steps: 1. the user is of the origin (403); 2. the
 * room is known (404); 3. for a join or knock, its version is one the origin supports (and, for a
 * knock, one with knocking) (400 M_INCOMPATIBLE_ROOM_VERSION); 4. the server ACL admits the origin
 * (403); 5. this server is in the room (403, as the reference server: it could not vouch for the
 * room otherwise); 6. a join to a restricted room: the user is in an allowed room (403; 400
 * M_UNABLE_TO_AUTHORISE_JOIN when this server cannot tell); 7. the template, built and authorized
 * in the room's queue (with a voucher of this server's for a restricted join).
 */
export async function makeMembershipForServer(
  core: RoomCore,
  origin: string,
  roomId: string,
  userId: string,
  membership: RemoteMembership,
  supportedVersions: readonly string[] | undefined,
): Promise<MembershipTemplate> {
  // 1.
  requireUserOf(origin, userId, 'User');
  // 2.
  const found = await core.head(roomId);
  const version = found.version.id;
  // 3.
  if (membership !== 'leave') {
    const supported = supportedVersions === undefined || supportedVersions.length === 0 ? DEFAULT_SUPPORTED_VERSIONS : supportedVersions;
    if (!supported.includes(version)) {
      throw new HearthError(400, 'M_INCOMPATIBLE_ROOM_VERSION', `Your server does not support the room's version ${version}`, { room_version: version });
    }
    if (membership === 'knock' && !found.version.knockJoinRule) {
      throw new HearthError(400, 'M_INCOMPATIBLE_ROOM_VERSION', `Room version ${version} does not support knocking`, { room_version: version });
    }
  }
  // 4.
  if (!(await serverAclAllows(core, origin, roomId))) throw HearthError.forbidden(`Server ${origin} is denied by the server ACL of room ${roomId}`);
  // 5.
  if (found.roomNid === undefined || !(await serverJoinedNow(core.db, found.roomNid, core.serverName))) {
    throw HearthError.forbidden(`This server is not in room ${roomId}`);
  }
  // 6. A restricted room: the user must be in an allowed room, as far as this server knows.
  if (membership === 'join') await requireAllowed(core, roomId, userId);
  // 7. In the queue: the head the template cites is the one its checks read.
  const event = await core.queue.run(roomId, async () => {
    const head = await core.head(roomId);
    const subject = { type: 'm.room.member', sender: userId, state_key: userId, content: { membership } };
    await head.load(keysToDecide(subject, head.version));
    return templateOn(head, userId, membership, core.now(), core.serverName);
  });
  return { room_version: version, event };
}

/** What sending a signed member event needs beside the core. */
export interface SendMembershipDeps {
  readonly core: RoomCore;
  readonly serving: ServingDeps;
  /** The receiving pipeline (RoomService.receive). */
  receive(origin: string, pdus: readonly unknown[]): Promise<ReceiveOutcome[]>;
}

function stringField(o: JsonObject, name: string): string | undefined {
  const v = o[name];
  return typeof v === 'string' ? v : undefined;
}

/**
 * PUT /send_join, /send_leave, /send_knock. Steps: 1. the room is known (404); 2. the path's
 * event id is the event's (400 M_BAD_JSON); 3. the event is the member event asked for: this
 * room, m.room.member, the membership, state_key = sender (400 M_INVALID_PARAM, the spec's
 * advice); 4. the sender is of the origin (403); 5. the ACL admits the origin (403); 6. a join
 * vouched for by a user of this server is checked again and countersigned; received like any PDU:
 * signatures, hashes, auth; anything but accepted onto the timeline is 403 with the reason (an
 * event stored already is answered again); 7. for a join, the state before it and its auth chain
 * (and the join as stored); for a knock, the room's stripped state.
 */
export async function sendMembershipForServer(
  deps: SendMembershipDeps,
  origin: string,
  roomId: string,
  eventId: string,
  pdu: unknown,
  membership: RemoteMembership,
): Promise<SendJoinResponse | SendKnockResponse | Record<string, never>> {
  const { core } = deps;
  // 1.
  const room = await core.reader.roomInfo(roomId);
  if (room === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
  if (!isJsonObject(pdu)) throw HearthError.badJson('The event must be a JSON object');
  // 2.
  let computed: string;
  try {
    computed = computeEventId(pdu, room.version);
  } catch (err) {
    throw HearthError.badJson(`The event has no id in this room's version: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (computed !== eventId) throw HearthError.badJson(`The event's id is ${computed}, not ${eventId}`);
  // 3.
  const invalid = (message: string) => new HearthError(400, 'M_INVALID_PARAM', message);
  if (pdu['room_id'] !== roomId) throw invalid(`The event is not of room ${roomId}`);
  if (pdu['type'] !== 'm.room.member') throw invalid('The event is not an m.room.member event');
  const content = pdu['content'];
  if (!isJsonObject(content) || content['membership'] !== membership) throw invalid(`The event's membership is not ${membership}`);
  const sender = stringField(pdu, 'sender');
  if (sender === undefined || stringField(pdu, 'state_key') !== sender) throw invalid("The event's state_key is not its sender");
  // 4.
  requireUserOf(origin, sender, 'Sender');
  // 5.
  if (!(await serverAclAllows(core, origin, roomId))) throw HearthError.forbidden(`Server ${origin} is denied by the server ACL of room ${roomId}`);
  // 6. A join this server vouches for: checked again, and signed by this server too (the auth
  // rules want the voucher's server's signature).
  let received: JsonObject = pdu;
  const voucher = membership === 'join' ? content['join_authorised_via_users_server'] : undefined;
  if (voucher !== undefined) {
    if (!isUserOf(voucher, core.serverName)) throw HearthError.forbidden(`The join is vouched for by ${String(voucher)}, not a user of this server`);
    await requireAllowed(core, roomId, sender);
    received = hashAndSignEvent(pdu as unknown as PduDraft, core.serverName, core.build.signingKey, room.version) as unknown as JsonObject;
  }
  const [outcome] = await deps.receive(origin, [received]);
  if (outcome === undefined || outcome.status !== 'timeline') {
    const why = outcome?.reason ?? outcome?.status ?? 'not received';
    throw HearthError.forbidden(`The ${membership} event was not accepted: ${why}`);
  }
  if (membership === 'leave') return {};
  if (membership === 'knock') {
    const head = await core.head(roomId);
    return { knock_room_state: await strippedNow(head) };
  }
  // 7.
  return joinAnswer(deps, room, origin, eventId);
}

/**
 * The state before the join and its auth chain (for-servers.ts serves them, the origin being in
 * the room now), plus what of the join's own auth chain the state's chain lacks: the spec's
 * auth_chain is "all events in the auth chain for the new join event, as well as those in the
 * auth chains for any events returned in state".
 */
async function joinAnswer(deps: SendMembershipDeps, room: RoomInfo, origin: string, eventId: string): Promise<SendJoinResponse> {
  const { core } = deps;
  const ids = await stateIdsForServer(deps.serving, origin, room.roomId, eventId);
  // Its auth events are in the state too, as a rule, but the chain lists them as well.
  const held = new Set(ids.auth_chain_ids);
  const ownChain = [...(await authChainIds(core.db, [eventId]))].filter((id) => !held.has(id));
  const [state, authChain, join] = await Promise.all([
    pdusOf(core, room, ids.pdu_ids),
    pdusOf(core, room, [...ids.auth_chain_ids, ...ownChain]),
    pdusOf(core, room, [eventId]),
  ]);
  const servers = new Set<string>();
  for (const e of state) {
    if (e.type !== 'm.room.member' || e.content['membership'] !== 'join' || e.state_key === undefined) continue;
    const user = tryParseUserId(e.state_key);
    if (user !== undefined) servers.add(serverNameOf(user));
  }
  return {
    state,
    auth_chain: authChain,
    ...(join[0] !== undefined ? { event: join[0] } : {}),
    members_omitted: false,
    servers_in_room: [...servers].sort(),
  };
}


/** The room's stripped state as it stands, for a knock's answer. */
async function strippedNow(head: RoomHead): Promise<JsonObject[]> {
  await head.load(STRIPPED_KEYS);
  return head.strippedState();
}

const STRIPPED_KEYS = ['m.room.create', 'm.room.join_rules', 'm.room.canonical_alias', 'm.room.avatar', 'm.room.name', 'm.room.encryption', 'm.room.topic'].map((t) =>
  stateKey(t, ''),
);

/** For a restricted room: 403 when this server knows the user is in no allowed room, 400 when it cannot tell. */
async function requireAllowed(core: RoomCore, roomId: string, userId: string): Promise<void> {
  const head = await core.head(roomId);
  await head.load([stateKey('m.room.join_rules', ''), stateKey('m.room.power_levels', '')]);
  if (!needsVoucher(head)(userId)) return;
  const verdict = await allowedByMembership(core, head.get('m.room.join_rules'), userId);
  if (verdict === 'denied') throw HearthError.forbidden(`${userId} is not in a room that the join rule of ${roomId} allows`);
  if (verdict === 'unknown') throw new HearthError(400, 'M_UNABLE_TO_AUTHORISE_JOIN', 'This server is in none of the rooms the join rule allows');
}
