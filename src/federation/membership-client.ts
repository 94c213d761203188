// The room server's RemoteMembershipPort and RemoteInvitePort over federation: make_join,
// send_join, make_leave and send_leave asked of a resident server, invites of the invitee's. A refusal keeps the resident's status and errcode (a client is told it is not
// invited, as the resident said); a server that cannot be reached, or answers with something
// else, is a 502 that names it and nothing more.

import { HearthError } from '../protocol/errors.js';
import type { Pdu } from '../protocol/events.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import type { RemoteInvitePort } from '../rooms/perform/remote-invite.js';
import type { RemoteMembershipPort } from '../rooms/perform/remote-join.js';
import type { FederationRequest, FederationResponse } from './client.js';

type Client = { request(req: FederationRequest): Promise<FederationResponse> };

const enc = encodeURIComponent;
/** A person waits on a join; a big room's send_join answer takes a while to build and send. */
const MAKE_TIMEOUT_MS = 15_000;
const SEND_TIMEOUT_MS = 120_000;

export class FederationMembership implements RemoteMembershipPort, RemoteInvitePort {
  constructor(private readonly client: Client) {}

  makeJoin(destination: string, roomId: string, userId: string, versions: readonly string[]) {
    return this.template(destination, 'make_join', roomId, userId, versions);
  }

  async sendJoin(destination: string, roomId: string, eventId: string, pdu: Pdu) {
    const request = (v: 'v1' | 'v2'): FederationRequest => ({
      destination,
      method: 'PUT',
      path: `/federation/${v}/send_join/${enc(roomId)}/${enc(eventId)}`,
      body: pdu as unknown as JsonValue,
      timeoutMs: SEND_TIMEOUT_MS,
    });
    let body: Record<string, unknown>;
    try {
      body = await this.call(destination, 'send_join', request('v2'));
    } catch (err) {
      // A server without v2 answers 404 M_UNRECOGNIZED; v1 wraps the same answer as [200, body].
      if (!(err instanceof HearthError && err.status === 404 && err.errcode === 'M_UNRECOGNIZED')) throw err;
      const wrapped = await this.raw(destination, 'send_join', request('v1'));
      const inner = Array.isArray(wrapped) ? wrapped[1] : undefined;
      if (!isJsonObject(inner)) throw new HearthError(502, 'M_UNKNOWN', `${destination} answered send_join with something else`);
      body = inner;
    }
    const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
    return { state: list(body['state']), authChain: list(body['auth_chain']), ...(body['event'] !== undefined ? { event: body['event'] } : {}) };
  }

  makeKnock(destination: string, roomId: string, userId: string, versions: readonly string[]) {
    return this.template(destination, 'make_knock', roomId, userId, versions);
  }

  async sendKnock(destination: string, roomId: string, eventId: string, pdu: Pdu) {
    const body = await this.call(destination, 'send_knock', {
      destination,
      method: 'PUT',
      path: `/federation/v1/send_knock/${enc(roomId)}/${enc(eventId)}`,
      body: pdu as unknown as JsonValue,
      timeoutMs: MAKE_TIMEOUT_MS,
    });
    const state = body['knock_room_state'];
    return { knockRoomState: Array.isArray(state) ? state.filter(isJsonObject) : [] };
  }

  makeLeave(destination: string, roomId: string, userId: string) {
    return this.template(destination, 'make_leave', roomId, userId, undefined);
  }

  async sendLeave(destination: string, roomId: string, eventId: string, pdu: Pdu): Promise<void> {
    const request = (v: 'v1' | 'v2'): FederationRequest => ({
      destination,
      method: 'PUT',
      path: `/federation/${v}/send_leave/${enc(roomId)}/${enc(eventId)}`,
      body: pdu as unknown as JsonValue,
      timeoutMs: MAKE_TIMEOUT_MS,
    });
    try {
      await this.raw(destination, 'send_leave', request('v2'));
    } catch (err) {
      if (!(err instanceof HearthError && err.status === 404 && err.errcode === 'M_UNRECOGNIZED')) throw err;
      await this.raw(destination, 'send_leave', request('v1'));
    }
  }

  /** PUT /invite (v2; v1 where v2 is unknown): the invite countersigned by the invitee's server. */
  async invite(destination: string, roomId: string, eventId: string, pdu: Pdu, version: string, strippedState: JsonObject[]): Promise<unknown> {
    const path = (v: 'v1' | 'v2') => `/federation/${v}/invite/${enc(roomId)}/${enc(eventId)}`;
    let answer: unknown;
    try {
      answer = await this.raw(destination, 'the invite', {
        destination,
        method: 'PUT',
        path: path('v2'),
        body: { event: pdu as unknown as JsonValue, room_version: version, invite_room_state: strippedState },
        timeoutMs: MAKE_TIMEOUT_MS,
      });
    } catch (err) {
      if (!(err instanceof HearthError && err.status === 404 && err.errcode === 'M_UNRECOGNIZED')) throw err;
      const unsigned = { ...(isJsonObject(pdu.unsigned) ? pdu.unsigned : {}), invite_room_state: strippedState };
      const wrapped = await this.raw(destination, 'the invite', { destination, method: 'PUT', path: path('v1'), body: { ...(pdu as unknown as JsonObject), unsigned }, timeoutMs: MAKE_TIMEOUT_MS });
      answer = Array.isArray(wrapped) ? wrapped[1] : undefined;
    }
    const event = isJsonObject(answer) ? answer['event'] : undefined;
    if (!isJsonObject(event)) throw new HearthError(502, 'M_UNKNOWN', `${destination} answered the invite without the event`);
    return event;
  }

  /** GET /make_join, /make_knock or /make_leave: the room's version (1 when unnamed) and the template. */
  private async template(destination: string, what: 'make_join' | 'make_knock' | 'make_leave', roomId: string, userId: string, versions: readonly string[] | undefined) {
    const body = await this.call(destination, what, {
      destination,
      method: 'GET',
      path: `/federation/v1/${what}/${enc(roomId)}/${enc(userId)}`,
      ...(versions !== undefined ? { query: { ver: [...versions] } } : {}),
      timeoutMs: MAKE_TIMEOUT_MS,
    });
    const event = body['event'];
    const roomVersion = body['room_version'] ?? '1';
    if (!isJsonObject(event) || typeof roomVersion !== 'string') throw new HearthError(502, 'M_UNKNOWN', `${destination} answered ${what} without a template`);
    return { roomVersion, event };
  }

  private async call(destination: string, what: string, req: FederationRequest): Promise<Record<string, unknown>> {
    const body = await this.raw(destination, what, req);
    if (!isJsonObject(body)) throw new HearthError(502, 'M_UNKNOWN', `${destination} answered ${what} with something else`);
    return body;
  }

  private async raw(destination: string, what: string, req: FederationRequest): Promise<unknown> {
    let res: FederationResponse;
    try {
      res = await this.client.request(req);
    } catch {
      throw new HearthError(502, 'M_UNKNOWN', `Could not reach ${destination} for ${what}`);
    }
    if (res.status === 200) return res.body;
    const err = isJsonObject(res.body) ? res.body : {};
    const errcode = typeof err['errcode'] === 'string' ? err['errcode'] : undefined;
    if (res.status >= 400 && res.status < 500 && errcode !== undefined) {
      const message = typeof err['error'] === 'string' ? err['error'] : errcode;
      const extra = typeof err['room_version'] === 'string' ? { room_version: err['room_version'] } : {};
      throw new HearthError(res.status, errcode, `${destination} refused ${what}: ${message}`, extra);
    }
    throw new HearthError(502, 'M_UNKNOWN', `${destination} did not answer ${what} (${res.status})`);
  }
}
