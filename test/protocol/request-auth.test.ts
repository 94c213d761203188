import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeBase64 } from '../../src/protocol/base64.js';
import { parseServerAuthorization, requestAuthorization, verifyRequestSignature, type SignedRequest } from '../../src/protocol/request-auth.js';
import { signingKeyFromSeed, verifySignatureWithPublicKey } from '../../src/protocol/signing.js';

const KEY = signingKeyFromSeed('ed25519:a1', new Uint8Array(32).fill(7));
const REQUEST: SignedRequest = {
  method: 'PUT',
  uri: '/_matrix/federation/v1/send/txn1?x=%20y',
  origin: 'origin.example:8448',
  destination: 'dest.example',
  content: { pdus: [], edus: [{ edu_type: 'm.typing', content: {} }] },
};

describe('request authorization', () => {
  it('signs the request JSON the spec describes, and the header parses back', () => {
    const header = requestAuthorization('X-Matrix', REQUEST, KEY);
    assert.match(header, /^X-Matrix origin="origin\.example:8448",destination="dest\.example",key="ed25519:a1",sig="[A-Za-z0-9+/]+"$/);
    const parsed = parseServerAuthorization(header);
    assert.ok(typeof parsed === 'object');
    assert.deepEqual({ ...parsed, sig: undefined }, { scheme: 'X-Matrix', origin: 'origin.example:8448', destination: 'dest.example', key: 'ed25519:a1', sig: undefined });
    // The signature is over {method, uri, origin, destination, content}, checked independently.
    const json = { method: 'PUT', uri: REQUEST.uri, origin: REQUEST.origin, destination: REQUEST.destination, content: REQUEST.content! };
    assert.ok(verifySignatureWithPublicKey(json as never, parsed.sig, encodeBase64(KEY.publicKey)));
    assert.ok(verifyRequestSignature(REQUEST, parsed.sig, KEY.publicKey));
  });

  it('refuses a signature over anything else', () => {
    const parsed = parseServerAuthorization(requestAuthorization('X-Chat', REQUEST, KEY));
    assert.ok(typeof parsed === 'object' && parsed.scheme === 'X-Chat');
    for (const other of [
      { ...REQUEST, method: 'POST' },
      { ...REQUEST, uri: '/_matrix/federation/v1/send/txn2?x=%20y' },
      { ...REQUEST, origin: 'evil.example' },
      { ...REQUEST, destination: 'other.example' },
      { ...REQUEST, content: { pdus: [] } },
      { method: REQUEST.method, uri: REQUEST.uri, origin: REQUEST.origin, destination: REQUEST.destination },
    ]) {
      assert.equal(verifyRequestSignature(other, parsed.sig, KEY.publicKey), false);
    }
    assert.equal(verifyRequestSignature(REQUEST, 'not base64!', KEY.publicKey), false);
  });

  it('parses tokens and quoted strings in any order and case, with escapes', () => {
    const parsed = parseServerAuthorization('x-matrix  SIG = abc+/ , Key="ed25519:k" ,origin="a\\"b", destination=d.example');
    assert.deepEqual(parsed, { scheme: 'X-Matrix', origin: 'a"b', destination: 'd.example', key: 'ed25519:k', sig: 'abc+/' });
    assert.deepEqual(parseServerAuthorization('X-Chat origin=o,key=k,sig=s'), { scheme: 'X-Chat', origin: 'o', destination: undefined, key: 'k', sig: 's' });
  });

  it('leaves other schemes alone and says what is wrong with a malformed one', () => {
    assert.equal(parseServerAuthorization('Bearer abc'), undefined);
    assert.equal(parseServerAuthorization('X-Matrixorigin=a'), undefined);
    for (const bad of [
      'X-Matrix origin="a",key="k"',
      'X-Matrix origin="a,key="k",sig="s"',
      'X-Matrix origin=,key=k,sig=s',
      'X-Matrix origin="a" key="k",sig="s"',
      'X-Matrix origin=a,origin=b,key=k,sig=s',
      'X-Matrix =a',
    ]) {
      assert.equal(typeof parseServerAuthorization(bad), 'string', bad);
    }
  });
});
