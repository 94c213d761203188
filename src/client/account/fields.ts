// Reading request fields with the spec's errors: a missing field is 400 M_MISSING_PARAM, a field
// of the wrong type 400 M_BAD_JSON. A JSON null reads as absent for optional fields.

import { HearthError } from '../../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../../protocol/json.js';
import type { HttpRequest } from '../../http/route.js';

export function jsonBody(req: HttpRequest): JsonObject {
  return isJsonObject(req.body) ? req.body : {};
}

export function missing(key: string): HearthError {
  return new HearthError(400, 'M_MISSING_PARAM', `Missing parameter: ${key}`);
}

export function optionalString(body: JsonObject, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw HearthError.badJson(`${key} must be a string`);
  return v;
}

export function requiredString(body: JsonObject, key: string): string {
  const v = optionalString(body, key);
  if (v === undefined) throw missing(key);
  return v;
}

export function optionalBoolean(body: JsonObject, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw HearthError.badJson(`${key} must be a boolean`);
  return v;
}

export function requiredStringArray(body: JsonObject, key: string): string[] {
  const v = body[key];
  if (v === undefined || v === null) throw missing(key);
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw HearthError.badJson(`${key} must be an array of strings`);
  return v as string[];
}

/** A query parameter given once; 400 M_INVALID_PARAM when repeated. */
export function queryParam(req: HttpRequest, key: string): string | undefined {
  const v = req.query[key];
  if (Array.isArray(v)) throw HearthError.invalidParam(`${key} given more than once`);
  return v;
}

export function requiredQueryParam(req: HttpRequest, key: string): string {
  const v = queryParam(req, key);
  if (v === undefined) throw missing(key);
  return v;
}
