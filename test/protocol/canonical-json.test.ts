import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson } from '../../src/protocol/canonical-json.js';

test('spec appendix examples', () => {
  assert.equal(canonicalJson({}), '{}');
  assert.equal(canonicalJson({ one: 1, two: 'Two' }), '{"one":1,"two":"Two"}');
  assert.equal(canonicalJson({ b: '2', a: '1' }), '{"a":"1","b":"2"}');
  assert.equal(
    canonicalJson({ auth: { success: true, mxid: '@john.doe:example.com', profile: { display_name: 'John Doe', three_pids: [{ medium: 'email', address: 'john.doe@example.org' }, { medium: 'msisdn', address: '123456789' }] } } }),
    '{"auth":{"mxid":"@john.doe:example.com","profile":{"display_name":"John Doe","three_pids":[{"address":"john.doe@example.org","medium":"email"},{"address":"123456789","medium":"msisdn"}]},"success":true}}',
  );
  assert.equal(canonicalJson({ a: '日本語' }), '{"a":"日本語"}');
  assert.equal(canonicalJson({ 本: 2, 日: 1 }), '{"日":1,"本":2}');
  assert.equal(canonicalJson({ a: '\u65E5' }), '{"a":"日"}');
  assert.equal(canonicalJson({ a: null }), '{"a":null}');
  assert.equal(canonicalJson({ a: -0 }), '{"a":0}');
  assert.equal(canonicalJson({ a: '\u0000\u001f\b\n"\\' }), '{"a":"\\u0000\\u001f\\b\\n\\"\\\\"}');
});

test('keys sort by code point, not UTF-16 unit', () => {
  // U+FF61 sorts before U+1F600 by code point, after its surrogates by UTF-16 units.
  assert.equal(canonicalJson({ '\u{1F600}': 1, '\uFF61': 2 }), '{"\uFF61":2,"\u{1F600}":1}');
});

test('strict mode rejects floats and out-of-range integers', () => {
  assert.throws(() => canonicalJson({ a: 1.5 }), /Floats/);
  assert.throws(() => canonicalJson({ a: 2 ** 53 }), /range/);
  assert.equal(canonicalJson({ a: 2 ** 53 - 1 }), '{"a":9007199254740991}');
  assert.equal(canonicalJson({ a: 1.5 }, { strict: false }), '{"a":1.5}');
  assert.throws(() => canonicalJson({ a: '\ud800' }), /surrogate/);
});
