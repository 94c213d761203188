// Other servers' signing keys, for the checks on received PDUs (rooms/input/key-ring.ts) and for
// the notary API (notary.ts): a cache in storage, filled from the servers themselves
// (`GET /key/v2/server`) and from the notaries of `federation_api.key_perspectives`
// (`POST /key/v2/query`). Every response is verified before anything in it is stored or used
// (server-server API, "Retrieving server keys").

import type { Kysely } from 'kysely';
import { decodeBase64Strict } from '../protocol/base64.js';
import type { ServerVerifyKey } from '../protocol/event-signatures.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { type SigningKey, signedServers, verifySignatureWithPublicKey } from '../protocol/signing.js';
import type { FoundKeys, KeyRequest, KeyRing } from '../rooms/input/key-ring.js';
import { selectServerKeys, type StoredServerKey, upsertServerKeys } from '../storage/federation/server-keys.js';
import type { Schema } from '../storage/schema.js';
import { serverKeysDocument } from './key-server.js';

/** One request to another server's API; `path` has no API root (`/key/v2/server`). */
export interface FederationJsonRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: unknown;
}

/** The parsed JSON answer of a server; rejects on network errors and error statuses. */
export type FetchJson = (serverName: string, request: FederationJsonRequest) => Promise<unknown>;

/** A notary and the keys it signs with, as `federation_api.key_perspectives` lists them. */
export interface KeyPerspective {
  readonly server_name: string;
  readonly keys: readonly { readonly key_id: string; readonly public_key: string }[];
}

export interface KeyRingLog {
  warn(message: string, details?: object): void;
}

export interface FederationKeyRingDeps {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  readonly signingKey: SigningKey;
  readonly perspectives: readonly KeyPerspective[];
  /** Ask the server itself before the notaries (`federation_api.prefer_direct_fetch`). */
  readonly preferDirectFetch: boolean;
  readonly fetchJson: FetchJson;
  readonly now?: () => number;
  /** How long others may cache our own key document (`global.key_validity_period`); default 7 days. */
  readonly keyValidityPeriodMs?: number;
  /** After a fetch for a server, failed or not, how long until it is fetched again; default 1 minute. */
  readonly refetchIntervalMs?: number;
  readonly log?: KeyRingLog;
}

/** Spec: a key response is trusted for at most 7 days, whatever its valid_until_ts says. */
export const MAX_KEY_VALIDITY_MS = 7 * 24 * 60 * 60 * 1000;
const DEFAULT_REFETCH_INTERVAL_MS = 60_000;
// Servers asked directly at the same time: a notary query may name thousands.
const DIRECT_FETCH_CONCURRENCY = 16;
// The per-server fetch times kept in memory before old ones are swept.
const MAX_FETCH_TIMES = 10_000;

/** A notary's name and its trusted keys (key id → unpadded base64). */
export interface NotaryKeys {
  readonly serverName: string;
  readonly keys: ReadonlyMap<string, string>;
}

export interface VerifiedKeyResponse {
  readonly serverName: string;
  /** The response's valid_until_ts, capped at 7 days after `now`. */
  readonly validUntilTs: number;
  /** Key id → unpadded base64, ed25519 keys only. */
  readonly verifyKeys: ReadonlyMap<string, string>;
  readonly oldVerifyKeys: ReadonlyMap<string, { readonly key: string; readonly expiredTs: number }>;
  /** The response with its origin's signatures only (a notary's are its own business). */
  readonly json: JsonObject;
}

export type KeyResponseCheck = { ok: true; response: VerifiedKeyResponse } | { ok: false; reason: string };

function isPublicKey(value: unknown): value is string {
  return typeof value === 'string' && decodeBase64Strict(value)?.length === 32;
}

function isTimestamp(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * Checks a key response as received from `expectedServer` itself or, with `notary`, through that
 * notary: it names the server asked about, is signed by it with a key it lists in `verify_keys`
 * (every such signature must hold), and through a notary also by one of the notary's trusted keys.
 */
export function verifyKeyResponse(json: unknown, expectedServer: string, now: number, notary?: NotaryKeys): KeyResponseCheck {
  const fail = (reason: string): KeyResponseCheck => ({ ok: false, reason });
  if (!isJsonObject(json)) return fail('not a JSON object');
  if (json.server_name !== expectedServer) return fail(`server_name is not ${expectedServer}`);
  if (!isTimestamp(json.valid_until_ts)) return fail('valid_until_ts is not a timestamp');
  const validUntilTs = Math.min(json.valid_until_ts, now + MAX_KEY_VALIDITY_MS);
  if (!isJsonObject(json.verify_keys)) return fail('verify_keys is not an object');
  const verifyKeys = new Map<string, string>();
  for (const [keyId, entry] of Object.entries(json.verify_keys)) {
    if (!keyId.startsWith('ed25519:')) continue;
    if (!isJsonObject(entry) || !isPublicKey(entry.key)) return fail(`verify key ${keyId} is not a 32-byte key`);
    verifyKeys.set(keyId, entry.key);
  }
  if (verifyKeys.size === 0) return fail('no ed25519 verify keys');
  const oldVerifyKeys = new Map<string, { key: string; expiredTs: number }>();
  const old = json.old_verify_keys ?? {};
  if (!isJsonObject(old)) return fail('old_verify_keys is not an object');
  for (const [keyId, entry] of Object.entries(old)) {
    if (!keyId.startsWith('ed25519:') || verifyKeys.has(keyId)) continue;
    if (!isJsonObject(entry) || !isPublicKey(entry.key) || !isTimestamp(entry.expired_ts)) {
      return fail(`old verify key ${keyId} is malformed`);
    }
    // An expiry past the response's own validity would outlast the 7-day cap.
    oldVerifyKeys.set(keyId, { key: entry.key, expiredTs: Math.min(entry.expired_ts, validUntilTs) });
  }

  const signatures = signedServers(json);
  let selfSigned = false;
  for (const [keyId, signature] of signatures.get(expectedServer) ?? []) {
    const key = verifyKeys.get(keyId);
    if (key === undefined) continue;
    if (!verifySignatureWithPublicKey(json, signature, key)) return fail(`bad signature by ${expectedServer} ${keyId}`);
    selfSigned = true;
  }
  if (!selfSigned) return fail(`not signed by ${expectedServer} with a key it lists`);
  if (notary !== undefined) {
    const byNotary = signatures.get(notary.serverName);
    const vouched = [...(byNotary ?? [])].some(([keyId, signature]) => {
      const key = notary.keys.get(keyId);
      return key !== undefined && verifySignatureWithPublicKey(json, signature, key);
    });
    if (!vouched) return fail(`no valid signature by the notary ${notary.serverName}`);
  }
  const originSignatures = (json.signatures as JsonObject)[expectedServer]!;
  return {
    ok: true,
    response: {
      serverName: expectedServer,
      validUntilTs,
      verifyKeys,
      oldVerifyKeys,
      json: { ...json, signatures: { [expectedServer]: originSignatures } },
    },
  };
}

/** Key id → the latest time it wants the key to be valid at. */
type Wanted = Map<string, number>;
type Source = 'direct' | NotaryKeys;

/** The key ids of `wanted` that `have` does not cover: missing, or valid until before the time asked. */
function uncovered(have: ReadonlyMap<string, StoredServerKey>, wanted: Wanted): Wanted {
  const out: Wanted = new Map();
  for (const [keyId, validAt] of wanted) {
    const key = have.get(keyId);
    // An old key's expiry is final: asking again cannot change it.
    if (key === undefined || (key.expiredTs === null && key.validUntilTs < validAt)) out.set(keyId, validAt);
  }
  return out;
}

function byServer(keys: readonly StoredServerKey[]): Map<string, Map<string, StoredServerKey>> {
  const out = new Map<string, Map<string, StoredServerKey>>();
  for (const k of keys) {
    let byId = out.get(k.serverName);
    if (byId === undefined) out.set(k.serverName, (byId = new Map()));
    byId.set(k.keyId, k);
  }
  return out;
}

/** The rows a verified response is stored as. */
function rowsOf(response: VerifiedKeyResponse, fetchedAt: number): StoredServerKey[] {
  const keyJson = JSON.stringify(response.json);
  const common = { serverName: response.serverName, validUntilTs: response.validUntilTs, fetchedAt, keyJson };
  const rows: StoredServerKey[] = [];
  for (const [keyId, publicKey] of response.verifyKeys) rows.push({ ...common, keyId, publicKey, expiredTs: null });
  for (const [keyId, old] of response.oldVerifyKeys) rows.push({ ...common, keyId, publicKey: old.key, expiredTs: old.expiredTs });
  return rows;
}

async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export class FederationKeyRing implements KeyRing {
  private readonly deps: FederationKeyRingDeps;
  private readonly now: () => number;
  private readonly refetchIntervalMs: number;
  private readonly notaries: readonly NotaryKeys[];
  /** Fetches under way, by server: a second asker waits for the first fetch. */
  private readonly inflight = new Map<string, Promise<void>>();
  /** When each server's keys were last fetched (or tried). */
  private readonly fetchedAt = new Map<string, number>();

  constructor(deps: FederationKeyRingDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.refetchIntervalMs = deps.refetchIntervalMs ?? DEFAULT_REFETCH_INTERVAL_MS;
    this.notaries = deps.perspectives.map((p) => ({
      serverName: p.server_name,
      keys: new Map(p.keys.map((k) => [k.key_id, k.public_key])),
    }));
  }

  async verifyKeys(requests: readonly KeyRequest[]): Promise<FoundKeys> {
    const found = new Map<string, Map<string, ServerVerifyKey>>();
    const put = (serverName: string, keyId: string, key: ServerVerifyKey) => {
      let byId = found.get(serverName);
      if (byId === undefined) found.set(serverName, (byId = new Map()));
      byId.set(keyId, key);
    };
    const wanted = new Map<string, Wanted>();
    for (const r of requests) {
      if (r.serverName === this.deps.serverName) {
        const own = this.deps.signingKey;
        if (r.keyId === own.keyId) put(r.serverName, r.keyId, { publicKey: own.publicKey, validUntilTs: Number.MAX_SAFE_INTEGER });
        continue;
      }
      // Servers sign with ed25519 only; another algorithm's key id is not worth a request.
      if (!r.keyId.startsWith('ed25519:')) continue;
      let byId = wanted.get(r.serverName);
      if (byId === undefined) wanted.set(r.serverName, (byId = new Map()));
      byId.set(r.keyId, Math.max(byId.get(r.keyId) ?? r.validAt, r.validAt));
    }
    if (wanted.size === 0) return found;

    const stored = byServer(await selectServerKeys(this.deps.db, [...wanted.keys()]));
    const lacking = new Map<string, Wanted>();
    for (const [serverName, byId] of wanted) {
      const missing = uncovered(stored.get(serverName) ?? new Map(), byId);
      if (missing.size > 0) lacking.set(serverName, missing);
    }
    if (lacking.size > 0 && (await this.fetch(lacking, this.sources()))) {
      const refreshed = byServer(await selectServerKeys(this.deps.db, [...lacking.keys()]));
      for (const [serverName, keys] of refreshed) stored.set(serverName, keys);
    }
    // A key that could not be renewed is still returned: the checks decide by its validity.
    for (const [serverName, byId] of wanted) {
      const keys = stored.get(serverName);
      for (const keyId of byId.keys()) {
        const key = keys?.get(keyId);
        if (key !== undefined) put(serverName, keyId, { publicKey: key.publicKey, validUntilTs: key.expiredTs ?? key.validUntilTs });
      }
    }
    return found;
  }

  /**
   * The signed key responses known for `serverName`, as the notary API serves them (origin's
   * signatures only). Fetched from the server itself first when the stored ones do not reach
   * `minimumValidUntil` for `keyIds` (for any key when empty): a notary vouches for what it saw.
   * Stored responses are still returned when the server cannot be reached.
   */
  async serverKeys(serverName: string, minimumValidUntil: number, keyIds: readonly string[] = []): Promise<JsonObject[]> {
    if (serverName === this.deps.serverName) {
      const { signingKey, keyValidityPeriodMs = MAX_KEY_VALIDITY_MS } = this.deps;
      return [serverKeysDocument({ serverName, signingKey, validityPeriodMs: keyValidityPeriodMs }, this.now())];
    }
    let stored = await selectServerKeys(this.deps.db, [serverName]);
    const wanted: Wanted = new Map(keyIds.map((id) => [id, minimumValidUntil]));
    const covered =
      wanted.size > 0
        ? uncovered(byServer(stored).get(serverName) ?? new Map(), wanted).size === 0
        : stored.some((k) => k.expiredTs === null && k.validUntilTs >= minimumValidUntil);
    if (!covered && (await this.fetch(new Map([[serverName, wanted]]), ['direct']))) {
      stored = await selectServerKeys(this.deps.db, [serverName]);
    }
    const out: JsonObject[] = [];
    for (const text of new Set(stored.map((k) => k.keyJson))) {
      try {
        const json: unknown = JSON.parse(text);
        if (isJsonObject(json)) out.push(json);
      } catch {
        // Never written by us: only verified responses are stored.
      }
    }
    return out;
  }

  private sources(): Source[] {
    return this.deps.preferDirectFetch ? ['direct', ...this.notaries] : [...this.notaries, 'direct'];
  }

  /**
   * Fetches keys for the servers in `lacking` that are neither being fetched (those are waited
   * for) nor fetched within the refetch interval. Whether anything was fetched or waited for.
   */
  private async fetch(lacking: ReadonlyMap<string, Wanted>, sources: readonly Source[]): Promise<boolean> {
    const waits: Promise<void>[] = [];
    const batch = new Map<string, Wanted>();
    const now = this.now();
    for (const [serverName, byId] of lacking) {
      const running = this.inflight.get(serverName);
      if (running !== undefined) waits.push(running);
      else if (now - (this.fetchedAt.get(serverName) ?? -Infinity) >= this.refetchIntervalMs) batch.set(serverName, byId);
    }
    if (batch.size > 0) {
      if (this.fetchedAt.size > MAX_FETCH_TIMES) this.sweepFetchTimes(now);
      const run = this.fetchBatch(batch, sources).finally(() => {
        for (const serverName of batch.keys()) this.inflight.delete(serverName);
      });
      for (const serverName of batch.keys()) {
        this.inflight.set(serverName, run);
        this.fetchedAt.set(serverName, now);
      }
      waits.push(run);
    }
    await Promise.all(waits);
    return waits.length > 0;
  }

  private sweepFetchTimes(now: number): void {
    for (const [serverName, at] of this.fetchedAt) if (now - at >= this.refetchIntervalMs) this.fetchedAt.delete(serverName);
  }

  /** Asks each source in turn for the servers no earlier source answered fully; stores what holds. */
  private async fetchBatch(batch: ReadonlyMap<string, Wanted>, sources: readonly Source[]): Promise<void> {
    const remaining = new Map(batch);
    const got = new Map<string, Map<string, StoredServerKey>>();
    for (const source of sources) {
      if (remaining.size === 0) break;
      const responses = source === 'direct' ? await this.fetchDirect([...remaining.keys()]) : await this.fetchThrough(source, remaining);
      const fetchedAt = this.now();
      const rows = responses.flatMap((r) => rowsOf(r, fetchedAt));
      await upsertServerKeys(this.deps.db, rows);
      for (const row of rows) {
        let byId = got.get(row.serverName);
        if (byId === undefined) got.set(row.serverName, (byId = new Map()));
        const seen = byId.get(row.keyId);
        if (seen === undefined || seen.validUntilTs <= row.validUntilTs) byId.set(row.keyId, row);
      }
      for (const [serverName, byId] of remaining) {
        const have = got.get(serverName);
        // No key ids named (the notary API's "all keys"): any verified answer will do.
        if (have !== undefined && uncovered(have, byId).size === 0) remaining.delete(serverName);
      }
    }
  }

  private async fetchDirect(serverNames: readonly string[]): Promise<VerifiedKeyResponse[]> {
    const answers = await mapLimited(serverNames, DIRECT_FETCH_CONCURRENCY, async (serverName) => {
      let json: unknown;
      try {
        json = await this.deps.fetchJson(serverName, { method: 'GET', path: '/key/v2/server' });
      } catch (err) {
        this.warn('signing keys: fetch failed', { serverName, err: String(err) });
        return undefined;
      }
      const check = verifyKeyResponse(json, serverName, this.now());
      if (!check.ok) this.warn('signing keys: response rejected', { serverName, reason: check.reason });
      return check.ok ? check.response : undefined;
    });
    return answers.filter((a): a is VerifiedKeyResponse => a !== undefined);
  }

  private async fetchThrough(notary: NotaryKeys, servers: ReadonlyMap<string, Wanted>): Promise<VerifiedKeyResponse[]> {
    const query: Record<string, Record<string, { minimum_valid_until_ts: number }>> = {};
    for (const [serverName, byId] of servers) {
      query[serverName] = {};
      for (const [keyId, validAt] of byId) query[serverName][keyId] = { minimum_valid_until_ts: validAt };
    }
    let answer: unknown;
    try {
      answer = await this.deps.fetchJson(notary.serverName, { method: 'POST', path: '/key/v2/query', body: { server_keys: query } });
    } catch (err) {
      this.warn('signing keys: notary query failed', { notary: notary.serverName, err: String(err) });
      return [];
    }
    const list = isJsonObject(answer) ? answer.server_keys : undefined;
    if (!Array.isArray(list)) {
      this.warn('signing keys: notary answer has no server_keys list', { notary: notary.serverName });
      return [];
    }
    const out: VerifiedKeyResponse[] = [];
    const now = this.now();
    for (const item of list) {
      const serverName = isJsonObject(item) ? item.server_name : undefined;
      // Keys of servers not asked about are not the notary's to push on us.
      if (typeof serverName !== 'string' || !servers.has(serverName)) continue;
      const check = verifyKeyResponse(item, serverName, now, notary);
      if (check.ok) out.push(check.response);
      else this.warn('signing keys: notary response rejected', { notary: notary.serverName, serverName, reason: check.reason });
    }
    return out;
  }

  private warn(message: string, details: object): void {
    this.deps.log?.warn(message, details);
  }
}
