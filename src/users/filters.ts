// Filters uploaded by clients (POST /user/{userId}/filter) and their use by /sync, which takes
// either a filter id or an inline JSON filter (one that starts with `{`).

import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { canonicalJson } from '../protocol/canonical-json.js';
import { HearthError } from '../protocol/errors.js';
import { compileFilter, filterParamJson, parseFilter, type CompiledFilter, type Filter } from '../protocol/filters.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import { insertFilter, selectFilter } from '../storage/user-data/filters.js';

export interface FilterServiceDeps {
  readonly db: Kysely<Schema>;
}

export interface ResolvedFilter {
  /** The filter as the client wrote it. */
  readonly json: JsonObject;
  readonly filter: Filter;
  readonly compiled: CompiledFilter;
}

const FILTER_ID = /^[0-9]{1,15}$/;

function hashOf(json: JsonObject): string {
  let text: string;
  try {
    text = canonicalJson(json);
  } catch {
    // Floats and the like outside the known keys: any stable encoding will do for de-duplication.
    text = JSON.stringify(json);
  }
  return createHash('sha256').update(text).digest('base64');
}

export class FilterService {
  constructor(private readonly deps: FilterServiceDeps) {}

  /** Validates and stores the filter; returns its id (the same id for the same filter). */
  async createFilter(requesterId: string, userId: string, body: unknown): Promise<string> {
    if (requesterId !== userId) throw HearthError.forbidden('Cannot create filters for other users');
    parseFilter(body);
    const json = body as JsonObject;
    const id = await insertFilter(this.deps.db, userId, hashOf(json), JSON.stringify(json));
    return String(id);
  }

  /** GET /user/{userId}/filter/{filterId}: the filter as uploaded; 404 M_NOT_FOUND if unknown. */
  async getStoredFilter(requesterId: string, userId: string, filterId: string): Promise<JsonObject> {
    if (requesterId !== userId) throw HearthError.forbidden('Cannot get filters for other users');
    const json = await this.load(userId, filterId);
    if (json === undefined) throw HearthError.notFound('No such filter');
    return json;
  }

  /**
   * The filter a sync names: inline JSON (400 M_NOT_JSON if unparseable, M_BAD_JSON if invalid)
   * or a stored id (400 M_INVALID_PARAM if unknown, as the reference server answers).
   */
  async getFilter(userId: string, idOrInlineJson: string): Promise<ResolvedFilter> {
    let json: JsonObject | undefined;
    if (idOrInlineJson.startsWith('{')) {
      const parsed = filterParamJson(idOrInlineJson);
      if (!isJsonObject(parsed)) throw HearthError.badJson('The filter must be a JSON object');
      json = parsed;
    } else {
      json = await this.load(userId, idOrInlineJson);
      if (json === undefined) throw HearthError.invalidParam('No such filter');
    }
    const filter = parseFilter(json);
    return { json, filter, compiled: compileFilter(filter) };
  }

  private async load(userId: string, filterId: string): Promise<JsonObject | undefined> {
    if (!FILTER_ID.test(filterId)) return undefined;
    const text = await selectFilter(this.deps.db, userId, Number(filterId));
    return text === undefined ? undefined : (JSON.parse(text) as JsonObject);
  }
}
