import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  decodeBase64,
  decodeBase64Strict,
  encodeBase64,
  encodeBase64Url,
} from '../../src/protocol/base64.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

// RFC 4648 section 10 with the padding removed (also the spec appendix's examples).
const RFC_VECTORS: [string, string][] = [
  ['', ''],
  ['f', 'Zg'],
  ['fo', 'Zm8'],
  ['foo', 'Zm9v'],
  ['foob', 'Zm9vYg'],
  ['fooba', 'Zm9vYmE'],
  ['foobar', 'Zm9vYmFy'],
];

describe('encode', () => {
  test('RFC 4648 vectors, unpadded', () => {
    for (const [plain, encoded] of RFC_VECTORS) {
      assert.equal(encodeBase64(bytes(plain)), encoded);
      assert.equal(encodeBase64Url(bytes(plain)), encoded);
    }
  });

  test('the two alphabets differ only in 62 and 63', () => {
    const b = Uint8Array.from([0xfb, 0xff, 0xbf]);
    assert.equal(encodeBase64(b), '+/+/');
    assert.equal(encodeBase64Url(b), '-_-_');
  });

  test('a longer input loses its padding', () => {
    assert.equal(encodeBase64(bytes('Hello World')), 'SGVsbG8gV29ybGQ');
  });

  test('agrees with btoa (padding removed) and views into larger buffers', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.nat(8), (arr, offset) => {
        const big = new Uint8Array(arr.length + offset + 3);
        big.set(arr, offset);
        const view = big.subarray(offset, offset + arr.length);
        const expected = btoa(String.fromCharCode(...arr)).replace(/=+$/, '');
        assert.equal(encodeBase64(view), expected);
        assert.equal(encodeBase64Url(view), expected.replaceAll('+', '-').replaceAll('/', '_'));
      }),
    );
  });
});

describe('decode', () => {
  test('accepts padded and unpadded input', () => {
    for (const [plain, encoded] of RFC_VECTORS) {
      const padded = encoded + '='.repeat((4 - (encoded.length % 4)) % 4);
      for (const input of [encoded, padded]) {
        assert.equal(text(decodeBase64(input)), plain);
        assert.equal(text(decodeBase64Strict(input)!), plain);
        assert.equal(text(decodeBase64(input, 'url')), plain);
        assert.equal(text(decodeBase64Strict(input, 'url')!), plain);
      }
    }
  });

  test('each alphabet decodes its own 62nd and 63rd characters', () => {
    assert.deepEqual([...decodeBase64Strict('+/+/')!], [0xfb, 0xff, 0xbf]);
    assert.deepEqual([...decodeBase64Strict('-_-_', 'url')!], [0xfb, 0xff, 0xbf]);
    assert.deepEqual([...decodeBase64('-_-_', 'url')], [0xfb, 0xff, 0xbf]);
  });

  test('strict decoding rejects characters outside the alphabet', () => {
    assert.equal(decodeBase64Strict('-_-_'), null);
    assert.equal(decodeBase64Strict('+/+/', 'url'), null);
    assert.equal(decodeBase64Strict('Zm9v!'), null);
    assert.equal(decodeBase64Strict('Zm 9v'), null);
    assert.equal(decodeBase64Strict('Zm9v\n'), null);
    assert.equal(decodeBase64Strict('Zé'), null);
  });

  test('strict decoding rejects impossible lengths and misplaced padding', () => {
    assert.equal(decodeBase64Strict('Z'), null); // 6 bits cannot end a byte string
    assert.equal(decodeBase64Strict('Zm9vY'), null);
    assert.equal(decodeBase64Strict('Zg='), null); // padded, but not to a multiple of 4
    assert.equal(decodeBase64Strict('Z==='), null);
    assert.equal(decodeBase64Strict('=Zg'), null);
    assert.equal(decodeBase64Strict('Zg==Zg'), null);
    assert.equal(decodeBase64Strict('Zm9v===='), null);
    assert.equal(decodeBase64Strict('Zm9vYg=='.replace('==', '=')), null);
    // ...while the same characters correctly arranged are accepted.
    assert.deepEqual(text(decodeBase64Strict('Zg==')!), 'f');
    assert.deepEqual(text(decodeBase64Strict('Zm8=')!), 'fo');
  });

  test('round trip in both alphabets', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (arr) => {
        assert.deepEqual([...decodeBase64Strict(encodeBase64(arr))!], [...arr]);
        assert.deepEqual([...decodeBase64Strict(encodeBase64Url(arr), 'url')!], [...arr]);
        assert.deepEqual([...decodeBase64(encodeBase64(arr))], [...arr]);
      }),
    );
  });
});
