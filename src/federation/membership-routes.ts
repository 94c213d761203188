// Joins and leaves through this server (server-server API, "Joining Rooms", "Leaving Rooms
// (Rejections)", "Inviting to a room"): make_join / send_join (v1, v2), make_leave / send_leave (v1,
// v2), make_knock / send_knock (v1), and invites of this server's users (v1, v2). The room
// server builds the templates and receives the signed events (rooms/perform/remote-membership.ts);
// these routes read the parameters and shape the answers: v1 send_* answers `[200, body]`, a
// leftover of the first protocol version.

import type { HttpRequest, RouteDef } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';
import type { RoomService } from '../rooms/service.js';

export interface MembershipRoutesDeps {
  readonly rooms: Pick<RoomService, 'makeMembershipForServer' | 'sendMembershipForServer' | 'inviteFromServer'>;
}

/** One member event of at most 64 KiB, with room to spare for the JSON around it. */
const MEMBER_EVENT_BODY_LIMIT = 100 * 1024;

/** The repeated `ver` query parameter; undefined when absent (the room server applies the default). */
function versions(req: HttpRequest): string[] | undefined {
  const ver = req.query['ver'];
  if (ver === undefined) return undefined;
  return typeof ver === 'string' ? [ver] : ver;
}

export function federationMembershipRoutes(deps: MembershipRoutesDeps): RouteDef[] {
  const { rooms } = deps;
  const make = (membership: 'join' | 'leave' | 'knock'): RouteDef => ({
    method: 'GET',
    api: 'federation',
    versions: ['v1'],
    path: `/make_${membership}/:roomId/:userId`,
    auth: 'server',
    handler: async (req) => ({
      body: await rooms.makeMembershipForServer(
        req.origin!,
        req.params['roomId']!,
        req.params['userId']!,
        membership,
        membership === 'leave' ? undefined : versions(req),
      ),
    }),
  });
  const send = (membership: 'join' | 'leave' | 'knock', version: 'v1' | 'v2'): RouteDef => ({
    method: 'PUT',
    api: 'federation',
    versions: [version],
    path: `/send_${membership}/:roomId/:eventId`,
    auth: 'server',
    bodyLimit: MEMBER_EVENT_BODY_LIMIT,
    // The PDU is kept as its JSON text, which keeps NUL in strings on every backend.
    allowNulInBodyStrings: true,
    handler: async (req) => {
      if (req.body === undefined || req.body === null) throw HearthError.badJson('The body must be the signed event');
      const answer = await rooms.sendMembershipForServer(req.origin!, req.params['roomId']!, req.params['eventId']!, req.body, membership);
      // send_knock has only v1, and it is not wrapped.
      return { body: version === 'v1' && membership !== 'knock' ? [200, answer] : answer };
    },
  });
  // PUT /invite: v2 wraps the event with the room's version and stripped state; v1 sends the bare
  // event (the stripped state in its unsigned) and is answered `[200, {event}]`.
  const invite = (version: 'v1' | 'v2'): RouteDef => ({
    method: 'PUT',
    api: 'federation',
    versions: [version],
    path: '/invite/:roomId/:eventId',
    auth: 'server',
    bodyLimit: MEMBER_EVENT_BODY_LIMIT,
    allowNulInBodyStrings: true,
    handler: async (req) => {
      const b = req.body;
      if (typeof b !== 'object' || b === null || Array.isArray(b)) throw HearthError.badJson('The body must be a JSON object');
      const fields = b as Record<string, unknown>;
      const unsigned = fields['unsigned'];
      const body =
        version === 'v2'
          ? { event: fields['event'], roomVersion: fields['room_version'], strippedState: fields['invite_room_state'] }
          : { event: fields, strippedState: typeof unsigned === 'object' && unsigned !== null ? (unsigned as Record<string, unknown>)['invite_room_state'] : undefined };
      const event = await rooms.inviteFromServer(req.origin!, req.params['roomId']!, req.params['eventId']!, body);
      return { body: version === 'v1' ? [200, { event }] : { event } };
    },
  });
  return [make('join'), send('join', 'v1'), send('join', 'v2'), make('leave'), send('leave', 'v1'), send('leave', 'v2'), make('knock'), send('knock', 'v1'), invite('v1'), invite('v2')];
}
