// The room server's RemoteEvents port over federation: the requests a receiver makes while it
// checks received events (GET /event, POST /get_missing_events, GET /state_ids, GET /backfill).
// Answers are untrusted and only shaped here: every PDU goes through the receiver's checks. A
// failed request gives nothing (the gap stays a gap), never an exception into the pipeline.

import { isJsonObject, type JsonValue } from '../protocol/json.js';
import type { RemoteEvents } from '../rooms/input/remote-events.js';

/** What this port needs of the federation client. */
export interface FederationRequester {
  request(req: {
    destination: string;
    method: 'GET' | 'POST' | 'PUT';
    path: string;
    query?: Record<string, string | readonly string[]>;
    body?: JsonValue;
    timeoutMs?: number;
  }): Promise<{ status: number; body: unknown }>;
}

export interface FederationRemoteEventsDeps {
  readonly client: FederationRequester;
  /** Logs a request that failed. */
  readonly warn?: (message: string, fields: Record<string, unknown>) => void;
}

const enc = encodeURIComponent;

/** Fetches of missing history get less time than interactive requests: the sender waits on them. */
const FETCH_TIMEOUT_MS = 20_000;

export class FederationRemoteEvents implements RemoteEvents {
  constructor(private readonly deps: FederationRemoteEventsDeps) {}

  async events(origin: string, _roomId: string, eventIds: readonly string[]): Promise<readonly unknown[]> {
    const out: unknown[] = [];
    for (const id of eventIds) {
      const body = await this.get(origin, `/federation/v1/event/${enc(id)}`);
      const pdus = isJsonObject(body) ? body['pdus'] : undefined;
      if (Array.isArray(pdus)) out.push(...pdus.slice(0, 1));
    }
    return out;
  }

  async missingEvents(origin: string, roomId: string, earliest: readonly string[], latest: readonly string[], limit: number): Promise<readonly unknown[]> {
    const body = await this.call(origin, 'POST', `/federation/v1/get_missing_events/${enc(roomId)}`, undefined, {
      earliest_events: [...earliest],
      latest_events: [...latest],
      limit,
      min_depth: 0,
    });
    const events = isJsonObject(body) ? body['events'] : undefined;
    return Array.isArray(events) ? events.slice(0, limit) : [];
  }

  async stateIdsAt(origin: string, roomId: string, eventId: string): Promise<{ readonly pduIds: readonly string[]; readonly authChainIds: readonly string[] }> {
    const body = await this.get(origin, `/federation/v1/state_ids/${enc(roomId)}`, { event_id: eventId });
    const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);
    return isJsonObject(body) ? { pduIds: strings(body['pdu_ids']), authChainIds: strings(body['auth_chain_ids']) } : { pduIds: [], authChainIds: [] };
  }

  async backfill(origin: string, roomId: string, from: readonly string[], limit: number): Promise<readonly unknown[]> {
    if (from.length === 0) return [];
    const body = await this.get(origin, `/federation/v1/backfill/${enc(roomId)}`, { v: from, limit: String(limit) });
    const pdus = isJsonObject(body) ? body['pdus'] : undefined;
    return Array.isArray(pdus) ? pdus.slice(0, limit) : [];
  }

  private get(origin: string, path: string, query?: Record<string, string | readonly string[]>): Promise<unknown> {
    return this.call(origin, 'GET', path, query, undefined);
  }

  private async call(origin: string, method: 'GET' | 'POST', path: string, query: Record<string, string | readonly string[]> | undefined, body: JsonValue | undefined): Promise<unknown> {
    try {
      const res = await this.deps.client.request({
        destination: origin,
        method,
        path,
        ...(query !== undefined ? { query } : {}),
        ...(body !== undefined ? { body } : {}),
        timeoutMs: FETCH_TIMEOUT_MS,
      });
      if (res.status === 200) return res.body;
      this.deps.warn?.('a federation request for events failed', { origin, path, status: res.status });
    } catch (err) {
      this.deps.warn?.('a federation request for events failed', { origin, path, err: String(err) });
    }
    return undefined;
  }
}
