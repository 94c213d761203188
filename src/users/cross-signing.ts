// Cross-signing (client-server API, "Cross-signing"): each user's master, self-signing and
// user-signing keys (POST /keys/device_signing/upload), the signatures made with them or with
// devices (POST /keys/signatures/upload), and what /keys/query shows of both.
//
// Who sees which signature: everyone sees the signatures a user made on their own keys (their
// self-signing key on their devices, their devices on their master key); a signature made with a
// user-signing key on another user's master key is seen only by its signer. Changes reach sync
// through the device_lists stream the same way. Other servers hear of changes everyone may see
// through the `outbound` port (m.signing_key_update, m.device_list_update).

import type { Kysely } from 'kysely';
import type { Requester } from './requester.js';
import { HearthError } from '../protocol/errors.js';
import { serverNameOf, tryParseUserId } from '../protocol/ids.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import { verifyJsonSignature } from '../protocol/signing.js';
import type { Schema } from '../storage/schema.js';
import {
  deleteSignaturesMadeWith,
  deleteSignaturesOn,
  selectCrossSigningKeys,
  selectExistingDeviceIds,
  selectVisibleSignatures,
  upsertCrossSigningKey,
  upsertSignatures,
  type CrossSigningKeyType,
  type StoredCrossSigningKey,
  type StoredSignature,
} from '../storage/user-data/cross-signing.js';
import { selectKeysOfDevices } from '../storage/user-data/device-keys.js';
import { insertDeviceListChange, insertPrivateDeviceListChanges } from '../storage/user-data/device-lists.js';
import type { StreamBus } from '../streams/bus.js';
import {
  deviceSignature,
  masterKeySignatures,
  parseCrossSigningKey,
  SignatureFailure,
  signatureBy,
} from './cross-signing-checks.js';
import { sameJson, type DeviceListOutbound } from './device-keys.js';
import { passwordStage } from './password-stage.js';
import { STAGE_PASSWORD, UserInteractiveAuth } from './uia.js';

const UPLOAD_FIELDS: readonly (readonly [string, CrossSigningKeyType])[] = [
  ['master_key', 'master'],
  ['self_signing_key', 'self_signing'],
  ['user_signing_key', 'user_signing'],
];
const UPLOAD_OPERATION = 'POST /keys/device_signing/upload';
const MAX_SIGNED_KEYS = 1000;

export interface CrossSigningServiceDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
  readonly serverName: string;
  /** Every user joined to a room the user is joined to. */
  readonly usersSharingRooms: (userId: string) => Promise<Set<string>>;
  /** Replacing cross-signing keys needs the account's password. */
  readonly uia: UserInteractiveAuth;
  /** Other servers are told of changes everyone may see; without it (federation off), nobody is. */
  readonly outbound?: Pick<DeviceListOutbound, 'devicesChanged' | 'signingKeysChanged' | 'send'>;
}

/** User-interactive auth by the account's password: what replacing cross-signing keys asks for. */
export function passwordAuth(db: Kysely<Schema>, serverName: string): UserInteractiveAuth {
  return new UserInteractiveAuth({ db, now: Date.now, stages: { [STAGE_PASSWORD]: passwordStage(db, serverName) } });
}

/** What /keys/query adds for cross-signing. */
export interface CrossSigningQueryResult {
  master_keys: JsonObject;
  self_signing_keys: JsonObject;
  user_signing_keys: JsonObject;
}

export class CrossSigningService {
  constructor(private readonly deps: CrossSigningServiceDeps) {}

  /**
   * POST /keys/device_signing/upload. Keys identical to those stored are accepted as they are;
   * anything else needs the password once a master key exists (application services excepted).
   * A self-signing or user-signing key must carry a valid signature by the master key.
   */
  async uploadKeys(requester: Requester, body: JsonObject): Promise<JsonObject> {
    const { userId } = requester;
    const given = new Map<CrossSigningKeyType, JsonValue>();
    for (const [field, type] of UPLOAD_FIELDS) {
      const value = body[field];
      if (value === undefined) continue;
      if (!isJsonObject(value)) throw HearthError.badJson(`'${field}' must be an object`);
      given.set(type, value);
    }
    const stored = (await selectCrossSigningKeys(this.deps.db, [userId])).get(userId) ?? new Map<CrossSigningKeyType, StoredCrossSigningKey>();
    const changing = [...given.entries()].filter(([type, key]) => {
      const old = stored.get(type);
      return old === undefined || !sameJson(old.key, key);
    });
    if (changing.length === 0) return {};

    const session =
      stored.has('master') && requester.appserviceId === undefined
        ? await this.deps.uia.authenticate({ operation: UPLOAD_OPERATION, userId, flows: [[STAGE_PASSWORD]], auth: body['auth'] })
        : undefined;

    const parsed = new Map<CrossSigningKeyType, StoredCrossSigningKey>();
    for (const [field, type] of UPLOAD_FIELDS) {
      const value = given.get(type);
      if (value !== undefined) parsed.set(type, parseCrossSigningKey(value, field, type, userId));
    }
    const master = parsed.get('master') ?? stored.get('master');
    if (master === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'No master key available');
    for (const type of ['self_signing', 'user_signing'] as const) {
      const key = parsed.get(type);
      if (key !== undefined && !verifyJsonSignature(key.key, userId, `ed25519:${master.publicKey}`, master.publicKey, { strict: false })) {
        throw new HearthError(400, 'M_INVALID_SIGNATURE', `Invalid signature on the ${type} key`);
      }
    }
    // Device IDs and cross-signing public keys share one namespace (ed25519:<id>).
    const clashing = await selectExistingDeviceIds(this.deps.db, userId, [...parsed.values()].map((k) => k.publicKey));
    if (clashing.length > 0) throw HearthError.forbidden('Key ID in use');

    const changedTypes = new Set(changing.map(([type]) => type));
    const shared = changedTypes.has('master') || changedTypes.has('self_signing');
    const change = await this.deps.db.transaction().execute(async (trx) => {
      for (const type of changedTypes) {
        const key = parsed.get(type)!;
        const old = stored.get(type);
        if (old !== undefined && old.publicKey !== key.publicKey) {
          // Signatures on a replaced master key, or made with a replaced signing key, mean nothing now.
          if (type === 'master') await deleteSignaturesOn(trx, userId, [old.publicKey]);
          else await deleteSignaturesMadeWith(trx, userId, [`ed25519:${old.publicKey}`]);
        }
        await upsertCrossSigningKey(trx, userId, type, key);
      }
      // A new user-signing key concerns only its owner's devices.
      if (!shared) return { position: await insertPrivateDeviceListChanges(trx, [userId], userId), destinations: [] };
      const at = await insertDeviceListChange(trx, userId);
      return { position: at, destinations: (await this.deps.outbound?.signingKeysChanged(trx, userId)) ?? [] };
    });
    if (session !== undefined) await this.deps.uia.finish(session);
    this.send(change.destinations);
    await (shared ? this.announce(userId, change.position) : this.tellOnly(userId, change.position));
    return {};
  }

  /**
   * POST /keys/signatures/upload: signatures of the requester's devices by its self-signing key,
   * of its master key by its devices, and of other users' master keys by its user-signing key.
   * Each signed object must be the stored key plus the new signatures; each signature is verified.
   */
  async uploadSignatures(requester: Requester, body: JsonObject): Promise<{ failures: JsonObject }> {
    const { userId } = requester;
    let count = 0;
    for (const [user, keys] of Object.entries(body)) {
      if (!isJsonObject(keys)) throw HearthError.badJson(`${user.slice(0, 100)} must map key IDs to signed keys`);
      for (const [keyId, signed] of Object.entries(keys)) {
        if (!isJsonObject(signed)) throw HearthError.badJson(`${user.slice(0, 100)}.${keyId.slice(0, 100)} must be a signed key object`);
        count++;
      }
    }
    if (count > MAX_SIGNED_KEYS) throw HearthError.tooLarge(`At most ${MAX_SIGNED_KEYS} signed keys per upload`);

    const failures: Record<string, Record<string, JsonObject>> = {};
    const fail = (user: string, keyId: string, f: SignatureFailure) => ((failures[user] ??= {})[keyId] = f.toJson());
    // Only local users' keys are known here.
    const targets = Object.keys(body).filter((u) => {
      const id = u === userId ? undefined : tryParseUserId(u);
      return id !== undefined && serverNameOf(id) === this.deps.serverName;
    });
    const keys = await selectCrossSigningKeys(this.deps.db, [userId, ...targets]);
    const own = keys.get(userId);
    const accepted: StoredSignature[] = [];

    const ownSigned = body[userId];
    if (isJsonObject(ownSigned) && Object.keys(ownSigned).length > 0) {
      const devices = new Map((await selectKeysOfDevices(this.deps.db, userId, undefined)).map((d) => [d.deviceId, d.keys]));
      for (const [keyId, signed] of Object.entries(ownSigned)) {
        try {
          const master = own?.get('master');
          const found =
            master !== undefined && keyId === master.publicKey
              ? masterKeySignatures(userId, signed as JsonObject, master, devices)
              : deviceSignature(userId, keyId, signed as JsonObject, devices.get(keyId), own?.get('self_signing'));
          accepted.push(...found);
        } catch (err) {
          if (!(err instanceof SignatureFailure)) throw err;
          fail(userId, keyId, err);
        }
      }
    }

    const usk = own?.get('user_signing');
    for (const [target, signedKeys] of Object.entries(body)) {
      if (target === userId) continue;
      for (const [keyId, signed] of Object.entries(signedKeys as JsonObject)) {
        try {
          if (usk === undefined) throw new SignatureFailure(404, 'M_NOT_FOUND', `No user_signing key found for ${userId}`);
          if (tryParseUserId(target) === undefined) throw new SignatureFailure(400, 'M_INVALID_PARAM', 'Not a user ID');
          const master = keys.get(target)?.get('master');
          if (master === undefined) throw new SignatureFailure(404, 'M_NOT_FOUND', `No master key found for ${target}`);
          if (keyId !== master.publicKey) throw new SignatureFailure(404, 'M_NOT_FOUND', 'Unknown key: only master keys of other users can be signed');
          accepted.push(signatureBy(userId, usk, target, master, signed as JsonObject));
        } catch (err) {
          if (!(err instanceof SignatureFailure)) throw err;
          fail(target, keyId, err);
        }
      }
    }

    await this.store(userId, accepted, own?.get('master')?.publicKey);
    return { failures };
  }

  /**
   * For /keys/query: the cross-signing keys of these local users as `viewer` may see them, and the
   * signatures on their devices merged into `deviceKeys` (user → device → keys, changed in place).
   */
  async keysForQuery(viewer: string, userIds: readonly string[], deviceKeys: Record<string, Record<string, JsonObject>>): Promise<CrossSigningQueryResult> {
    const out: CrossSigningQueryResult = { master_keys: {}, self_signing_keys: {}, user_signing_keys: {} };
    const keys = await selectCrossSigningKeys(this.deps.db, userIds);
    // Signatures exist only for users with cross-signing keys.
    if (keys.size === 0) return out;
    const byTarget = new Map<string, StoredSignature[]>();
    for (const s of await selectVisibleSignatures(this.deps.db, [...keys.keys()], viewer)) {
      const id = `${s.targetUserId}\u0000${s.targetKeyId}`;
      const list = byTarget.get(id);
      if (list === undefined) byTarget.set(id, [s]);
      else list.push(s);
    }
    const on = (userId: string, keyId: string) => byTarget.get(`${userId}\u0000${keyId}`) ?? [];
    for (const [userId, userKeys] of keys) {
      const master = userKeys.get('master');
      if (master !== undefined) out.master_keys[userId] = withSignatures(master.key, on(userId, master.publicKey));
      const ssk = userKeys.get('self_signing');
      if (ssk !== undefined) out.self_signing_keys[userId] = ssk.key;
      const usk = userKeys.get('user_signing');
      if (usk !== undefined && userId === viewer) out.user_signing_keys[userId] = usk.key;
      const devices = deviceKeys[userId];
      if (devices === undefined) continue;
      for (const [deviceId, device] of Object.entries(devices)) {
        const signatures = on(userId, deviceId);
        if (signatures.length > 0) devices[deviceId] = withSignatures(device, signatures);
      }
    }
    return out;
  }

  /** Stores the signatures not stored yet and announces them (`masterKey`: the signer's master public key). */
  private async store(userId: string, accepted: readonly StoredSignature[], masterKey: string | undefined): Promise<void> {
    if (accepted.length === 0) return;
    const targets = [...new Set(accepted.map((s) => s.targetUserId))];
    const known = new Map<string, string>();
    for (const s of await selectVisibleSignatures(this.deps.db, targets, userId)) known.set(signatureId(s), s.signature);
    const fresh = accepted.filter((s) => known.get(signatureId(s)) !== s.signature);
    if (fresh.length === 0) return;
    const others = [...new Set(fresh.filter((s) => s.targetUserId !== userId).map((s) => s.targetUserId))];
    const ownTargets = new Set(fresh.filter((s) => s.targetUserId === userId).map((s) => s.targetKeyId));
    const positions = await this.deps.db.transaction().execute(async (trx) => {
      await upsertSignatures(trx, fresh);
      const own = ownTargets.size > 0 ? await insertDeviceListChange(trx, userId) : undefined;
      const destinations = new Set<string>();
      if (own !== undefined && this.deps.outbound !== undefined) {
        // A signed master key is news of the signing keys; signed devices, of those devices.
        const devices = [...ownTargets].filter((k) => k !== masterKey);
        if (devices.length > 0) for (const d of await this.deps.outbound.devicesChanged(trx, userId, devices, own)) destinations.add(d);
        if (masterKey !== undefined && ownTargets.has(masterKey)) for (const d of await this.deps.outbound.signingKeysChanged(trx, userId)) destinations.add(d);
      }
      return {
        own,
        destinations,
        // What the user-signing key signed concerns only the signer's own devices.
        others: others.length > 0 ? await insertPrivateDeviceListChanges(trx, others, userId) : undefined,
      };
    });
    this.send([...positions.destinations]);
    if (positions.own !== undefined) await this.announce(userId, positions.own);
    if (positions.others !== undefined) this.tellOnly(userId, positions.others);
  }

  private async announce(userId: string, position: number): Promise<void> {
    const users = await this.deps.usersSharingRooms(userId);
    users.add(userId);
    this.deps.notifier.notify({ stream: 'device_lists', position, userIds: [...users] });
  }

  private send(destinations: readonly string[]): void {
    if (destinations.length > 0) this.deps.outbound?.send(destinations);
  }

  private tellOnly(userId: string, position: number): void {
    this.deps.notifier.notify({ stream: 'device_lists', position, userIds: [userId] });
  }
}

/** A copy of `obj` with these signatures added to the ones it carries. */
export function withSignatures(obj: JsonObject, signatures: readonly StoredSignature[]): JsonObject {
  if (signatures.length === 0) return obj;
  const merged: JsonObject = {};
  const carried = obj['signatures'];
  if (isJsonObject(carried)) for (const [user, sigs] of Object.entries(carried)) merged[user] = isJsonObject(sigs) ? { ...sigs } : sigs;
  for (const s of signatures) {
    const forUser = merged[s.signerUserId];
    merged[s.signerUserId] = { ...(isJsonObject(forUser) ? forUser : {}), [s.signingKeyId]: s.signature };
  }
  return { ...obj, signatures: merged };
}

function signatureId(s: StoredSignature): string {
  return `${s.signerUserId}\u0000${s.signingKeyId}\u0000${s.targetUserId}\u0000${s.targetKeyId}`;
}
