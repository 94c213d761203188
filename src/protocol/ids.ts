// Matrix identifiers as branded strings, made only by the parsers here. Each kind has
// `parseX` (throws HearthError 400), `isX` (type guard) and `tryParseX` (undefined when invalid).

export { type Branded, type ParseOptions, MAX_ID_BYTES } from './ids/common.js';
export {
  type ServerName,
  type ServerNameKind,
  type ServerNameParts,
  MAX_SERVER_NAME_LENGTH,
  isIpv4Literal,
  isIpv6Literal,
  isServerName,
  parseServerName,
  parseServerNameParts,
  tryParseServerName,
} from './ids/server-name.js';
export {
  type Localpart,
  type LocalpartOptions,
  type UserId,
  type UserIdOptions,
  isCompliantUserId,
  isLocalUserId,
  isUserId,
  isUserOf,
  parseLocalUserId,
  parseUserId,
  tryParseLocalUserId,
  tryParseUserId,
  userIdFrom,
  validateLocalpart,
} from './ids/user-id.js';
export {
  type RoomAlias,
  type RoomId,
  createEventIdOfRoom,
  isHashedRoomId,
  isRoomAlias,
  isRoomId,
  parseRoomAlias,
  parseRoomId,
  roomAliasFrom,
  roomIdFrom,
  roomIdOfCreateEvent,
  tryParseRoomAlias,
  tryParseRoomId,
} from './ids/room-ids.js';
export {
  type EventId,
  eventIdFromReferenceHash,
  isEventId,
  isEventIdForFormat,
  parseEventId,
  parseEventIdForFormat,
  tryParseEventId,
  tryParseEventIdForFormat,
} from './ids/event-id.js';
export {
  type MxcParts,
  type MxcUri,
  isMxcUri,
  mxcPartsOf,
  mxcUriFrom,
  parseMxcUri,
  tryParseMxcUri,
} from './ids/mxc.js';
export { type KeyId, type KeyIdParts, isKeyId, keyIdFrom, parseKeyId, tryParseKeyId } from './ids/key-id.js';
export { localpartOf, serverNameOf } from './ids/accessors.js';
