// Query parameters of the admin API, read as the reference server reads them.

import type { HttpRequest } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { query } from '../rooms/fields.js';

/** `true` or `false`; undefined when absent; anything else is 400 M_INVALID_PARAM. */
export function queryBool(req: HttpRequest, key: string): boolean | undefined {
  const v = query(req, key);
  if (v === undefined) return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw HearthError.invalidParam(`Boolean query parameter '${key}' must be one of ['true', 'false']`);
}

/** A non-negative integer; the fallback when absent. */
export function queryCount(req: HttpRequest, key: string, fallback: number): number {
  const v = query(req, key);
  if (v === undefined || v === '') return fallback;
  if (!/^\d{1,15}$/.test(v)) throw HearthError.invalidParam(`Query parameter '${key}' must be a non-negative integer`);
  return Number(v);
}
