// Inbound request authentication: a request to a federation route must carry an `X-Chat` or
// `X-Matrix` authorization that names this server as its destination (when it names one) and is
// signed by the origin with a key the key ring finds valid now.

import type { ServerAuthenticator, ServerSignedRequest } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';
import { isServerName } from '../protocol/ids/server-name.js';
import type { JsonValue } from '../protocol/json.js';
import { parseServerAuthorization, verifyRequestSignature } from '../protocol/request-auth.js';
import type { KeyRing } from '../rooms/input/key-ring.js';

export interface ServerAuthenticatorDeps {
  readonly serverName: string;
  readonly keyRing: KeyRing;
  readonly now?: () => number;
}

function unauthorized(message: string): HearthError {
  return new HearthError(401, 'M_UNAUTHORIZED', message);
}

export function serverAuthenticator(deps: ServerAuthenticatorDeps): ServerAuthenticator {
  const now = deps.now ?? Date.now;
  return async (req: ServerSignedRequest) => {
    let reason = 'Missing X-Chat or X-Matrix authorization';
    // One header per key the origin signed with: any valid one will do.
    for (const header of req.authorization) {
      const auth = parseServerAuthorization(header);
      if (auth === undefined) continue;
      if (typeof auth === 'string') {
        reason = auth;
        continue;
      }
      if (auth.destination !== undefined && auth.destination !== deps.serverName) {
        throw unauthorized(`The request is for ${auth.destination}, not this server`);
      }
      if (!isServerName(auth.origin)) {
        reason = 'The origin is not a server name';
        continue;
      }
      const at = now();
      const found = await deps.keyRing.verifyKeys([{ serverName: auth.origin, keyId: auth.key, validAt: at }]);
      const key = found.get(auth.origin)?.get(auth.key);
      if (key === undefined) {
        reason = `No key ${auth.key} of ${auth.origin} could be found`;
        continue;
      }
      if (key.validUntilTs < at) {
        reason = `Key ${auth.key} of ${auth.origin} is no longer valid`;
        continue;
      }
      const signed = {
        method: req.method,
        uri: req.uri,
        origin: auth.origin,
        destination: deps.serverName,
        ...(req.content !== undefined ? { content: req.content as JsonValue } : {}),
      };
      if (verifyRequestSignature(signed, auth.sig, key.publicKey)) return auth.origin;
      reason = `The signature of ${auth.origin} does not match the request`;
    }
    throw unauthorized(reason);
  };
}
