// Other servers' users' end-to-end keys, asked of their servers for /keys/query
// (/user/keys/query) and /keys/claim (/user/keys/claim), and a user's whole device list for the
// copy this server keeps (/user/devices). Each server is asked once, several at a time, all within
// the time the client gave. A server may speak only for the users and devices it was asked about:
// anything else in its answer is dropped, and so is a device key that does not name the user and
// device it is filed under. A server that cannot be asked, answers with an error or runs out of
// time is a failure naming the server and nothing more of what went wrong.

import { HearthError } from '../protocol/errors.js';
import { serverNameOf } from '../protocol/ids/accessors.js';
import { parseUserId } from '../protocol/ids/user-id.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import type { RemoteKeyFailures, RemoteKeys } from '../users/device-keys.js';
import type { DeviceListSource, KeptDevice } from '../users/remote-device-lists.js';
import { FederationError, type FederationRequest, type FederationResponse } from './client.js';

type Client = { request(req: FederationRequest): Promise<FederationResponse> };

/** Servers asked at the same time; the rest wait for a free slot (and the same deadline). */
const PARALLEL_SERVERS = 20;

type Asked = { readonly answer: JsonObject } | { readonly failure: JsonObject };

/** POSTs `body` to `server`, within what is left until `deadline`. */
async function ask(client: Client, server: string, path: string, body: JsonObject, deadline: number): Promise<Asked> {
  const timeoutMs = deadline - Date.now();
  if (timeoutMs <= 0) return { failure: { status: 503, message: `No time left to ask ${server}` } };
  let res: FederationResponse;
  try {
    res = await client.request({ destination: server, method: 'POST', path, body, timeoutMs });
  } catch (err) {
    const timedOut = err instanceof FederationError && err.reason === 'timeout';
    return { failure: { status: 503, message: timedOut ? `${server} did not answer in time` : `Could not reach ${server}` } };
  }
  if (res.status !== 200) return { failure: { status: res.status >= 400 && res.status < 600 ? res.status : 502, message: `${server} answered ${res.status}` } };
  if (!isJsonObject(res.body)) return { failure: { status: 502, message: `${server} did not answer with keys` } };
  return { answer: res.body };
}

/** Runs `each` over `items`, at most `PARALLEL_SERVERS` at a time. */
async function eachServer<T>(items: readonly T[], each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await each(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_SERVERS, items.length) }, worker));
}

/** A cross-signing key of `userId` for `usage`, or undefined when it is not one. */
export function crossSigningKeyOf(value: JsonValue | undefined, userId: string, usage: string): JsonObject | undefined {
  if (!isJsonObject(value) || value['user_id'] !== userId || !isJsonObject(value['keys'])) return undefined;
  const usages = value['usage'];
  return Array.isArray(usages) && usages.includes(usage) ? value : undefined;
}

/** Whether `keys` are device keys naming this user and device. */
export function namesDevice(keys: JsonValue | undefined, userId: string, deviceId: string): keys is JsonObject {
  return isJsonObject(keys) && keys['user_id'] === userId && keys['device_id'] === deviceId;
}

/** The devices of `userId` in `given` that were asked for (none asked: all), each naming its user and device. */
function devicesOf(given: JsonValue | undefined, userId: string, asked: readonly string[]): Record<string, JsonObject> | undefined {
  if (!isJsonObject(given)) return undefined;
  const wanted = asked.length === 0 ? undefined : new Set(asked);
  // fromEntries: a device ID such as "__proto__" stays a plain key.
  return Object.fromEntries(
    Object.entries(given).filter(
      (entry): entry is [string, JsonObject] => (wanted === undefined || wanted.has(entry[0])) && namesDevice(entry[1], userId, entry[0]),
    ),
  );
}

/** The one-time keys in `given` of the algorithm asked for. */
function oneTimeKeysOf(given: JsonValue | undefined, algorithm: string): JsonObject | undefined {
  if (!isJsonObject(given)) return undefined;
  const keys = Object.entries(given).filter(([keyId]) => keyId.startsWith(`${algorithm}:`));
  return keys.length > 0 ? Object.fromEntries(keys) : undefined;
}

const field = (answer: JsonObject, name: string): JsonObject => {
  const v = answer[name];
  return isJsonObject(v) ? v : {};
};

export function remoteKeys(client: Client): RemoteKeys {
  return {
    async query(wanted, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const out = {
        device_keys: {} as Record<string, Record<string, JsonObject>>,
        master_keys: {} as Record<string, JsonObject>,
        self_signing_keys: {} as Record<string, JsonObject>,
        failures: {} as RemoteKeyFailures,
      };
      await eachServer([...wanted], async ([server, users]) => {
        const asked = await ask(client, server, '/federation/v1/user/keys/query', { device_keys: users }, deadline);
        if ('failure' in asked) {
          out.failures[server] = asked.failure;
          return;
        }
        const devices = field(asked.answer, 'device_keys');
        const masters = field(asked.answer, 'master_keys');
        const selfSigning = field(asked.answer, 'self_signing_keys');
        // Only the users asked of this server are read from its answer.
        for (const [userId, deviceIds] of Object.entries(users)) {
          const found = devicesOf(devices[userId], userId, deviceIds);
          if (found !== undefined) out.device_keys[userId] = found;
          const master = crossSigningKeyOf(masters[userId], userId, 'master');
          if (master !== undefined) out.master_keys[userId] = master;
          const ssk = crossSigningKeyOf(selfSigning[userId], userId, 'self_signing');
          if (ssk !== undefined) out.self_signing_keys[userId] = ssk;
        }
      });
      return out;
    },

    async claim(wanted, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const out = { one_time_keys: {} as Record<string, Record<string, JsonObject>>, failures: {} as RemoteKeyFailures };
      await eachServer([...wanted], async ([server, users]) => {
        const asked = await ask(client, server, '/federation/v1/user/keys/claim', { one_time_keys: users }, deadline);
        if ('failure' in asked) {
          out.failures[server] = asked.failure;
          return;
        }
        const claimed = field(asked.answer, 'one_time_keys');
        for (const [userId, devices] of Object.entries(users)) {
          const forUser = claimed[userId];
          if (!isJsonObject(forUser)) continue;
          const keys = Object.entries(devices).flatMap(([deviceId, algorithm]): [string, JsonObject][] => {
            const found = oneTimeKeysOf(forUser[deviceId], algorithm);
            return found === undefined ? [] : [[deviceId, found]];
          });
          if (keys.length > 0) out.one_time_keys[userId] = Object.fromEntries(keys);
        }
      });
      return out;
    },
  };
}

/**
 * A user's whole device list from their server (GET /user/devices): `stream_id`, the devices whose
 * keys name the user and the device, and the user's master and self-signing keys.
 */
export function remoteDeviceListSource(client: Client): DeviceListSource {
  return {
    async deviceList(userId, timeoutMs) {
      const server = serverNameOf(parseUserId(userId));
      let res: FederationResponse;
      try {
        res = await client.request({ destination: server, method: 'GET', path: `/federation/v1/user/devices/${encodeURIComponent(userId)}`, timeoutMs });
      } catch {
        throw new HearthError(502, 'M_UNKNOWN', `Could not reach ${server} for a device list`);
      }
      const body = res.body;
      if (res.status !== 200 || !isJsonObject(body)) throw new HearthError(502, 'M_UNKNOWN', `${server} answered ${res.status} for a device list`);
      const streamId = body['stream_id'];
      const listed = body['devices'];
      if (body['user_id'] !== userId || !Number.isSafeInteger(streamId) || !Array.isArray(listed)) {
        throw new HearthError(502, 'M_UNKNOWN', `${server} did not answer with a device list`);
      }
      const devices = new Map<string, KeptDevice>();
      for (const d of listed) {
        if (!isJsonObject(d)) continue;
        const { device_id: deviceId, keys, device_display_name: name } = d;
        if (typeof deviceId !== 'string' || devices.has(deviceId) || !namesDevice(keys, userId, deviceId)) continue;
        devices.set(deviceId, { deviceId, keys, displayName: typeof name === 'string' ? name : null });
      }
      return {
        streamId: streamId as number,
        devices: [...devices.values()],
        masterKey: crossSigningKeyOf(body['master_key'], userId, 'master'),
        selfSigningKey: crossSigningKeyOf(body['self_signing_key'], userId, 'self_signing'),
      };
    },
  };
}
