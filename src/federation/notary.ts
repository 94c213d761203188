// The notary API (server-server API, "Querying Keys Through Another Server"): other servers' key
// responses, from the key ring's cache or fetched, each with its origin's signatures and ours
// added, so that a reader who trusts us can use keys it could not fetch itself.

import type { HttpRequest, HttpResponse, RouteDef } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';
import { isServerName } from '../protocol/ids.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { type SigningKey, signJson } from '../protocol/signing.js';

export interface NotaryDeps {
  /** The key ring's `serverKeys` (FederationKeyRing). */
  readonly keyRing: {
    serverKeys(serverName: string, minimumValidUntil: number, keyIds?: readonly string[]): Promise<JsonObject[]>;
  };
  readonly serverName: string;
  readonly signingKey: SigningKey;
  readonly now?: () => number;
}

// Servers looked up at the same time for one POST: each may mean a request to that server.
const QUERY_CONCURRENCY = 16;
const DIGITS = /^[0-9]{1,16}$/;

interface ServerQuery {
  readonly serverName: string;
  readonly minimumValidUntil: number;
  readonly keyIds: readonly string[];
}

function isTimestamp(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function checkServerName(serverName: string): void {
  if (!isServerName(serverName)) throw HearthError.invalidParam(`Invalid server name ${JSON.stringify(serverName)}`);
}

/** `minimum_valid_until_ts` of the GET form; the current time when absent (spec). */
function minimumFromQuery(req: HttpRequest, now: number): number {
  const raw = req.query['minimum_valid_until_ts'];
  if (raw === undefined) return now;
  const value = typeof raw === 'string' && DIGITS.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value)) throw HearthError.invalidParam('minimum_valid_until_ts must be a timestamp in milliseconds');
  return value;
}

/** The POST body's `server_keys`, one query per server. */
function parseServerKeys(body: unknown, now: number): ServerQuery[] {
  const serverKeys = isJsonObject(body) ? body.server_keys : undefined;
  if (!isJsonObject(serverKeys)) throw HearthError.badJson('server_keys must be an object');
  const queries: ServerQuery[] = [];
  for (const [serverName, criteria] of Object.entries(serverKeys)) {
    checkServerName(serverName);
    if (!isJsonObject(criteria)) throw HearthError.badJson(`server_keys.${serverName} must be an object of key ids`);
    // The latest minimum asked for any of its keys: one answer serves them all.
    let minimumValidUntil: number | undefined;
    for (const [keyId, criterion] of Object.entries(criteria)) {
      if (!isJsonObject(criterion)) throw HearthError.badJson(`server_keys.${serverName}.${keyId} must be an object`);
      const min = criterion.minimum_valid_until_ts ?? now;
      if (!isTimestamp(min)) throw HearthError.badJson(`server_keys.${serverName}.${keyId}.minimum_valid_until_ts must be a timestamp`);
      minimumValidUntil = Math.max(minimumValidUntil ?? min, min);
    }
    queries.push({ serverName, minimumValidUntil: minimumValidUntil ?? now, keyIds: Object.keys(criteria) });
  }
  return queries;
}

export function notaryRoutes(deps: NotaryDeps): RouteDef[] {
  const now = deps.now ?? Date.now;

  /** A server's responses, each signed by us too; a response that cannot be signed is left out. */
  const answer = async (query: ServerQuery): Promise<JsonObject[]> => {
    const responses = await deps.keyRing.serverKeys(query.serverName, query.minimumValidUntil, query.keyIds);
    const out: JsonObject[] = [];
    for (const response of responses) {
      try {
        out.push(signJson(response, deps.serverName, deps.signingKey));
      } catch {
        // Only verified (hence canonical) responses are stored; this is not reached.
      }
    }
    return out;
  };

  const single = async (req: HttpRequest): Promise<HttpResponse> => {
    const serverName = req.params['serverName'] ?? '';
    checkServerName(serverName);
    const query = { serverName, minimumValidUntil: minimumFromQuery(req, now()), keyIds: [] };
    return { body: { server_keys: await answer(query) } };
  };

  const batch = async (req: HttpRequest): Promise<HttpResponse> => {
    const queries = parseServerKeys(req.body, now());
    const results: JsonObject[][] = new Array(queries.length);
    let next = 0;
    const worker = async () => {
      while (next < queries.length) {
        const i = next++;
        results[i] = await answer(queries[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(QUERY_CONCURRENCY, queries.length) }, worker));
    return { body: { server_keys: results.flat() } };
  };

  const route = { api: 'key', versions: ['v2'], auth: 'none' } as const;
  return [
    { ...route, method: 'GET', path: '/query/:serverName', handler: single },
    // The key-id form is deprecated; like /server/:keyId it answers with every key.
    { ...route, method: 'GET', path: '/query/:serverName/:keyId', handler: single },
    { ...route, method: 'POST', path: '/query', handler: batch },
  ];
}
