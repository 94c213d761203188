// POST /createRoom.

import { checkAliasClaim } from '../../appservice/claims.js';
import type { AppServices } from '../../appservice/namespaces.js';
import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../../protocol/json.js';
import type { CreateRoomRequest, InitialStateEvent, RoomPreset } from '../../rooms/perform/create.js';
import type { RoomService } from '../../rooms/service.js';
import { body, missing, optionalArray, optionalBoolean, optionalObject, optionalString, optionalStringArray, requester } from './fields.js';

const PRESETS: readonly string[] = ['private_chat', 'public_chat', 'trusted_private_chat'];

function initialState(items: unknown[] | undefined): InitialStateEvent[] | undefined {
  return items?.map((item, i) => {
    if (!isJsonObject(item)) throw HearthError.badJson(`initial_state[${i}] must be an object`);
    const type = item.type;
    const content = item.content;
    const stateKey = item.state_key ?? '';
    if (typeof type !== 'string' || type === '') throw HearthError.badJson(`initial_state[${i}].type must be a string`);
    if (!isJsonObject(content)) throw HearthError.badJson(`initial_state[${i}].content must be an object`);
    if (typeof stateKey !== 'string') throw HearthError.badJson(`initial_state[${i}].state_key must be a string`);
    return { type, stateKey, content };
  });
}

// id_access_token is left optional, as the spec lets servers treat it (r0.5 clients omit it).
const INVITE_3PID_FIELDS = ['id_server', 'medium', 'address'] as const;

/** invite_3pid as the spec's Invite3pid objects: a missing field M_MISSING_PARAM (as Synapse), a wrong type M_BAD_JSON. */
function checkInvite3pid(items: unknown[] | undefined): void {
  items?.forEach((item, i) => {
    if (!isJsonObject(item)) throw HearthError.badJson(`invite_3pid[${i}] must be an object`);
    for (const field of INVITE_3PID_FIELDS) {
      if (item[field] === undefined) throw missing(`invite_3pid[${i}].${field}`);
    }
    for (const field of [...INVITE_3PID_FIELDS, 'id_access_token']) {
      const v = item[field];
      if (v !== undefined && typeof v !== 'string') throw HearthError.badJson(`invite_3pid[${i}].${field} must be a string`);
    }
  });
}

/** The m.room.create fields a client may set, of the types the spec gives them. */
function checkCreationContent(content: JsonObject | undefined): JsonObject | undefined {
  if (content === undefined) return undefined;
  if (content.type !== undefined && typeof content.type !== 'string') throw HearthError.badJson('creation_content.type must be a string');
  const federate = content['m.federate'];
  if (federate !== undefined && typeof federate !== 'boolean') throw HearthError.badJson('creation_content.m.federate must be a boolean');
  const predecessor = content.predecessor;
  if (predecessor !== undefined) {
    if (!isJsonObject(predecessor)) throw HearthError.badJson('creation_content.predecessor must be an object');
    if (typeof predecessor.room_id !== 'string') throw HearthError.badJson('creation_content.predecessor.room_id must be a string');
    if (predecessor.event_id !== undefined && typeof predecessor.event_id !== 'string') {
      throw HearthError.badJson('creation_content.predecessor.event_id must be a string');
    }
  }
  return content;
}

export function createRoomRoutes(deps: { rooms: RoomService; appServices?: AppServices }): RouteDef[] {
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/createRoom',
      rateLimit: 'room_creation',
      handler: async (req) => {
        const b = body(req);
        const visibility = optionalString(b, 'visibility');
        if (visibility !== undefined && visibility !== 'public' && visibility !== 'private') {
          throw HearthError.invalidParam('visibility must be "public" or "private"');
        }
        const preset = optionalString(b, 'preset');
        if (preset !== undefined && !PRESETS.includes(preset)) throw HearthError.invalidParam(`Unknown preset ${preset}`);
        const roomVersion = b.room_version;
        if (roomVersion !== undefined && roomVersion !== null && typeof roomVersion !== 'string') {
          throw HearthError.badJson('room_version must be a string');
        }
        // Accepted in shape only: no identity server is consulted, so no 3PID invite is sent.
        checkInvite3pid(optionalArray(b, 'invite_3pid'));
        const request: CreateRoomRequest = {
          ...(visibility !== undefined ? { visibility } : {}),
          ...(preset !== undefined ? { preset: preset as RoomPreset } : {}),
          ...optional('roomAliasName', optionalString(b, 'room_alias_name')),
          ...optional('name', optionalString(b, 'name')),
          ...optional('topic', optionalString(b, 'topic')),
          ...optional('invite', optionalStringArray(b, 'invite')),
          ...optional('roomVersion', typeof roomVersion === 'string' ? roomVersion : undefined),
          ...optional('creationContent', checkCreationContent(optionalObject(b, 'creation_content'))),
          ...optional('initialState', initialState(optionalArray(b, 'initial_state'))),
          ...optional('isDirect', optionalBoolean(b, 'is_direct')),
          ...optional('powerLevelContentOverride', optionalObject(b, 'power_level_content_override')),
        };
        const services = deps.appServices;
        if (request.roomAliasName !== undefined && services !== undefined) {
          checkAliasClaim(services, requester(req).appserviceId, `#${request.roomAliasName}:${services.serverName}`);
        }
        const { roomId } = await deps.rooms.createRoom(requester(req), request);
        return { body: { room_id: roomId } };
      },
    },
  ];
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
