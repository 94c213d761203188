// Reading the request fields of the user-data routes: a missing field is 400 M_MISSING_PARAM, a
// field of the wrong type 400 M_BAD_JSON.

import type { HttpRequest } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../../protocol/json.js';

/** Every client route of this area answers under these versions. */
export const VERSIONS = ['r0', 'v3'] as const;

export function body(req: HttpRequest): JsonObject {
  return isJsonObject(req.body) ? req.body : {};
}

export function missingParam(key: string): HearthError {
  return new HearthError(400, 'M_MISSING_PARAM', `Missing parameter: ${key}`);
}

/** The field's value, present (possibly null); 400 M_MISSING_PARAM when absent. */
export function required(obj: JsonObject, key: string): unknown {
  if (!Object.hasOwn(obj, key)) throw missingParam(key);
  return obj[key];
}

export function optionalString(obj: JsonObject, key: string): string | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw HearthError.badJson(`'${key}' must be a string`);
  return v;
}

export function param(req: HttpRequest, key: string): string {
  const v = req.params[key];
  if (v === undefined) throw missingParam(key);
  return v;
}

/** The requester a route with auth 'user' or 'guest' always has. */
export function requesterOf(req: HttpRequest): NonNullable<HttpRequest['requester']> {
  if (!req.requester) throw new HearthError(401, 'M_MISSING_TOKEN', 'Missing access token');
  return req.requester;
}
