// A fake remote homeserver for federation tests, without a network: its own server name and
// Ed25519 keys, fully hashed and signed PDUs for any room version built from a graph description,
// its key-server answer, and the answers a receiver asks a remote for (events by id,
// /get_missing_events, /state_ids, /backfill) as plain async methods. Several remotes may build one room
// graph; each event is signed by its sender's server.
//
// A graph does not authorize what it builds: a test may build events the rules deny, and the
// graph's states then hold them (as a misbehaving server would believe). `referenceStates`
// (reference-states.ts) computes what an honest receiver should conclude.

import { randomBytes } from 'node:crypto';
import { authTypesForEvent } from '../../src/protocol/auth-events.js';
import { encodeBase64 } from '../../src/protocol/base64.js';
import { HearthError } from '../../src/protocol/errors.js';
import type { ServerVerifyKey, VerifyKeyLookup } from '../../src/protocol/event-signatures.js';
import {
  referenceIds,
  stateKey,
  toRoomEvent,
  type EventReferencePair,
  type EventReferences,
  type Pdu,
  type RoomEvent,
  type StateKey,
} from '../../src/protocol/events.js';
import { computeEventId, hashAndSignEvent, hashAndSignEventWithId, referenceHash, type PduDraft } from '../../src/protocol/hashes.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { getRoomVersion, type RoomVersion } from '../../src/protocol/room-versions.js';
import { generateSigningKey, signJson, type SigningKey } from '../../src/protocol/signing.js';
import { resolveState } from '../../src/protocol/state-res/index.js';

export interface RemoteServerOptions {
  /** Default `remote.test`. */
  serverName?: string;
  /** The first signing key; default a fresh one. */
  signingKey?: SigningKey;
  /** The clock for origin_server_ts and key validity; default Date.now. */
  now?: () => number;
  /** `valid_until_ts` of the published keys; default a week after construction. */
  validUntilTs?: number;
}

export interface RoomOptions {
  /** Room version id, '1' to '11'. */
  version: string;
  /** The user who creates the room; must belong to this server. */
  creator: string;
  /** Default `!<random>:<server name>`. */
  roomId?: string;
  /** `public_chat` (default) or `private_chat`: the join rule. */
  preset?: 'public_chat' | 'private_chat';
  /** Merged over the default power-levels content. */
  powerLevels?: JsonObject;
  /** Extra m.room.create content. */
  createContent?: JsonObject;
}

/** One event to add to a graph. */
export interface EventSpec {
  type: string;
  sender: string;
  stateKey?: string;
  content?: JsonObject;
  /** The prev events; default the graph's current forward extremities. */
  prev?: readonly string[];
  /** The auth events; default selected from the state after `prev` (authTypesForEvent). */
  auth?: readonly string[];
  /** For m.room.redaction: the redacted event (top level before v11, in content from v11). */
  redacts?: string;
  /** Default one past the deepest prev event. */
  depth?: number;
  /** Default the sender's server's clock (strictly increasing within a server). */
  ts?: number;
  /** Sign with this key of the sender's server instead of its current key (published or not). */
  key?: SigningKey;
  /** Servers that sign too, e.g. the authorising server of a v8+ restricted join. */
  alsoSignedBy?: readonly RemoteServer[];
  /** Extra top-level PDU members. */
  extra?: JsonObject;
}

export interface GraphEvent {
  readonly eventId: string;
  readonly pdu: Pdu;
  readonly event: RoomEvent;
  /** Unpadded standard base64 of the reference hash (what v1–v2 references carry). */
  readonly referenceHash: string;
}

/** The `/_matrix/key/v2/server` answer. */
export interface ServerKeysResponse {
  server_name: string;
  verify_keys: Record<string, { key: string }>;
  old_verify_keys: Record<string, { key: string; expired_ts: number }>;
  valid_until_ts: number;
  signatures: Record<string, Record<string, string>>;
}

/** The `/state_ids` answer. */
export interface StateIdsResponse {
  pdu_ids: string[];
  auth_chain_ids: string[];
}

const WEEK_MS = 7 * 24 * 3600 * 1000;

function domainOf(id: string): string {
  const colon = id.indexOf(':');
  if (colon < 0) throw new Error(`${id} has no server name`);
  return id.slice(colon + 1);
}

function defaultPowerLevels(creator: string, version: RoomVersion): JsonObject {
  return {
    // v12: creators have infinite power and are never listed.
    users: version.privilegedCreators ? {} : { [creator]: 100 },
    users_default: 0,
    events: { 'm.room.name': 50, 'm.room.power_levels': 100, 'm.room.history_visibility': 100 },
    events_default: 0,
    state_default: 50,
    ban: 50,
    kick: 50,
    redact: 50,
    invite: 50,
  };
}

export class RemoteServer {
  readonly serverName: string;
  readonly now: () => number;
  validUntilTs: number;
  /** Published keys (verify_keys); the first signs by default. */
  private readonly currentKeys: SigningKey[];
  private readonly oldKeys = new Map<string, { key: SigningKey; expiredTs: number }>();
  private readonly graphs = new Map<string, RoomGraph>();
  private readonly withheld = new Set<string>();
  private lastTs = 0;
  /** Every request answered, in order: what a test can assert a receiver asked for. */
  readonly requests: { method: 'getEvents' | 'getMissingEvents' | 'stateIdsAt' | 'backfill'; args: unknown[] }[] = [];

  constructor(options: RemoteServerOptions = {}) {
    this.serverName = options.serverName ?? 'remote.test';
    this.now = options.now ?? Date.now;
    this.currentKeys = [options.signingKey ?? generateSigningKey()];
    this.validUntilTs = options.validUntilTs ?? this.now() + WEEK_MS;
  }

  get signingKey(): SigningKey {
    return this.currentKeys[0]!;
  }

  /** A timestamp from the clock, strictly after the previous one. */
  nextTs(): number {
    this.lastTs = Math.max(this.now(), this.lastTs + 1);
    return this.lastTs;
  }

  /** Publishes another current key beside the existing ones; the signing key stays the same. */
  addKey(key: SigningKey = generateSigningKey()): SigningKey {
    this.currentKeys.push(key);
    return key;
  }

  /** Retires the signing key into old_verify_keys (expired at `expiredTs`) and signs with a new one. */
  rotateKey(expiredTs: number = this.now(), next: SigningKey = generateSigningKey()): SigningKey {
    const old = this.currentKeys.shift()!;
    this.oldKeys.set(old.keyId, { key: old, expiredTs });
    this.currentKeys.unshift(next);
    return next;
  }

  /** The key server's answer (`GET /_matrix/key/v2/server`), signed by every current key. */
  keys(): ServerKeysResponse {
    const verify_keys: Record<string, { key: string }> = {};
    for (const k of this.currentKeys) verify_keys[k.keyId] = { key: encodeBase64(k.publicKey) };
    const old_verify_keys: Record<string, { key: string; expired_ts: number }> = {};
    for (const [id, { key, expiredTs }] of this.oldKeys) old_verify_keys[id] = { key: encodeBase64(key.publicKey), expired_ts: expiredTs };
    let body: JsonObject = { server_name: this.serverName, verify_keys, old_verify_keys, valid_until_ts: this.validUntilTs };
    for (const k of this.currentKeys) body = signJson(body, this.serverName, k);
    return body as unknown as ServerKeysResponse;
  }

  /** This server's keys as event-signatures.ts looks them up (other servers: undefined). */
  readonly verifyKeyLookup: VerifyKeyLookup = (serverName, keyId) => {
    if (serverName !== this.serverName) return undefined;
    const current = this.currentKeys.find((k) => k.keyId === keyId);
    if (current !== undefined) return { publicKey: current.publicKey, validUntilTs: this.validUntilTs };
    const old = this.oldKeys.get(keyId);
    return old === undefined ? undefined : { publicKey: old.key.publicKey, validUntilTs: old.expiredTs };
  };

  /** Adds this server's signature to an event (as the authorising server of a restricted join does). */
  signPdu(pdu: Pdu, version: RoomVersion, key: SigningKey = this.signingKey): Pdu {
    // Re-hashing an untouched event gives the same hash, so only the signature is new.
    return hashAndSignEvent(pdu, this.serverName, key, version);
  }

  /**
   * A copy of `pdu` with `changes` applied, hashed and signed anew by this server alone: a
   * correctly signed event that is wrong some other way (oversize, wrong field types). From v3
   * its id changes. With `lenient`, values without a strict canonical form (floats, big numbers)
   * are signed as older versions would.
   */
  forge(pdu: Pdu, version: RoomVersion, changes: JsonObject = {}, options: { lenient?: boolean } = {}): { eventId: string; pdu: Pdu } {
    const draft: { [k: string]: unknown } = { ...pdu, ...changes };
    delete draft.signatures;
    delete draft.hashes;
    delete draft.unsigned;
    const signVersion = options.lenient === true ? { ...version, strictCanonicalJson: false } : version;
    const signed = hashAndSignEventWithId(draft as PduDraft, this.serverName, this.signingKey, signVersion);
    // No RoomEvent view: the changes may leave the event without one.
    return { eventId: signed.eventId, pdu: signed.pdu };
  }

  /** A new room graph: create, the creator's join, power levels, join rules and history visibility. */
  room(options: RoomOptions): RoomGraph {
    const version = getRoomVersion(options.version);
    if (version === undefined) throw new Error(`unknown room version ${options.version}`);
    if (domainOf(options.creator) !== this.serverName) throw new Error(`${options.creator} is not a user of ${this.serverName}`);
    // v12: the create event, once built, names the room.
    const roomId = version.createEventRoomId ? '' : (options.roomId ?? `!${randomBytes(9).toString('hex')}:${this.serverName}`);
    const graph = new RoomGraph(roomId, version, [this]);
    const creator = options.creator;
    const createContent: JsonObject = { ...options.createContent, room_version: version.id };
    if (!version.implicitRoomCreator) createContent.creator = creator;
    const state = (type: string, content: JsonObject, key = ''): void => {
      graph.eventSync({ type, sender: creator, stateKey: key, content });
    };
    state('m.room.create', createContent);
    state('m.room.member', { membership: 'join' }, creator);
    state('m.room.power_levels', { ...defaultPowerLevels(creator, version), ...options.powerLevels });
    state('m.room.join_rules', { join_rule: options.preset === 'private_chat' ? 'invite' : 'public' });
    state('m.room.history_visibility', { history_visibility: 'shared' });
    return graph;
  }

  /** @internal: called when this server takes part in a graph. */
  attach(graph: RoomGraph): void {
    this.graphs.set(graph.roomId, graph);
  }

  /** Makes events unavailable: this server answers as if it did not have them. */
  withhold(...ids: string[]): void {
    for (const id of ids) this.withheld.add(id);
  }

  /** Makes withheld events available again. */
  release(...ids: string[]): void {
    for (const id of ids) this.withheld.delete(id);
  }

  private find(id: string): { graph: RoomGraph; entry: GraphEvent } | undefined {
    if (this.withheld.has(id)) return undefined;
    for (const graph of this.graphs.values()) {
      const entry = graph.get(id);
      if (entry !== undefined) return { graph, entry };
    }
    return undefined;
  }

  /** The events it has among `ids` (GET /event/{id} for each). */
  async getEvents(ids: readonly string[]): Promise<Map<string, Pdu>> {
    this.requests.push({ method: 'getEvents', args: [[...ids]] });
    const out = new Map<string, Pdu>();
    for (const id of ids) {
      const found = this.find(id);
      if (found !== undefined) out.set(id, found.entry.pdu);
    }
    return out;
  }

  /**
   * POST /get_missing_events: a breadth-first walk back over prev_events from `latest` (which
   * are not returned), never into or past `earliest`, stopping at `limit` events; the result is
   * reversed, so roughly oldest first (as deployed servers answer). Events it does not have are
   * neither returned nor walked through.
   */
  async getMissingEvents(roomId: string, earliest: readonly string[], latest: readonly string[], limit = 10): Promise<Pdu[]> {
    this.requests.push({ method: 'getMissingEvents', args: [roomId, [...earliest], [...latest], limit] });
    const graph = this.graphs.get(roomId);
    if (graph === undefined) throw HearthError.notFound(`${this.serverName} is not in ${roomId}`);
    const seen = new Set<string>(earliest);
    const found: string[] = [];
    let front = latest.filter((id) => !seen.has(id));
    while (front.length > 0 && found.length < limit) {
      const next: string[] = [];
      for (const id of front) {
        const here = this.find(id);
        if (here === undefined || here.graph !== graph) continue;
        for (const prev of here.entry.event.prev_events) {
          if (seen.has(prev)) continue;
          seen.add(prev);
          if (this.find(prev) === undefined) continue;
          next.push(prev);
          found.push(prev);
        }
      }
      front = next;
    }
    return found.slice(0, limit).reverse().map((id) => graph.get(id)!.pdu);
  }

  /**
   * GET /backfill/{roomId}?v=&limit=: the events `from` names and the history before them, a
   * breadth-first walk back over prev_events, at most `limit` events, newest first (as deployed
   * servers answer). Events it does not have are neither returned nor walked through.
   */
  async backfill(roomId: string, from: readonly string[], limit = 10): Promise<Pdu[]> {
    this.requests.push({ method: 'backfill', args: [roomId, [...from], limit] });
    const graph = this.graphs.get(roomId);
    if (graph === undefined) throw HearthError.notFound(`${this.serverName} is not in ${roomId}`);
    let front = [...new Set(from)].filter((id) => this.find(id)?.graph === graph);
    const seen = new Set<string>(front);
    const found: string[] = [];
    while (front.length > 0 && found.length < limit) {
      const next: string[] = [];
      for (const id of front) {
        if (found.length >= limit) break;
        found.push(id);
        for (const prev of graph.get(id)!.event.prev_events) {
          if (seen.has(prev) || this.find(prev) === undefined) continue;
          seen.add(prev);
          next.push(prev);
        }
      }
      front = next;
    }
    return found.map((id) => graph.get(id)!.pdu);
  }

  /**
   * GET /state_ids?event_id=: the state before the event and the auth chain of that state.
   * Throws 404 M_NOT_FOUND for an event it does not have.
   */
  async stateIdsAt(eventId: string): Promise<StateIdsResponse> {
    this.requests.push({ method: 'stateIdsAt', args: [eventId] });
    const found = this.find(eventId);
    if (found === undefined) throw HearthError.notFound(`${this.serverName} does not have ${eventId}`);
    const pduIds = [...found.graph.stateBefore(eventId).values()];
    return { pdu_ids: pduIds, auth_chain_ids: [...found.graph.authChain(pduIds)] };
  }
}

function graphEvent(pdu: Pdu, eventId: string, reference: Uint8Array, version: RoomVersion): GraphEvent {
  return { eventId, pdu, event: toRoomEvent(pdu, eventId, version), referenceHash: encodeBase64(reference) };
}

/** Changes that make one check fail and leave the others passing. */
export const tamper = {
  /** Every signature of `server` replaced by one from an unknown key under the same key ids. */
  signature(pdu: Pdu, version: RoomVersion, server: string): Pdu {
    const stranger = generateSigningKey();
    const wrong = hashAndSignEvent({ ...pdu, signatures: {} }, server, stranger, version).signatures[server]![stranger.keyId]!;
    const replaced: Record<string, string> = {};
    for (const keyId of Object.keys(pdu.signatures[server] ?? {})) replaced[keyId] = wrong;
    return { ...pdu, signatures: { ...pdu.signatures, [server]: replaced } };
  },
  /**
   * Content changed after signing (a key redaction drops): the content hash fails while the
   * signatures, which cover the redacted form, still hold. The event id is unchanged.
   */
  content(pdu: Pdu, changes: JsonObject = { tampered: true }): Pdu {
    return { ...pdu, content: { ...pdu.content, ...changes } };
  },
};

/** A lookup over several servers' keys (for events signed by more than one). */
export function verifyKeyLookupFor(...servers: RemoteServer[]): VerifyKeyLookup {
  return (serverName, keyId): ServerVerifyKey | undefined => {
    for (const s of servers) {
      const k = s.verifyKeyLookup(serverName, keyId);
      if (k !== undefined) return k;
    }
    return undefined;
  };
}

/**
 * One room's event graph, built by one or more remote servers. State after each event is kept:
 * the state after its prev events (resolved with the version's algorithm when there are
 * several) plus the event itself.
 */
export class RoomGraph {
  private readonly entries = new Map<string, GraphEvent>();
  private readonly order: string[] = [];
  private readonly after = new Map<string, Map<StateKey, string>>();
  private readonly before = new Map<string, Map<StateKey, string>>();
  private readonly heads = new Set<string>();
  private readonly servers = new Map<string, RemoteServer>();

  constructor(
    /** Fixed, but in a v12 room: its create event, once built, names it. */
    public roomId: string,
    readonly version: RoomVersion,
    servers: readonly RemoteServer[],
  ) {
    for (const s of servers) this.addServer(s);
  }

  /** Lets another server's users send events into this graph (and that server answer for it). */
  addServer(server: RemoteServer): this {
    this.servers.set(server.serverName, server);
    server.attach(this);
    return this;
  }

  /**
   * Adds an event and returns it. Prev events default to the current forward extremities; auth
   * events to the selection from the state before the event.
   */
  async event(spec: EventSpec): Promise<GraphEvent> {
    const prev = spec.prev ?? this.extremities();
    return this.build(spec, prev, await this.resolvePrevStates(prev));
  }

  /** `event` for an event with at most one prev event (whose state needs no resolution). */
  eventSync(spec: EventSpec): GraphEvent {
    const prev = spec.prev ?? this.extremities();
    if (prev.length > 1) throw new Error('several prev events need state resolution: use event()');
    return this.build(spec, prev, prev.length === 0 ? new Map() : this.stateAfter(prev[0]!));
  }

  /** The state after `ids`: resolved when there are several. */
  async resolvePrevStates(ids: readonly string[]): Promise<Map<StateKey, string>> {
    if (ids.length === 0) return new Map();
    if (ids.length === 1) return this.stateAfter(ids[0]!);
    return resolveState(this.roomId, this.version, ids.map((id) => this.stateAfter(id)), { getEvents: (want) => this.roomEventsById(want) });
  }

  /**
   * Adds a PDU built elsewhere (by the server under test, say, when it joins), so that later
   * events can cite it and the remotes serve it. Its prev and auth events must be in the graph.
   */
  async insert(pdu: Pdu): Promise<GraphEvent> {
    const eventId = computeEventId(pdu, this.version);
    const event = toRoomEvent(pdu, eventId, this.version);
    for (const id of [...event.prev_events, ...event.auth_events]) this.mustGet(id);
    const entry: GraphEvent = { eventId, pdu, event, referenceHash: encodeBase64(referenceHash(pdu, this.version)) };
    this.record(entry, await this.resolvePrevStates(event.prev_events));
    return entry;
  }

  private build(spec: EventSpec, prev: readonly string[], stateBefore: Map<StateKey, string>): GraphEvent {
    const server = this.servers.get(domainOf(spec.sender));
    if (server === undefined) throw new Error(`no server in this graph for ${spec.sender}`);
    const content = spec.content ?? {};
    const subject = { type: spec.type, sender: spec.sender, content, ...(spec.stateKey !== undefined ? { state_key: spec.stateKey } : {}) };
    const auth =
      spec.auth ??
      authTypesForEvent(subject, this.version)
        .map((k) => stateBefore.get(k))
        .filter((id): id is string => id !== undefined);
    let depth = 0;
    for (const id of prev) depth = Math.max(depth, this.mustGet(id).pdu.depth);
    const redactsInContent = spec.redacts !== undefined && this.version.updatedRedactionRules;
    const v12Create = this.version.createEventRoomId && spec.type === 'm.room.create' && this.roomId === '';
    const draft: PduDraft = {
      ...(this.version.eventIdFormat === 'v1' ? { event_id: `$${randomBytes(12).toString('base64url')}:${server.serverName}` } : {}),
      ...(v12Create ? {} : { room_id: this.roomId }),
      sender: spec.sender,
      type: spec.type,
      ...(spec.stateKey !== undefined ? { state_key: spec.stateKey } : {}),
      content: redactsInContent ? { ...content, redacts: spec.redacts! } : content,
      origin_server_ts: spec.ts ?? server.nextTs(),
      depth: spec.depth ?? depth + 1,
      prev_events: this.references(prev),
      auth_events: this.references(auth),
      ...(spec.redacts !== undefined && !redactsInContent ? { redacts: spec.redacts } : {}),
      ...spec.extra,
    };
    const signed = hashAndSignEventWithId(draft, server.serverName, spec.key ?? server.signingKey, this.version);
    if (v12Create) {
      this.roomId = '!' + signed.eventId.slice(1);
      for (const s of this.servers.values()) s.attach(this);
    }
    let pdu = signed.pdu;
    for (const other of spec.alsoSignedBy ?? []) pdu = other.signPdu(pdu, this.version);
    const entry = graphEvent(pdu, signed.eventId, signed.referenceHash, this.version);
    this.record(entry, stateBefore);
    return entry;
  }

  private record(entry: GraphEvent, stateBefore: Map<StateKey, string>): void {
    const { event } = entry;
    if (this.entries.has(event.event_id)) throw new Error(`duplicate event ${event.event_id}`);
    this.entries.set(event.event_id, entry);
    this.order.push(event.event_id);
    this.before.set(event.event_id, stateBefore);
    const stateAfter = new Map(stateBefore);
    if (event.state_key !== undefined) stateAfter.set(stateKey(event.type, event.state_key), event.event_id);
    this.after.set(event.event_id, stateAfter);
    for (const id of event.prev_events) this.heads.delete(id);
    this.heads.add(event.event_id);
  }

  /** References in the version's format: ids, or [id, {sha256}] pairs in v1–v2. */
  references(ids: readonly string[]): EventReferences {
    if (this.version.eventIdFormat !== 'v1') return [...ids];
    return ids.map((id): EventReferencePair => [id, { sha256: this.entries.get(id)?.referenceHash ?? '' }]);
  }

  get(id: string): GraphEvent | undefined {
    return this.entries.get(id);
  }

  private mustGet(id: string): GraphEvent {
    const entry = this.entries.get(id);
    if (entry === undefined) throw new Error(`no event ${id} in the graph`);
    return entry;
  }

  /** Every PDU in build order. */
  pdus(): Pdu[] {
    return this.order.map((id) => this.entries.get(id)!.pdu);
  }

  /** Every event in build order. */
  events(): GraphEvent[] {
    return this.order.map((id) => this.entries.get(id)!);
  }

  /** RoomEvent views of the given ids that the graph holds (a StateResEventSource's getEvents). */
  roomEventsById(ids: readonly string[]): Map<string, RoomEvent> {
    const out = new Map<string, RoomEvent>();
    for (const id of ids) {
      const entry = this.entries.get(id);
      if (entry !== undefined) out.set(id, entry.event);
    }
    return out;
  }

  /** The forward extremities: events no other event cites as a prev event. */
  extremities(): string[] {
    return [...this.heads];
  }

  stateAfter(id: string): Map<StateKey, string> {
    const state = this.after.get(id);
    if (state === undefined) throw new Error(`no event ${id} in the graph`);
    return new Map(state);
  }

  stateBefore(id: string): Map<StateKey, string> {
    const state = this.before.get(id);
    if (state === undefined) throw new Error(`no event ${id} in the graph`);
    return new Map(state);
  }

  /** The state after the forward extremities, resolved. */
  currentState(): Promise<Map<StateKey, string>> {
    return this.resolvePrevStates(this.extremities());
  }

  /** The union of the auth chains of `ids` (not the ids themselves unless another reaches them). */
  authChain(ids: readonly string[]): Set<string> {
    const out = new Set<string>();
    const stack = ids.flatMap((id) => referenceIds(this.mustGet(id).pdu.auth_events));
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (out.has(id)) continue;
      out.add(id);
      const entry = this.entries.get(id);
      if (entry !== undefined) stack.push(...entry.event.auth_events);
    }
    return out;
  }
}
