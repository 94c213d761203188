import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeBase64, encodeBase64 } from '../../src/protocol/base64.js';
import { HearthError } from '../../src/protocol/errors.js';
import type { JsonObject } from '../../src/protocol/json.js';
import {
  encodeSigningKeyFile,
  generateSigningKey,
  parseSigningKeyFile,
  signedServers,
  signJson,
  signJsonDetached,
  signingKeyFromSeed,
  verifyJsonSignature,
  verifySignatureWithPublicKey,
} from '../../src/protocol/signing.js';
import { vectors } from '../data/signing/vectors.js';

// Spec appendices, "Cryptographic Test Vectors".
const SPEC_KEY = signingKeyFromSeed('ed25519:1', decodeBase64('YJDBA9Xnr2sVqXD9Vj7XVUnmFZcZrlw8Md7kMW+3XA1'));
const SIG_EMPTY =
  'K8280/U9SSy9IVtjBuVeLr+HpOB4BQFWbg+UZaADMtTdGYI7Geitb76LTrr5QV/7Xg4ahLwYGYZzuHGZKM5ZAQ';
const SIG_ONE_TWO =
  'KqmLSbO39/Bzb0QIYE82zqLwsA+PDzYIpIRA2sRQ4sL53+sN6/fpNSoqE7BP7vBZhG6kYdD13EIMJpvhJI+6Bw';

const keys = vectors.keys.map((k) => signingKeyFromSeed(k.keyId, decodeBase64(k.seed)));

function without(obj: JsonObject, ...omit: string[]): JsonObject {
  return Object.fromEntries(Object.entries(obj).filter(([k]) => !omit.includes(k)));
}

describe('spec test vectors', () => {
  test('signing {}', () => {
    assert.deepEqual(signJson({}, 'domain', SPEC_KEY), { signatures: { domain: { 'ed25519:1': SIG_EMPTY } } });
  });

  test('signing {"one":1,"two":"Two"}', () => {
    assert.deepEqual(signJson({ one: 1, two: 'Two' }, 'domain', SPEC_KEY), {
      one: 1,
      two: 'Two',
      signatures: { domain: { 'ed25519:1': SIG_ONE_TWO } },
    });
  });

  test('the vectors verify, and fail for other data', () => {
    const pk = SPEC_KEY.publicKey;
    assert.equal(verifySignatureWithPublicKey({}, SIG_EMPTY, pk), true);
    assert.equal(verifySignatureWithPublicKey({ one: 1, two: 'Two' }, SIG_ONE_TWO, pk), true);
    assert.equal(verifySignatureWithPublicKey({ one: 1, two: 'Two' }, SIG_EMPTY, pk), false);
    assert.equal(verifySignatureWithPublicKey({ one: 2, two: 'Two' }, SIG_ONE_TWO, pk), false);
  });
});

describe('signJson', () => {
  test('does not change its input, keeps unsigned and other signatures', () => {
    const input: JsonObject = {
      a: 1,
      unsigned: { age: 5 },
      signatures: { 'other.example': { 'ed25519:x': 'sigX' }, domain: { 'ed25519:old': 'sigOld' } },
    };
    const before = structuredClone(input);
    const out = signJson(input, 'domain', SPEC_KEY);
    assert.deepEqual(input, before);
    assert.deepEqual(out.unsigned, { age: 5 });
    assert.deepEqual(out.signatures, {
      'other.example': { 'ed25519:x': 'sigX' },
      domain: { 'ed25519:old': 'sigOld', 'ed25519:1': signJsonDetached({ a: 1 }, SPEC_KEY) },
    });
  });

  test('signatures and unsigned are not covered', () => {
    const plain = signJson({ one: 1, two: 'Two' }, 'domain', SPEC_KEY);
    const decorated = signJson({ one: 1, two: 'Two', unsigned: { x: [1] }, signatures: { s: {} } }, 'domain', SPEC_KEY);
    assert.deepEqual(decorated.signatures, { s: {}, domain: { 'ed25519:1': SIG_ONE_TWO } });
    assert.equal(verifyJsonSignature({ ...plain, unsigned: { added: 'later' } }, 'domain', 'ed25519:1', SPEC_KEY.publicKey), true);
  });

  test('strict canonical JSON refuses floats unless told otherwise', () => {
    assert.throws(() => signJson({ a: 1.5 }, 'domain', SPEC_KEY), (e) => e instanceof HearthError && e.errcode === 'M_BAD_JSON');
    const signed = signJson({ a: 1.5 }, 'domain', SPEC_KEY, { strict: false });
    assert.equal(verifyJsonSignature(signed, 'domain', 'ed25519:1', SPEC_KEY.publicKey, { strict: false }), true);
    // Verification with strict rules reports false rather than throwing.
    assert.equal(verifyJsonSignature(signed, 'domain', 'ed25519:1', SPEC_KEY.publicKey), false);
  });
});

describe('verification', () => {
  const signed = signJson({ body: 'hello', n: 3 }, 'domain', SPEC_KEY);
  const sig = signJsonDetached({ body: 'hello', n: 3 }, SPEC_KEY);

  test('accepts the key as bytes or unpadded base64', () => {
    assert.equal(verifySignatureWithPublicKey(signed, sig, SPEC_KEY.publicKey), true);
    assert.equal(verifySignatureWithPublicKey(signed, sig, encodeBase64(SPEC_KEY.publicKey)), true);
    assert.equal(verifyJsonSignature(signed, 'domain', 'ed25519:1', encodeBase64(SPEC_KEY.publicKey)), true);
  });

  test('rejects another key, a changed object, a changed signature', () => {
    assert.equal(verifySignatureWithPublicKey(signed, sig, keys[0]!.publicKey), false);
    assert.equal(verifySignatureWithPublicKey({ ...signed, n: 4 }, sig, SPEC_KEY.publicKey), false);
    assert.equal(verifySignatureWithPublicKey({ ...signed, extra: null }, sig, SPEC_KEY.publicKey), false);
    const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
    assert.equal(verifySignatureWithPublicKey(signed, flipped, SPEC_KEY.publicKey), false);
  });

  test('returns false, never throws, for malformed input', () => {
    const pk = SPEC_KEY.publicKey;
    assert.equal(verifySignatureWithPublicKey(signed, 'not base64!', pk), false);
    assert.equal(verifySignatureWithPublicKey(signed, sig.slice(0, 40), pk), false);
    assert.equal(verifySignatureWithPublicKey(signed, sig + 'AAAA', pk), false);
    assert.equal(verifySignatureWithPublicKey(signed, 42 as unknown as string, pk), false);
    assert.equal(verifySignatureWithPublicKey(signed, sig, pk.subarray(0, 31)), false);
    assert.equal(verifySignatureWithPublicKey(signed, sig, 'short'), false);
    assert.equal(verifySignatureWithPublicKey(signed, sig, '%%%'), false);
    assert.equal(verifySignatureWithPublicKey({ bad: '\ud800' }, sig, pk), false);
    assert.equal(verifySignatureWithPublicKey({ big: 2 ** 60 }, sig, pk), false);
  });

  test('verifyJsonSignature is false when the signature is missing or misshapen', () => {
    const pk = SPEC_KEY.publicKey;
    assert.equal(verifyJsonSignature(signed, 'domain', 'ed25519:1', pk), true);
    assert.equal(verifyJsonSignature(signed, 'other', 'ed25519:1', pk), false);
    assert.equal(verifyJsonSignature(signed, 'domain', 'ed25519:2', pk), false);
    assert.equal(verifyJsonSignature({ ...signed, signatures: 'x' }, 'domain', 'ed25519:1', pk), false);
    assert.equal(verifyJsonSignature({ ...signed, signatures: { domain: [sig] } }, 'domain', 'ed25519:1', pk), false);
    assert.equal(verifyJsonSignature({ ...signed, signatures: { domain: { 'ed25519:1': 7 } } }, 'domain', 'ed25519:1', pk), false);
    assert.equal(verifyJsonSignature({ body: 'hello', n: 3 }, 'domain', 'ed25519:1', pk), false);
  });
});

test('signedServers lists string signatures by server and key id', () => {
  const obj: JsonObject = {
    signatures: {
      a: { 'ed25519:1': 's1', 'ed25519:2': 's2', 'curve:x': 's3', bad: 5 },
      b: { 'ed25519:z': 'sz' },
      c: 'nope',
      d: {},
    },
  };
  const servers = signedServers(obj);
  assert.deepEqual([...servers.keys()], ['a', 'b']);
  assert.deepEqual([...servers.get('a')!], [['ed25519:1', 's1'], ['ed25519:2', 's2'], ['curve:x', 's3']]);
  assert.deepEqual([...servers.get('b')!], [['ed25519:z', 'sz']]);
  assert.equal(signedServers({}).size, 0);
  assert.equal(signedServers({ signatures: [] }).size, 0);
});

describe('keys', () => {
  test('seed gives the same public key as PyNaCl', () => {
    for (let i = 0; i < keys.length; i++) {
      assert.equal(encodeBase64(keys[i]!.publicKey), vectors.keys[i]!.publicKey);
      assert.equal(keys[i]!.keyId, vectors.keys[i]!.keyId);
      assert.equal(keys[i]!.secretKey.length, 64);
    }
  });

  test('reads and writes the signing-key file format signedjson writes', () => {
    const parsed = parseSigningKeyFile(vectors.keyFile);
    assert.deepEqual(
      parsed.map((k) => [k.keyId, encodeBase64(k.seed), encodeBase64(k.publicKey)]),
      vectors.keys.map((k) => [k.keyId, k.seed, k.publicKey]),
    );
    assert.equal(encodeSigningKeyFile(parsed), vectors.keyFile);
    assert.equal(encodeSigningKeyFile(parsed[0]!), vectors.keyFile.split('\n')[0] + '\n');
  });

  test('key files: blank lines, comments, CRLF and padded seeds are accepted', () => {
    const seed = vectors.keys[1]!.seed;
    const parsed = parseSigningKeyFile(`\n# old key below\r\ned25519 a_x1 ${seed}=\r\n\n`);
    assert.equal(parsed.length, 1);
    assert.equal(parsed[0]!.keyId, 'ed25519:a_x1');
    assert.equal(encodeBase64(parsed[0]!.publicKey), vectors.keys[1]!.publicKey);
  });

  test('key files: malformed lines are refused with their line number', () => {
    const seed = vectors.keys[0]!.seed;
    const bad = [
      `ed25519 a_1`,
      `ed25519 a_1 ${seed} extra`,
      `curve25519 a_1 ${seed}`,
      `ed25519 a_1 ${seed.slice(4)}`,
      `ed25519 a_1 ${seed.slice(0, -1)}!`,
      `ed25519 bad-version ${seed}`,
    ];
    for (const line of bad) {
      assert.throws(
        () => parseSigningKeyFile(`ed25519 ok ${seed}\n${line}\n`),
        (e) => e instanceof HearthError && /line 2/.test(e.message),
        line,
      );
    }
  });

  test('generated keys: version format, randomness, and they sign and verify', () => {
    const a = generateSigningKey();
    const b = generateSigningKey();
    assert.match(a.keyId, /^ed25519:a_[A-Za-z0-9]{4}$/);
    assert.notDeepEqual([...a.seed], [...b.seed]);
    assert.equal(generateSigningKey('auto').keyId, 'ed25519:auto');
    const again = signingKeyFromSeed(a.keyId, a.seed);
    assert.deepEqual([...again.publicKey], [...a.publicKey]);
    const signed = signJson({ x: 'y' }, 'me', a);
    assert.equal(verifyJsonSignature(signed, 'me', a.keyId, a.publicKey), true);
    assert.equal(verifyJsonSignature(signed, 'me', a.keyId, b.publicKey), false);
  });

  test('invalid key ids, versions and seeds are refused', () => {
    const seed = new Uint8Array(32);
    assert.throws(() => generateSigningKey('a-b'), HearthError);
    assert.throws(() => generateSigningKey(''), HearthError);
    assert.throws(() => signingKeyFromSeed('curve25519:1', seed), HearthError);
    assert.throws(() => signingKeyFromSeed('ed25519:', seed), HearthError);
    assert.throws(() => signingKeyFromSeed('ed25519:1', new Uint8Array(31)), HearthError);
    assert.equal(signingKeyFromSeed('ed25519:Ok_9', seed).keyId, 'ed25519:Ok_9');
  });
});

describe('cross-check with signedjson', () => {
  test(`${vectors.json.length} objects signed by one to three servers`, () => {
    for (const [i, c] of vectors.json.entries()) {
      let obj = without(c.signed, 'signatures');
      for (const [s, k] of c.steps) obj = signJson(obj, vectors.servers[s]!, keys[k]!);
      assert.deepEqual(obj, c.signed, `case ${i}`);
    }
  });

  test('every signature verifies with the key that made it, and fails with the others', () => {
    for (const [i, c] of vectors.json.entries()) {
      for (const [s, k] of c.steps) {
        const server = vectors.servers[s]!;
        const keyId = keys[k]!.keyId;
        assert.equal(verifyJsonSignature(c.signed, server, keyId, keys[k]!.publicKey), true, `case ${i}`);
        assert.equal(verifyJsonSignature(c.signed, server, keyId, keys[(k + 1) % keys.length]!.publicKey), false);
      }
      const servers = signedServers(c.signed);
      const expected = new Set(c.steps.map(([s]) => vectors.servers[s]!));
      assert.deepEqual(new Set(servers.keys()), expected, `case ${i}`);
    }
  });
});
