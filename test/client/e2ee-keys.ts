// Keys for the end-to-end encryption tests, made with node:crypto's Ed25519 and a canonical JSON of
// their own (sorted keys; the tests use ASCII keys and no floats), independent of the server's
// signing code: device keys signed by their device, and cross-signing keys signed as clients do.

import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';

/** Canonical JSON for the tests' objects: keys sorted, no whitespace. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(obj[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

const unpadded = (b: Buffer) => b.toString('base64').replace(/=+$/, '');

export type Signed = Record<string, any>;

export class Ed25519Key {
  readonly publicKey: string;
  private readonly privateKey: KeyObject;

  constructor() {
    const pair = generateKeyPairSync('ed25519');
    this.privateKey = pair.privateKey;
    this.publicKey = unpadded(pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32));
  }

  /** The signature over `obj` without its `signatures` and `unsigned`. */
  signature(obj: Signed): string {
    const { signatures: _s, unsigned: _u, ...rest } = obj;
    return unpadded(sign(null, Buffer.from(canonical(rest), 'utf8'), this.privateKey));
  }

  /** A copy of `obj` signed as `userId` under `keyId` (default `ed25519:<public key>`). */
  sign(obj: Signed, userId: string, keyId = `ed25519:${this.publicKey}`): Signed {
    const signatures = { ...(obj['signatures'] ?? {}) };
    signatures[userId] = { ...(signatures[userId] ?? {}), [keyId]: this.signature(obj) };
    return { ...obj, signatures };
  }
}

/** A device's identity keys, signed by its own Ed25519 key. */
export function deviceKeys(userId: string, deviceId: string, key: Ed25519Key): Signed {
  return key.sign(
    {
      user_id: userId,
      device_id: deviceId,
      algorithms: ['m.olm.v1.curve25519-aes-sha2', 'm.megolm.v1.aes-sha2'],
      keys: { [`ed25519:${deviceId}`]: key.publicKey, [`curve25519:${deviceId}`]: `curve-${deviceId}` },
    },
    userId,
    `ed25519:${deviceId}`,
  );
}

export function crossSigningKey(userId: string, usage: string, key: Ed25519Key): Signed {
  return { user_id: userId, usage: [usage], keys: { [`ed25519:${key.publicKey}`]: key.publicKey } };
}

/** A user's three cross-signing keys, the self-signing and user-signing ones signed by the master key. */
export class CrossSigning {
  readonly master = new Ed25519Key();
  readonly selfSigning = new Ed25519Key();
  readonly userSigning = new Ed25519Key();

  constructor(readonly userId: string) {}

  get masterKey(): Signed {
    return crossSigningKey(this.userId, 'master', this.master);
  }
  get selfSigningKey(): Signed {
    return this.master.sign(crossSigningKey(this.userId, 'self_signing', this.selfSigning), this.userId);
  }
  get userSigningKey(): Signed {
    return this.master.sign(crossSigningKey(this.userId, 'user_signing', this.userSigning), this.userId);
  }

  /** The body of POST /keys/device_signing/upload with all three keys. */
  upload(extra: Signed = {}): Signed {
    return { master_key: this.masterKey, self_signing_key: this.selfSigningKey, user_signing_key: this.userSigningKey, ...extra };
  }
}

/** The `auth` of the password stage for the user (password "secret", as test accounts have). */
export function passwordAuth(userId: string, session: string, password = 'secret'): Signed {
  return { type: 'm.login.password', identifier: { type: 'm.id.user', user: userId }, password, session };
}
