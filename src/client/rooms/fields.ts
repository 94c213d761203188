// Reading room request fields with the spec's errors: a missing field is 400 M_MISSING_PARAM, one
// of the wrong type 400 M_BAD_JSON, a bad value 400 M_INVALID_PARAM. JSON null reads as absent.

import type { HttpRequest, Requester } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../../protocol/json.js';

export function body(req: HttpRequest): JsonObject {
  return isJsonObject(req.body) ? req.body : {};
}

export function requester(req: HttpRequest): Requester {
  if (req.requester === undefined) throw new HearthError(401, 'M_MISSING_TOKEN', 'Missing access token');
  return req.requester;
}

export function missing(key: string): HearthError {
  return new HearthError(400, 'M_MISSING_PARAM', `Missing parameter: ${key}`);
}

export function optionalString(obj: JsonObject, key: string): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw HearthError.badJson(`${key} must be a string`);
  return v;
}

export function requiredString(obj: JsonObject, key: string): string {
  const v = optionalString(obj, key);
  if (v === undefined) throw missing(key);
  return v;
}

export function optionalBoolean(obj: JsonObject, key: string): boolean | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw HearthError.badJson(`${key} must be a boolean`);
  return v;
}

export function optionalObject(obj: JsonObject, key: string): JsonObject | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!isJsonObject(v)) throw HearthError.badJson(`${key} must be an object`);
  return v;
}

export function optionalStringArray(obj: JsonObject, key: string): string[] | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw HearthError.badJson(`${key} must be an array of strings`);
  return v as string[];
}

export function optionalArray(obj: JsonObject, key: string): unknown[] | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw HearthError.badJson(`${key} must be an array`);
  return v;
}

/** A query parameter given at most once. */
export function query(req: HttpRequest, key: string): string | undefined {
  const v = req.query[key];
  if (Array.isArray(v)) throw HearthError.invalidParam(`${key} given more than once`);
  return v;
}

/** An integer query parameter within [min, max] (clamped to max); 400 M_INVALID_PARAM when not an integer. */
export function queryInt(req: HttpRequest, key: string, fallback: number, min: number, max: number): number {
  const v = query(req, key);
  if (v === undefined || v === '') return fallback;
  if (!/^-?\d{1,15}$/.test(v)) throw HearthError.invalidParam(`${key} must be an integer`);
  const n = Number(v);
  if (n < min) throw HearthError.invalidParam(`${key} must be at least ${min}`);
  return Math.min(n, max);
}

/** A path parameter that must not be empty. */
export function param(req: HttpRequest, key: string): string {
  const v = req.params[key];
  if (v === undefined || v === '') throw HearthError.invalidParam(`Missing path parameter ${key}`);
  return v;
}
