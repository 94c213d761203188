// The room server's ports to other servers (key ring, remote events), answered by fake remote
// servers: what federation will implement over the network.

import type { FoundKeys, KeyRequest, KeyRing } from '../../src/rooms/input/key-ring.js';
import type { RemoteEvents } from '../../src/rooms/input/remote-events.js';
import type { ServerVerifyKey } from '../../src/protocol/event-signatures.js';
import type { RemoteServer } from './remote-server.js';

/** A key ring holding the keys the remotes publish (asked afresh each time, so rotations show). */
export function keyRingOf(...remotes: RemoteServer[]): KeyRing {
  return {
    async verifyKeys(requests: readonly KeyRequest[]): Promise<FoundKeys> {
      const out = new Map<string, Map<string, ServerVerifyKey>>();
      for (const r of requests) {
        const remote = remotes.find((s) => s.serverName === r.serverName);
        const key = remote?.verifyKeyLookup(r.serverName, r.keyId);
        if (key === undefined) continue;
        let byId = out.get(r.serverName);
        if (byId === undefined) out.set(r.serverName, (byId = new Map()));
        byId.set(r.keyId, key);
      }
      return out;
    },
  };
}

/** Missing events asked of the remote named as the origin. */
export function remoteEventsOf(...remotes: RemoteServer[]): RemoteEvents {
  const named = (origin: string): RemoteServer => {
    const remote = remotes.find((s) => s.serverName === origin);
    if (remote === undefined) throw new Error(`no remote server ${origin}`);
    return remote;
  };
  return {
    events: async (origin, _roomId, ids) => [...(await named(origin).getEvents(ids)).values()],
    missingEvents: (origin, roomId, earliest, latest, limit) => named(origin).getMissingEvents(roomId, earliest, latest, limit),
    stateIdsAt: async (origin, _roomId, eventId) => {
      const answer = await named(origin).stateIdsAt(eventId);
      return { pduIds: answer.pdu_ids, authChainIds: answer.auth_chain_ids };
    },
    backfill: (origin, roomId, from, limit) => named(origin).backfill(roomId, from, limit),
  };
}
