// Creating a room (client API, POST /createRoom): the spec's event sequence, with the presets and
// default power levels deployed servers use. Every event is built on a fresh head and the whole
// room is stored in one transaction, so a room that fails any check leaves nothing behind.

import { randomBytes } from 'node:crypto';
import { HearthError } from '../../protocol/errors.js';
import { parseRoomAlias, parseUserId } from '../../protocol/ids.js';
import type { JsonObject } from '../../protocol/json.js';
import { getRoomVersion, type RoomVersion } from '../../protocol/room-versions.js';
import { aliasRow, insertAlias } from '../../storage/rooms/aliases.js';
import { insertRoom } from '../../storage/rooms/rooms.js';
import { buildEvent, type EventDraft } from '../builder.js';
import type { PersistEvent } from '../persist-event.js';
import type { RoomCore } from '../core.js';
import { RoomHead } from '../head.js';
import type { Actor } from '../actor.js';
import { memberContent } from './member-event.js';
import { checkStateContent, checkVersionedStateContent } from './send.js';

export type RoomPreset = 'private_chat' | 'public_chat' | 'trusted_private_chat';

export interface InitialStateEvent {
  readonly type: string;
  readonly stateKey: string;
  readonly content: JsonObject;
}

/** A /createRoom request, its shape already checked. */
export interface CreateRoomRequest {
  readonly visibility?: 'public' | 'private';
  readonly roomAliasName?: string;
  readonly name?: string;
  readonly topic?: string;
  readonly invite?: readonly string[];
  readonly roomVersion?: string;
  readonly creationContent?: JsonObject;
  readonly initialState?: readonly InitialStateEvent[];
  readonly preset?: RoomPreset;
  readonly isDirect?: boolean;
  readonly powerLevelContentOverride?: JsonObject;
}

interface PresetConfig {
  readonly joinRule: string;
  readonly historyVisibility: string;
  readonly guestCanJoin: boolean;
  readonly inviteesAreAdmins: boolean;
  readonly powerLevelOverride: JsonObject;
}

const PRESETS: Record<RoomPreset, PresetConfig> = {
  private_chat: { joinRule: 'invite', historyVisibility: 'shared', guestCanJoin: true, inviteesAreAdmins: false, powerLevelOverride: { invite: 0 } },
  trusted_private_chat: { joinRule: 'invite', historyVisibility: 'shared', guestCanJoin: true, inviteesAreAdmins: true, powerLevelOverride: { invite: 0 } },
  public_chat: { joinRule: 'public', historyVisibility: 'shared', guestCanJoin: false, inviteesAreAdmins: false, powerLevelOverride: {} },
};

const ROOM_ID_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

function randomRoomLocalpart(): string {
  const bytes = randomBytes(18);
  let out = '';
  for (const b of bytes) out += ROOM_ID_CHARS[b % ROOM_ID_CHARS.length];
  return out;
}

function defaultPowerLevels(creator: string, invitees: readonly string[], preset: PresetConfig, version: RoomVersion): JsonObject {
  // v12: creators (here the creator and, for a trusted chat, the invitees) are never listed.
  const users: JsonObject = version.privilegedCreators ? {} : { [creator]: 100 };
  if (preset.inviteesAreAdmins && !version.privilegedCreators) for (const u of invitees) users[u] = 100;
  return {
    users,
    users_default: 0,
    events: {
      'm.room.name': 50,
      'm.room.power_levels': 100,
      'm.room.history_visibility': 100,
      'm.room.canonical_alias': 50,
      'm.room.avatar': 50,
      // v12: above state_default explicitly (the spec's example is 150).
      'm.room.tombstone': version.privilegedCreators ? 150 : 100,
      'm.room.server_acl': 100,
      'm.room.encryption': 100,
    },
    events_default: 0,
    state_default: 50,
    ban: 50,
    kick: 50,
    redact: 50,
    invite: 50,
    historical: 100,
    ...preset.powerLevelOverride,
  };
}

export async function createRoom(core: RoomCore, actor: Actor, request: CreateRoomRequest, defaultVersion: string): Promise<{ roomId: string }> {
  const versionId = request.roomVersion ?? defaultVersion;
  const version = getRoomVersion(versionId);
  if (version === undefined) throw new HearthError(400, 'M_UNSUPPORTED_ROOM_VERSION', `Room version ${versionId} is not supported`);

  let alias: string | undefined;
  if (request.roomAliasName !== undefined) {
    if (/[:\s]/.test(request.roomAliasName) || request.roomAliasName === '') {
      throw HearthError.invalidParam('Invalid characters in room alias');
    }
    alias = parseRoomAlias(`#${request.roomAliasName}:${core.serverName}`);
    const taken = (await aliasRow(core.db, alias)) !== undefined;
    // Checked and reserved in one turn, so that two creations cannot both take the alias.
    if (taken || core.reservedAliases.has(alias)) throw new HearthError(400, 'M_ROOM_IN_USE', 'Room alias already taken');
    core.reservedAliases.add(alias);
  }
  try {
    return await buildAndWriteRoom(core, actor, request, version, alias);
  } finally {
    if (alias !== undefined) core.reservedAliases.delete(alias);
  }
}

async function buildAndWriteRoom(
  core: RoomCore,
  actor: Actor,
  request: CreateRoomRequest,
  version: RoomVersion,
  alias: string | undefined,
): Promise<{ roomId: string }> {
  const invitees: string[] = [];
  for (const u of request.invite ?? []) {
    const userId = parseUserId(u);
    if (userId !== actor.userId && !invitees.includes(userId)) invitees.push(userId);
  }
  const preset = PRESETS[request.preset ?? (request.visibility === 'public' ? 'public_chat' : 'private_chat')];

  // A v12 room's id is its create event's, known once that is built.
  const provisionalRoomId = version.createEventRoomId ? '' : `!${randomRoomLocalpart()}:${core.serverName}`;
  const creator = actor.userId;
  const drafts: EventDraft[] = [];
  const state = (type: string, content: JsonObject, stateKey = ''): void => {
    drafts.push({ type, sender: creator, stateKey, content });
  };

  // 1. m.room.create; the server sets creator (before v11) and room_version.
  const createContent: JsonObject = { ...request.creationContent, room_version: version.id };
  if (version.implicitRoomCreator) delete createContent.creator;
  else createContent.creator = creator;
  if (version.privilegedCreators) {
    // A trusted private chat makes its invitees creators too (client API, createRoom).
    const listed = createContent.additional_creators;
    const more = new Set<string>();
    if (Array.isArray(listed)) {
      for (const u of listed) {
        if (typeof u !== 'string') throw HearthError.invalidParam('creation_content.additional_creators must be a list of user IDs');
        more.add(parseUserId(u));
      }
    } else if (listed !== undefined) throw HearthError.invalidParam('creation_content.additional_creators must be a list of user IDs');
    if (preset.inviteesAreAdmins) for (const u of invitees) more.add(u);
    more.delete(creator);
    if (more.size > 0) createContent.additional_creators = [...more];
    else delete createContent.additional_creators;
  }
  state('m.room.create', createContent);
  // 2. The creator joins.
  state('m.room.member', await memberContent(core, creator, 'join'), creator);
  // 3. Power levels: from initial_state when given there, else the defaults with overrides.
  const initial = new Map<string, InitialStateEvent>();
  for (const e of request.initialState ?? []) initial.set(JSON.stringify([e.type, e.stateKey]), e);
  const initialPl = initial.get(JSON.stringify(['m.room.power_levels', '']));
  if (initialPl !== undefined) {
    initial.delete(JSON.stringify(['m.room.power_levels', '']));
    state('m.room.power_levels', initialPl.content);
  } else {
    state('m.room.power_levels', { ...defaultPowerLevels(creator, invitees, preset, version), ...request.powerLevelContentOverride });
  }
  // 4. The canonical alias.
  if (alias !== undefined) state('m.room.canonical_alias', { alias });
  // 5. The preset's events, unless initial_state sets them.
  const inInitial = (type: string) => initial.has(JSON.stringify([type, '']));
  if (!inInitial('m.room.join_rules')) state('m.room.join_rules', { join_rule: preset.joinRule });
  if (!inInitial('m.room.history_visibility')) state('m.room.history_visibility', { history_visibility: preset.historyVisibility });
  if (preset.guestCanJoin && !inInitial('m.room.guest_access')) state('m.room.guest_access', { guest_access: 'can_join' });
  // 6. initial_state, in order.
  for (const e of initial.values()) state(e.type, e.content, e.stateKey);
  // 7. Name and topic.
  if (request.name !== undefined) state('m.room.name', { name: request.name });
  if (request.topic !== undefined) {
    state('m.room.topic', { topic: request.topic, 'm.topic': { 'm.text': [{ body: request.topic, mimetype: 'text/plain' }] } });
  }
  // 8. Invites.
  const inviteContents = await Promise.all(
    invitees.map((u) => memberContent(core, u, 'invite', request.isDirect === true ? { isDirect: true } : {})),
  );

  // Content the client wrote is checked as a state PUT would check it, before the auth rules.
  for (const d of drafts) {
    if (d.stateKey === undefined) continue;
    checkStateContent(d.type, d.content);
    checkVersionedStateContent(d.type, d.stateKey, d.content, version);
  }

  const head = new RoomHead(provisionalRoomId, version, core.maxLoadedState);
  const built: PersistEvent[] = [];
  try {
    for (const d of drafts) built.push(buildEvent(head, d, core.build));
    invitees.forEach((u, i) => {
      const inviter = head.get('m.room.member', creator);
      const unsigned = { invite_room_state: head.strippedState(inviter === undefined ? [] : [inviter]) };
      built.push(buildEvent(head, { type: 'm.room.member', sender: creator, stateKey: u, content: inviteContents[i]!, unsigned }, core.build));
    });
  } catch (err) {
    if (err instanceof HearthError && err.errcode === 'M_FORBIDDEN') {
      throw new HearthError(400, 'M_INVALID_ROOM_STATE', `The room's initial state is not allowed: ${err.message}`);
    }
    throw err;
  }

  const roomId = head.roomId;
  await core.writeNewRoom(head, built, async (trx) => {
      head.roomNid = await insertRoom(trx, {
        roomId,
        version: version.id,
        creator,
        createdTs: core.now(),
        isPublic: request.visibility === 'public',
      });
    if (alias !== undefined && !(await insertAlias(trx, { alias, roomId, creator, createdTs: core.now() }))) {
      throw new HearthError(400, 'M_ROOM_IN_USE', 'Room alias already taken');
    }
  });
  return { roomId };
}
