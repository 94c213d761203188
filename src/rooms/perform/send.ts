// Sending message and state events. A message sent with a transaction id is sent once per
// (sender, device, txnId); a state event that repeats the current one stores nothing. The auth
// rules (power levels included) decide what is allowed.

import { HearthError } from '../../protocol/errors.js';
import { parseRoomAlias, parseUserId, serverNameOf } from '../../protocol/ids.js';
import type { JsonObject } from '../../protocol/json.js';
import { clientPowerLevelsProblem } from '../../protocol/power-levels.js';
import type { RoomVersion } from '../../protocol/room-versions.js';
import { ANNOTATION, relationOf, THREAD, type Relation } from '../../protocol/relations.js';
import { aliasRow } from '../../storage/rooms/aliases.js';
import { annotationExists } from '../../storage/rooms/relations.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { removeGuests } from './guests.js';
import { redactEvent } from './redact.js';

export async function sendMessageEvent(
  core: RoomCore,
  actor: Actor,
  roomId: string,
  type: string,
  content: JsonObject,
  txnId?: string,
): Promise<string> {
  // A redaction sent as a message event (as v11 clients may) is a redaction.
  if (type === 'm.room.redaction') {
    if (typeof content.redacts !== 'string') throw HearthError.badJson('m.room.redaction needs "redacts": the event to redact');
    // The content may hold NUL (its text is kept as JSON), but this is looked up as an event ID.
    if (content.redacts.includes('\u0000')) throw HearthError.badJson('"redacts" must not contain NUL (U+0000)');
    const reason = typeof content.reason === 'string' ? content.reason : undefined;
    return redactEvent(core, actor, roomId, content.redacts, { ...(reason !== undefined ? { reason } : {}), ...(txnId !== undefined ? { txnId } : {}) });
  }
  const txn = txnId !== undefined && actor.deviceId !== null ? { deviceId: actor.deviceId, txnId } : undefined;
  const relation = relationOf(content);
  return core.send(
    roomId,
    () => ({ type, sender: actor.userId, content, ...(txn !== undefined ? { txn } : {}) }),
    txn === undefined ? undefined : { sender: actor.userId, ...txn },
    relation === undefined ? undefined : () => checkRelation(core, actor, type, relation),
  );
}

/**
 * What the reference server refuses of a new relation: the same reaction (key) twice from one
 * user, and a thread started from an event that itself relates to another.
 */
async function checkRelation(core: RoomCore, actor: Actor, type: string, relation: Relation): Promise<void> {
  if (relation.relType === ANNOTATION && relation.key !== undefined) {
    if (await annotationExists(core.db, relation.eventId, actor.userId, type, relation.key)) {
      throw new HearthError(400, 'M_DUPLICATE_ANNOTATION', "Can't send same reaction twice");
    }
  }
  if (relation.relType === THREAD) {
    const parent = await core.reader.event(relation.eventId);
    if (parent !== undefined && parent.redactedBy === undefined && relationOf(parent.pdu.content) !== undefined) {
      throw new HearthError(400, 'M_UNKNOWN', 'Cannot start threads from an event with a relation');
    }
  }
}

export async function sendStateEvent(
  core: RoomCore,
  actor: Actor,
  roomId: string,
  type: string,
  stateKey: string,
  content: JsonObject,
): Promise<string> {
  // A member event's state key names a user: refused as /invite refuses a bad user id.
  if (type === 'm.room.member') parseUserId(stateKey);
  checkStateContent(type, content);
  if (type === 'm.room.canonical_alias' && stateKey === '') await checkCanonicalAlias(core, roomId, content);
  const eventId = await core.send(roomId, (head) => {
    // Needs the room's version, so checked on its head (before the auth rules run).
    checkVersionedStateContent(type, stateKey, content, head.version);
    return { type, sender: actor.userId, stateKey, content };
  });
  if (type === 'm.room.guest_access' && stateKey === '' && content.guest_access !== 'can_join') await removeGuests(core, roomId);
  return eventId;
}

/** Fields of well-known state events that clients read as strings must be strings. */
const STRING_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'm.room.name': ['name'],
  'm.room.topic': ['topic'],
  'm.room.join_rules': ['join_rule'],
  'm.room.history_visibility': ['history_visibility'],
  'm.room.guest_access': ['guest_access'],
  'm.room.avatar': ['url'],
};

/** 400 M_BAD_JSON for state content a client sends that well-known fields make malformed. */
export function checkStateContent(type: string, content: JsonObject): void {
  for (const field of STRING_FIELDS[type] ?? []) {
    const v = content[field];
    if (v !== undefined && typeof v !== 'string') throw HearthError.badJson(`"${field}" of ${type} must be a string`);
  }
}

/** The checks of state content that depend on the room version: power levels' values. */
export function checkVersionedStateContent(type: string, stateKey: string, content: JsonObject, version: RoomVersion): void {
  if (type !== 'm.room.power_levels' || stateKey !== '') return;
  const problem = clientPowerLevelsProblem(content, version);
  if (problem !== undefined) throw HearthError.badJson(problem);
}

/** The aliases of an m.room.canonical_alias event must be valid, and this server's must point to the room. */
async function checkCanonicalAlias(core: RoomCore, roomId: string, content: JsonObject): Promise<void> {
  const aliases: string[] = [];
  if (content.alias !== undefined && content.alias !== null) {
    if (typeof content.alias !== 'string') throw HearthError.invalidParam('"alias" must be a string');
    aliases.push(content.alias);
  }
  if (content.alt_aliases !== undefined) {
    const alt = content.alt_aliases;
    if (!Array.isArray(alt) || !alt.every((a) => typeof a === 'string')) throw HearthError.invalidParam('"alt_aliases" must be a list of strings');
    aliases.push(...(alt as string[]));
  }
  for (const a of aliases) {
    const alias = parseRoomAlias(a);
    if (serverNameOf(alias) !== core.serverName) continue;
    const row = await aliasRow(core.db, alias);
    if (row?.room_id !== roomId) throw new HearthError(400, 'M_BAD_ALIAS', `Room alias ${alias} does not point to the room`);
  }
}
