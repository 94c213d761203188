// POST /createRoom.

import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { isJsonObject } from '../../protocol/json.js';
import type { CreateRoomRequest, InitialStateEvent, RoomPreset } from '../../rooms/perform/create.js';
import type { RoomService } from '../../rooms/service.js';
import { body, optionalArray, optionalBoolean, optionalObject, optionalString, optionalStringArray, requester } from './fields.js';

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

export function createRoomRoutes(deps: { rooms: RoomService }): RouteDef[] {
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/createRoom',
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
          throw new HearthError(400, 'M_UNSUPPORTED_ROOM_VERSION', 'room_version must be a string');
        }
        const request: CreateRoomRequest = {
          ...(visibility !== undefined ? { visibility } : {}),
          ...(preset !== undefined ? { preset: preset as RoomPreset } : {}),
          ...optional('roomAliasName', optionalString(b, 'room_alias_name')),
          ...optional('name', optionalString(b, 'name')),
          ...optional('topic', optionalString(b, 'topic')),
          ...optional('invite', optionalStringArray(b, 'invite')),
          ...optional('roomVersion', typeof roomVersion === 'string' ? roomVersion : undefined),
          ...optional('creationContent', optionalObject(b, 'creation_content')),
          ...optional('initialState', initialState(optionalArray(b, 'initial_state'))),
          ...optional('isDirect', optionalBoolean(b, 'is_direct')),
          ...optional('powerLevelContentOverride', optionalObject(b, 'power_level_content_override')),
        };
        const { roomId } = await deps.rooms.createRoom(requester(req), request);
        return { body: { room_id: roomId } };
      },
    },
  ];
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
