// Pushers (client API, "Push notifications"): where a user's devices want their notifications
// sent. Set, replaced and removed through POST /pushers/set, listed by GET /pushers; a pusher
// belongs to the device that set it and goes when that device is deleted or logged out, and
// all go when the account is deactivated (storage/accounts/devices.ts). Delivering to push
// gateways: push/sender.ts.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import { deleteOthersPushers, deletePusher, findPusher, listPushers, upsertPusher, type PusherRow } from '../storage/accounts/pushers.js';

/** The spec's bounds: app_id at most 64 characters, pushkey at most 512 bytes. */
export const MAX_APP_ID_LENGTH = 64;
export const MAX_PUSHKEY_BYTES = 512;
/** The push gateway path a pusher's URL must have (either protocol name). */
const NOTIFY_PATHS = ['/_matrix/push/v1/notify', '/_chat/push/v1/notify'];
const REQUIRED = ['kind', 'app_id', 'app_display_name', 'device_display_name', 'pushkey', 'lang', 'data'] as const;

export interface PusherServiceDeps {
  readonly db: Kysely<Schema>;
  /** The events stream's position: a new pusher is sent what is notified after it. */
  readonly eventsPosition?: () => number;
  /** Told when a pusher is set or removed (the sender starts or stops its queue). */
  readonly onChange?: (userId: string) => void;
  readonly now?: () => number;
}

/** A pusher as GET /pushers lists it. */
export interface PusherJson {
  app_display_name: string;
  app_id: string;
  data: JsonObject;
  device_display_name: string;
  kind: string;
  lang: string;
  profile_tag: string;
  pushkey: string;
}

/** A stored pusher as the client and admin APIs list it. */
export function pusherJson(row: PusherRow): PusherJson {
  return {
    app_display_name: row.app_display_name,
    app_id: row.app_id,
    data: JSON.parse(row.data_json) as JsonObject,
    device_display_name: row.device_display_name,
    kind: row.kind,
    lang: row.lang,
    profile_tag: row.profile_tag,
    pushkey: row.pushkey,
  };
}

function stringField(body: JsonObject, key: string): string {
  const v = body[key];
  if (typeof v !== 'string') throw HearthError.badJson(`${key} must be a string`);
  return v;
}

function checkIds(appId: string, pushkey: string): void {
  if (appId.length === 0 || appId.length > MAX_APP_ID_LENGTH) {
    throw HearthError.invalidParam(`app_id must be 1 to ${MAX_APP_ID_LENGTH} characters`);
  }
  if (pushkey.length === 0 || Buffer.byteLength(pushkey, 'utf8') > MAX_PUSHKEY_BYTES) {
    throw HearthError.invalidParam(`pushkey must be 1 to ${MAX_PUSHKEY_BYTES} bytes`);
  }
}

/** An http pusher's data: `url` (required, http or https, the gateway's notify path) and `format`. */
function checkHttpData(data: JsonObject): void {
  const url = data['url'];
  if (url === undefined || url === null) throw new HearthError(400, 'M_MISSING_PARAM', "'url' required in data for HTTP pusher");
  if (typeof url !== 'string') throw HearthError.invalidParam("'url' must be a string");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw HearthError.invalidParam("'url' must be an absolute http or https URL");
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw HearthError.invalidParam("'url' must be an http or https URL");
  if (!NOTIFY_PATHS.includes(parsed.pathname)) throw HearthError.invalidParam(`'url' must have a path of '${NOTIFY_PATHS[0]}'`);
  const format = data['format'];
  if (format !== undefined && format !== null && typeof format !== 'string') throw HearthError.invalidParam("'format' must be a string");
}

export class PusherService {
  private readonly now: () => number;

  constructor(private readonly deps: PusherServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  async list(userId: string): Promise<PusherJson[]> {
    return (await listPushers(this.deps.db, userId)).map(pusherJson);
  }

  /**
   * POST /pushers/set. `kind: null` removes the user's pusher for app_id and pushkey. Otherwise
   * the pusher is created or updated (it keeps the device it was first set from); without
   * `append`, the same app_id and pushkey are taken from any other user.
   */
  async set(requester: { userId: string; deviceId: string | null }, body: JsonObject): Promise<void> {
    const { db } = this.deps;
    if (body['kind'] === null) {
      const missing = ['app_id', 'pushkey'].filter((k) => body[k] === undefined || body[k] === null);
      if (missing.length > 0) throw new HearthError(400, 'M_MISSING_PARAM', `Missing params: ${missing.join(', ')}`);
      await deletePusher(db, requester.userId, stringField(body, 'app_id'), stringField(body, 'pushkey'));
      this.deps.onChange?.(requester.userId);
      return;
    }
    const missing = REQUIRED.filter((k) => body[k] === undefined || body[k] === null);
    if (missing.length > 0) throw new HearthError(400, 'M_MISSING_PARAM', `Missing params: ${missing.join(', ')}`);
    const kind = stringField(body, 'kind');
    const appId = stringField(body, 'app_id');
    const pushkey = stringField(body, 'pushkey');
    const appDisplayName = stringField(body, 'app_display_name');
    const deviceDisplayName = stringField(body, 'device_display_name');
    const lang = stringField(body, 'lang');
    const profileTag = body['profile_tag'] === undefined || body['profile_tag'] === null ? '' : stringField(body, 'profile_tag');
    const data = body['data'];
    if (!isJsonObject(data)) throw HearthError.badJson('data must be an object');
    const append = body['append'];
    if (append !== undefined && append !== null && typeof append !== 'boolean') throw HearthError.badJson('append must be a boolean');
    checkIds(appId, pushkey);
    // No email address is ever bound to an account here, so no email pusher can match one.
    if (kind === 'email') throw new HearthError(400, 'M_THREEPID_NOT_FOUND', 'Email not found');
    if (kind !== 'http') throw HearthError.invalidParam(`Unknown pusher kind ${JSON.stringify(kind.slice(0, 40))}: only "http" is supported`);
    checkHttpData(data);

    await db.transaction().execute(async (trx) => {
      if (append !== true) await deleteOthersPushers(trx, appId, pushkey, requester.userId);
      // Another device updating a pusher (enabling, renaming) leaves it with the device that set it.
      const existing = await findPusher(trx, requester.userId, appId, pushkey);
      await upsertPusher(trx, {
        user_id: requester.userId,
        app_id: appId,
        pushkey,
        kind,
        app_display_name: appDisplayName,
        device_display_name: deviceDisplayName,
        profile_tag: profileTag,
        lang,
        data_json: JSON.stringify(data),
        device_id: existing !== undefined ? existing.device_id : requester.deviceId,
        created_ts: this.now(),
        // Kept by an update (upsertPusher leaves it alone).
        delivered_up_to: this.deps.eventsPosition?.() ?? -1,
      });
    });
    this.deps.onChange?.(requester.userId);
  }
}
