// The NUL check on JSON bodies: the escape \u0000 is found in the text, an escaped backslash
// followed by "u0000" is not taken for one, and a body with NUL is refused with the place named,
// except in string values where a route allows it (never in keys).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJsonObjectBody } from '../../src/http/body.js';
import { hasNulEscape, refuseNulInParameters } from '../../src/http/nul.js';

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('hasNulEscape', () => {
  const cases: [string, boolean][] = [
    ['{"a":"b"}', false],
    ['{"a":"\\u0000"}', true],
    ['{"a":"x\\u0000y"}', true],
    ['{"\\u0000":1}', true],
    // An escaped backslash, then the letters u0000: no NUL.
    ['{"a":"\\\\u0000"}', false],
    // An escaped backslash, then a real escape.
    ['{"a":"\\\\\\u0000"}', true],
    ['{"a":"\\\\\\\\u0000"}', false],
    // A false candidate first, a real one later.
    ['{"a":"\\\\u0000","b":"\\u0000"}', true],
    ['{"a":"\\u0001\\u00000"}', true],
    ['{"a":"\\u00001"}', true],
    ['{"a":"u0000 \\u0020"}', false],
  ];
  for (const [text, expected] of cases) {
    test(`${text} → ${expected}`, () => {
      assert.equal(hasNulEscape(text), expected);
      // What JSON.parse makes of the text is the reference.
      let parsedHasNul = false;
      JSON.parse(text, (key, value: unknown) => {
        if (key.includes('\u0000') || (typeof value === 'string' && value.includes('\u0000'))) parsedHasNul = true;
        return value;
      });
      assert.equal(parsedHasNul, expected);
    });
  }

  test('a candidate at the very start of the buffer', () => {
    assert.equal(hasNulEscape('\\u0000'), true);
    assert.equal(hasNulEscape('\\\\u0000'), false);
  });
});

describe('parseJsonObjectBody and NUL', () => {
  test('refused anywhere with 400 M_BAD_JSON naming the place', () => {
    const place = (text: string) => {
      try {
        parseJsonObjectBody(bytes(text));
      } catch (err) {
        const e = err as { status: number; errcode: string; message: string };
        assert.equal(e.status, 400);
        assert.equal(e.errcode, 'M_BAD_JSON');
        return e.message;
      }
      assert.fail(`${text} was accepted`);
    };
    assert.match(place('{"a":"\\u0000"}'), /the body\.a$/);
    assert.match(place('{"a":{"b":[1,"x\\u0000"]}}'), /the body\.a\.b\[1\]$/);
    assert.match(place('{"a":{"k\\u0000":1}}'), /the key "k\\u0000" of the body\.a$/);
  });

  test('free text: strings keep NUL, keys still refuse it', () => {
    const options = { allowNulInStrings: true };
    assert.deepEqual(parseJsonObjectBody(bytes('{"body":"a\\u0000b","list":["\\u0000"]}'), options), { body: 'a\u0000b', list: ['\u0000'] });
    assert.throws(() => parseJsonObjectBody(bytes('{"x":{"\\u0000":"v"}}'), options), { status: 400, errcode: 'M_BAD_JSON' });
  });

  test('no NUL: the body as parsed, escaped backslashes included', () => {
    assert.deepEqual(parseJsonObjectBody(bytes('{"a":"\\\\u0000"}')), { a: '\\u0000' });
  });

  test('a raw NUL byte is not JSON', () => {
    assert.throws(() => parseJsonObjectBody(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0x00, 0x22, 0x7d])), { errcode: 'M_NOT_JSON' });
  });
});

describe('refuseNulInParameters', () => {
  test('path values, query values (repeated too) and query names: 400 M_INVALID_PARAM', () => {
    const bad = { status: 400, errcode: 'M_INVALID_PARAM' };
    assert.throws(() => refuseNulInParameters({ roomId: '!a\u0000' }, {}), bad);
    assert.throws(() => refuseNulInParameters({}, { from: 'x\u0000' }), bad);
    assert.throws(() => refuseNulInParameters({}, { via: ['a', 'b\u0000'] }), bad);
    assert.throws(() => refuseNulInParameters({}, { 'a\u0000': 'x' }), bad);
    refuseNulInParameters({ roomId: '!a:b', empty: '' }, { via: ['a', 'b'], limit: '1', none: undefined });
  });
});
