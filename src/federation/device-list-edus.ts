// News of this server's users' devices and cross-signing keys for the other servers sharing a room
// with them (server-server API, "Device Management" and "End-to-End Encryption"):
// `m.device_list_update` per device (created, renamed, deleted, its keys or their signatures
// changed) and `m.signing_key_update` (master or self-signing key). Built from what is stored,
// inside the transaction of the change, and queued durably in the EDU outbox there.
//
// `stream_id` is the change's position on the device_lists stream, the scale `/user/devices`
// answers on; `prev_id` is the user's previous change. A receiver that does not know it re-reads
// the whole list with /user/devices, which is always right, only slower.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../protocol/json.js';
import { listDevices } from '../storage/accounts/devices.js';
import { selectCrossSigningKeys, selectVisibleSignatures } from '../storage/user-data/cross-signing.js';
import { selectKeysOfDevices } from '../storage/user-data/device-keys.js';
import { previousDeviceListChange } from '../storage/user-data/device-lists.js';
import { serversSharingRoomsWith } from '../storage/federation/room-servers.js';
import type { Schema } from '../storage/schema.js';
import { withSignatures } from '../users/cross-signing.js';
import type { DeviceListOutbound } from '../users/device-keys.js';
import type { EduOutbox } from './edu-outbox.js';

/** Signatures made by the user's own keys only: what every other server may see. */
const NO_VIEWER = '';

export class DeviceListEdus implements DeviceListOutbound {
  constructor(private readonly deps: { readonly serverName: string; readonly outbox: Pick<EduOutbox, 'queue' | 'send'> }) {}

  async devicesChanged(trx: Kysely<Schema>, userId: string, deviceIds: readonly string[] | undefined, position: number): Promise<readonly string[]> {
    const destinations = await this.destinations(trx, userId);
    if (destinations.length === 0) return [];
    const devices = new Map((await listDevices(trx, userId)).map((d) => [d.device_id, d.display_name]));
    const ids = deviceIds ?? [...devices.keys()];
    const keys = new Map((await selectKeysOfDevices(trx, userId, ids)).map((k) => [k.deviceId, k.keys]));
    const signatures = keys.size > 0 ? await selectVisibleSignatures(trx, [userId], NO_VIEWER) : [];
    const prev = await previousDeviceListChange(trx, userId, position);
    for (const deviceId of new Set(ids)) {
      const content: JsonObject = { user_id: userId, device_id: deviceId, stream_id: position, prev_id: prev === undefined ? [] : [prev] };
      if (!devices.has(deviceId)) content['deleted'] = true;
      else {
        const name = devices.get(deviceId);
        if (typeof name === 'string') content['device_display_name'] = name;
        const deviceKeys = keys.get(deviceId);
        if (deviceKeys !== undefined) content['keys'] = withSignatures(deviceKeys, signatures.filter((s) => s.targetKeyId === deviceId));
      }
      await this.deps.outbox.queue(trx, destinations, 'm.device_list_update', content);
    }
    return destinations;
  }

  async signingKeysChanged(trx: Kysely<Schema>, userId: string): Promise<readonly string[]> {
    const destinations = await this.destinations(trx, userId);
    if (destinations.length === 0) return [];
    const keys = (await selectCrossSigningKeys(trx, [userId])).get(userId);
    const content: JsonObject = { user_id: userId };
    const master = keys?.get('master');
    if (master !== undefined) {
      const signatures = (await selectVisibleSignatures(trx, [userId], NO_VIEWER)).filter((s) => s.targetKeyId === master.publicKey);
      content['master_key'] = withSignatures(master.key, signatures);
    }
    const selfSigning = keys?.get('self_signing');
    if (selfSigning !== undefined) content['self_signing_key'] = selfSigning.key;
    await this.deps.outbox.queue(trx, destinations, 'm.signing_key_update', content);
    return destinations;
  }

  send(destinations: readonly string[]): void {
    this.deps.outbox.send(destinations);
  }

  private async destinations(trx: Kysely<Schema>, userId: string): Promise<string[]> {
    return (await serversSharingRoomsWith(trx, userId)).filter((s) => s !== this.deps.serverName);
  }
}
