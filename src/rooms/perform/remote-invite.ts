// Invites across servers (server-server API, "Inviting to a room").
// Out: a local user invites another server's user. The invite is built against the room's head
// (without advancing it) and authorized as a local event would be, signed here, sent to the
// invitee's server (PUT /invite), and what comes back, countersigned, is received like any PDU.
// In: another server invites a user of ours. The invite is checked (its id, what it is, who sent
// it, its signatures), countersigned and stored. In a room this server is in it is received like
// any PDU; in one it is not in, it is stored out of band: the room's only known state is the
// invitee's membership (with the stripped state the inviter gave for the invitee's sync) until
// the invitee joins through a server that is in the room or rejects the invite.

import { HearthError } from '../../protocol/errors.js';
import { referenceIds, stateKey, type Pdu } from '../../protocol/events.js';
import { computeEventId, hashAndSignEvent, hashAndSignEventWithId, type PduDraft } from '../../protocol/hashes.js';
import { isUserOf, parseRoomId, serverNameOf, tryParseUserId } from '../../protocol/ids.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../../protocol/json.js';
import { getRoomVersion, type RoomVersion } from '../../protocol/room-versions.js';
import { eventIdField, refsFor, signOnTemplate } from '../builder.js';
import type { RoomCore } from '../core.js';
import { keysToDecide, type RoomHead } from '../head.js';
import type { KeyRing } from '../input/key-ring.js';
import { checkReceivedPdus } from '../input/pdu-checks.js';
import { candidateOf, type ReceiveOutcome } from '../input/receive.js';
import type { PersistEvent } from '../persist-event.js';
import type { RemoteMembershipPort } from './remote-join.js';
import { memberTemplate } from './remote-membership.js';
import { serverAclAllows } from '../query/for-servers.js';

/** What inviting across servers asks of other servers (federation implements it). */
export interface RemoteInvitePort {
  /** PUT /invite (v2, v1 where v2 is unknown): the invite countersigned by the invitee's server. */
  invite(destination: string, roomId: string, eventId: string, pdu: Pdu, version: string, strippedState: JsonObject[]): Promise<unknown>;
}

/** The receiving pipeline (RoomService.receive). */
export type Receive = (origin: string, pdus: readonly unknown[]) => Promise<ReceiveOutcome[]>;

/** Whether the head is a room this server holds only an out-of-band membership of (no create event). */
export function isOutOfBand(head: RoomHead): boolean {
  return !head.stateRefs.has(stateKey('m.room.create', ''));
}

/**
 * Sends `inviter`'s invite of `invitee` (another server's user) to the invitee's server, then
 * receives it countersigned. Throws what the auth rules say, or what the invitee's server said.
 */
export async function inviteRemoteUser(
  core: RoomCore,
  port: RemoteInvitePort,
  receive: Receive,
  roomId: string,
  inviter: string,
  invitee: string,
  content: JsonObject,
): Promise<void> {
  const head = await core.head(roomId);
  const version = head.version;
  const built = await core.queue.run(roomId, async () => {
    const h = await core.head(roomId);
    const subject = { type: 'm.room.member', sender: inviter, state_key: invitee, content };
    await h.load([...keysToDecide(subject, version), stateKey('m.room.member', inviter)]);
    const template = memberTemplate(h, inviter, invitee, content, core.now());
    const draft = { ...eventIdField(version, core.serverName), ...template } as unknown as PduDraft;
    const signed = hashAndSignEventWithId(draft, core.serverName, core.build.signingKey, version);
    const member = h.get('m.room.member', inviter);
    return { signed, stripped: h.strippedState(member === undefined ? [] : [member]) };
  });
  const destination = serverNameOf(tryParseUserId(invitee)!);
  const returned = await port.invite(destination, roomId, built.signed.eventId, built.signed.pdu, version.id, built.stripped);
  let sameEvent = false;
  try {
    sameEvent = isJsonObject(returned) && computeEventId(returned, version) === built.signed.eventId;
  } catch {
    sameEvent = false;
  }
  if (!sameEvent) throw new HearthError(502, 'M_UNKNOWN', `${destination} answered the invite with another event`);
  const [outcome] = await receive(core.serverName, [returned]);
  if (outcome?.status !== 'timeline') throw HearthError.forbidden(`The invite was not accepted: ${outcome?.reason ?? outcome?.status ?? 'not received'}`);
}

/** PUT /invite from another server: its body (v2, or v1's bare event) and what is answered. */
export interface InviteFromServer {
  readonly event: unknown;
  /** v2 names it; v1 does not (the room's version here, or 1). */
  readonly roomVersion?: unknown;
  readonly strippedState?: unknown;
}

/**
 * Steps: 1. the room's version is one this server supports (400 M_INCOMPATIBLE_ROOM_VERSION);
 * 2. the event's id is the path's (400 M_BAD_JSON) and it is of the room (400); 3. it is an
 * invite of a user of this server (400/403) sent by a user of `origin` (403); 4. the room's ACL
 * admits `origin` when the room is known (403); 5. its signatures and hash (403); 6.
 * countersigned and stored: received like any PDU in a room this server is in, else out of band.
 * Returns the countersigned event.
 */
export async function inviteFromServer(
  core: RoomCore,
  keyRing: KeyRing,
  receive: Receive,
  origin: string,
  roomId: string,
  eventId: string,
  body: InviteFromServer,
): Promise<Pdu> {
  // 1.
  const known = await core.findHead(roomId);
  const versionId = body.roomVersion ?? known?.version.id ?? '1';
  const version = typeof versionId === 'string' ? getRoomVersion(versionId) : undefined;
  if (version === undefined) throw new HearthError(400, 'M_INCOMPATIBLE_ROOM_VERSION', `This server does not support room version ${String(versionId)}`, { room_version: String(versionId) });
  const pdu = body.event;
  if (!isJsonObject(pdu)) throw HearthError.badJson('The invite must be a JSON object');
  // 2.
  let computed: string;
  try {
    computed = computeEventId(pdu, version);
  } catch (err) {
    throw HearthError.badJson(`The invite has no id in room version ${version.id}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (computed !== eventId) throw HearthError.badJson(`The invite's id is ${computed}, not ${eventId}`);
  if (pdu['room_id'] !== roomId) throw HearthError.invalidParam(`The invite is not of room ${roomId}`);
  // 3.
  const content = pdu['content'];
  if (pdu['type'] !== 'm.room.member' || !isJsonObject(content) || content['membership'] !== 'invite') throw HearthError.invalidParam('The event is not an invite');
  if (!isUserOf(pdu['state_key'], core.serverName)) throw HearthError.forbidden(`${String(pdu['state_key'])} is not a user of this server`);
  if (!isUserOf(pdu['sender'], origin)) throw HearthError.forbidden(`The inviter ${String(pdu['sender'])} is not a user of ${origin}`);
  // 4.
  if (known !== undefined && !isOutOfBand(known) && !(await serverAclAllows(core, origin, roomId))) {
    throw HearthError.forbidden(`Server ${origin} is denied by the server ACL of room ${roomId}`);
  }
  // 5.
  const [checked] = await checkReceivedPdus([{ json: pdu, version, options: { roomId } }], keyRing);
  if (checked === undefined || !checked.ok) throw HearthError.forbidden(`The invite does not pass the checks: ${checked?.ok === false ? checked.reason : 'unchecked'}`);
  // 6.
  const { unsigned: _unsigned, ...bare } = pdu;
  const countersigned = hashAndSignEvent(bare as unknown as PduDraft, core.serverName, core.build.signingKey, version);
  if (known !== undefined && !isOutOfBand(known)) {
    const [outcome] = await receive(origin, [countersigned]);
    if (outcome?.status === 'timeline' || outcome?.status === 'outlier') return countersigned;
    throw HearthError.forbidden(`The invite was not accepted: ${outcome?.reason ?? outcome?.status ?? 'not received'}`);
  }
  const stripped = Array.isArray(body.strippedState) ? body.strippedState.filter(isJsonObject) : [];
  await storeOutOfBand(core, keyRing, roomId, version, countersigned, { invite_room_state: stripped as JsonValue[] });
  return countersigned;
}

/**
 * Stores a membership of a local user in a room this server is not in: the room's known state
 * becomes that one event, on the timeline so that the user's sync shows it. The event is one the
 * caller checked (or made).
 */
export async function storeOutOfBand(core: RoomCore, keyRing: KeyRing, roomId: string, version: RoomVersion, pdu: Pdu, unsigned?: JsonObject): Promise<void> {
  const [checked] = await checkReceivedPdus([{ json: pdu, version, options: { roomId } }], keyRing);
  if (checked === undefined || !checked.ok) throw new HearthError(502, 'M_UNKNOWN', `The membership does not pass the checks: ${checked?.ok === false ? checked.reason : 'unchecked'}`);
  const held = await core.findHead(roomId);
  if (held !== undefined && !isOutOfBand(held)) throw new Error(`room ${roomId} is held here: its memberships are received, not stored out of band`);
  const room = held ?? (await core.newRemoteHead(roomId, version, pdu.sender, pdu.origin_server_ts));
  const c = candidateOf(checked, room);
  if ((await core.reader.event(c.ref.eventId)) !== undefined) return;
  const stored = await core.queue.run(roomId, () => {
    const key = stateKey(c.event.type, c.event.state_key!);
    const before = room.snapshot;
    const { change, snapshot } = room.applyState(key, c.event, c.ref);
    room.extremities = [c.ref];
    const unit: PersistEvent = {
      head: room,
      ref: c.ref,
      pdu: c.pdu,
      json: c.json,
      event: c.event,
      status: 'timeline',
      rejectionReason: undefined,
      position: 'stream',
      stateKey: key,
      snapshotBefore: before,
      snapshotAfter: snapshot,
      unsigned,
      txn: undefined,
      extremities: [c.ref],
      currentState: { changes: [change], snapshot, summary: room.summary() },
      redactionTarget: undefined,
      backward: { add: referenceIds(c.pdu.prev_events), remove: [] },
      streamOrdering: undefined,
    };
    return { written: core.writeOnNewHead(room, unit) };
  });
  await stored.written;
}

/**
 * Rejects `userId`'s out-of-band invite (or withdraws a knock): a leave made and sent through the inviter's server
 * (make_leave, send_leave) when it answers, else one made here on the invite alone (the inviter's
 * server learns of it when it can); either way stored out of band, so the invite is gone here.
 */
export async function rejectOutOfBand(
  core: RoomCore,
  keyRing: KeyRing,
  port: RemoteMembershipPort,
  roomId: string,
  userId: string,
  content: JsonObject,
): Promise<void> {
  const head = await core.head(roomId);
  const version = head.version;
  const key = stateKey('m.room.member', userId);
  const current = (await head.read([key])).get(key);
  const membership = current?.content['membership'];
  if (current === undefined || (membership !== 'invite' && membership !== 'knock')) throw HearthError.forbidden(`You are not invited to room ${roomId}`);
  const member = { roomId, userId, content: { ...content, membership: 'leave' } };
  let leave: Pdu | undefined;
  for (const server of await withdrawalServers(core, roomId, membership, current.sender, head.stateRefs.get(key)?.eventId)) {
    try {
      const made = await port.makeLeave(server, roomId, userId);
      const t = made.event;
      if (made.roomVersion === version.id && t['room_id'] === roomId && t['sender'] === userId && t['state_key'] === userId) {
        const signed = signOnTemplate(core.build, version, t, member);
        await port.sendLeave(server, roomId, signed.eventId, signed.pdu);
        leave = signed.pdu;
        break;
      }
    } catch {
      // The next server; failing all, rejected here alone, below.
    }
  }
  if (leave === undefined) {
    // On the invite (or knock) alone: it is the leave's only prev and auth event.
    const ref = head.stateRefs.get(key)!;
    const refs = refsFor({ version }, [ref]);
    leave = signOnTemplate(core.build, version, { depth: ref.depth + 1, prev_events: refs, auth_events: refs } as JsonObject, member).pdu;
  }
  await storeOutOfBand(core, keyRing, roomId, version, leave);
}

/** Servers asked at most, in turn, to take an invite's rejection or a knock's withdrawal. */
const MAX_WITHDRAWAL_SERVERS = 3;

/**
 * Where an out-of-band membership is withdrawn: an invite through the inviter's server; a knock
 * through the room id's server, then those of the senders of the room state the knock was
 * answered with, the create event's first (a v12 room id names no server).
 */
async function withdrawalServers(core: RoomCore, roomId: string, membership: 'invite' | 'knock', sender: string, eventId: string | undefined): Promise<string[]> {
  if (membership === 'invite') return [serverNameOf(tryParseUserId(sender)!)];
  const out = new Set<string>();
  const own = serverNameOf(parseRoomId(roomId));
  if (own !== undefined) out.add(own);
  const knock = eventId === undefined ? undefined : await core.reader.event(eventId);
  const stripped = knock?.unsigned?.['knock_room_state'];
  if (Array.isArray(stripped)) {
    const events = stripped.filter(isJsonObject);
    for (const e of [...events.filter((e) => e['type'] === 'm.room.create'), ...events]) {
      const user = typeof e['sender'] === 'string' ? tryParseUserId(e['sender']) : undefined;
      if (user !== undefined) out.add(serverNameOf(user));
    }
  }
  out.delete(core.serverName);
  return [...out].slice(0, MAX_WITHDRAWAL_SERVERS);
}

/** For a user invited out of band: the inviter's server, which is in the room. */
export async function inviterServerOf(head: RoomHead, userId: string): Promise<string | undefined> {
  if (!isOutOfBand(head)) return undefined;
  const key = stateKey('m.room.member', userId);
  const invite = (await head.read([key])).get(key);
  const inviter = invite?.content['membership'] === 'invite' ? tryParseUserId(invite.sender) : undefined;
  return inviter === undefined ? undefined : serverNameOf(inviter);
}
