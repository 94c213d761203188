// The room server's RemoteMembershipPort over federation: make_join and send_join asked of a
// resident server. A refusal keeps the resident's status and errcode (a client is told it is not
// invited, as the resident said); a server that cannot be reached, or answers with something
// else, is a 502 that names it and nothing more.

import { HearthError } from '../protocol/errors.js';
import type { Pdu } from '../protocol/events.js';
import { isJsonObject, type JsonValue } from '../protocol/json.js';
import type { RemoteMembershipPort } from '../rooms/perform/remote-join.js';
import type { FederationRequest, FederationResponse } from './client.js';

type Client = { request(req: FederationRequest): Promise<FederationResponse> };

const enc = encodeURIComponent;
/** A person waits on a join; a big room's send_join answer takes a while to build and send. */
const MAKE_TIMEOUT_MS = 15_000;
const SEND_TIMEOUT_MS = 120_000;

export class FederationMembership implements RemoteMembershipPort {
  constructor(private readonly client: Client) {}

  async makeJoin(destination: string, roomId: string, userId: string, versions: readonly string[]) {
    const body = await this.call(destination, 'make_join', {
      destination,
      method: 'GET',
      path: `/federation/v1/make_join/${enc(roomId)}/${enc(userId)}`,
      query: { ver: [...versions] },
      timeoutMs: MAKE_TIMEOUT_MS,
    });
    const event = body['event'];
    const roomVersion = body['room_version'] ?? '1';
    if (!isJsonObject(event) || typeof roomVersion !== 'string') throw new HearthError(502, 'M_UNKNOWN', `${destination} answered make_join without a template`);
    return { roomVersion, event };
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
