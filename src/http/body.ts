// Request bodies. Clients send JSON with and without a content type, so bodies are read as bytes
// and parsed here, where a parse failure can get the spec's errcode.

import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A request's JSON object body; an empty body reads as `{}`. */
export function parseJsonObjectBody(raw: unknown): JsonObject {
  if (raw === undefined || raw === null) return {};
  if (!Buffer.isBuffer(raw)) throw HearthError.notJson();
  if (raw.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(raw));
  } catch {
    throw HearthError.notJson();
  }
  if (!isJsonObject(value)) throw HearthError.badJson('Content must be a JSON object.');
  return value;
}
