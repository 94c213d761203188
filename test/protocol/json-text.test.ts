import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeJson, type JsonOut, OWN_JSON, stringifyJson } from '../../src/protocol/json-text.js';

describe('encodeJson', () => {
  test('without writers, the very text JSON.stringify writes', () => {
    const anything = fc.anything({
      maxDepth: 9,
      withBoxedValues: true,
      withNullPrototype: true,
      withSparseArray: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withTypedArray: true,
      values: [fc.jsonValue(), fc.constant(undefined), fc.constant(() => 1), fc.constant(Symbol('s'))],
    });
    fc.assert(fc.property(anything, (v) => assert.equal(stringifyJson(v), JSON.stringify(v))), { numRuns: 500 });
  });

  test('the bytes are the UTF-8 of that text, whatever the characters and lengths', () => {
    // Lone surrogates, emoji, long and short strings, as keys and values: JSON.stringify escapes
    // lone surrogates, so its text always has a UTF-8 form.
    const char = fc.oneof(
      fc.integer({ min: 0, max: 0x7ff }).map((c) => String.fromCharCode(c)),
      fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
      fc.constantFrom('👍', '\ud83d', '\udc4d', '€', '"', '\\'),
    );
    const text = fc.oneof(fc.string({ unit: char, maxLength: 80 }), fc.string({ unit: char, minLength: 40, maxLength: 300 }));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, text, fc.double(), fc.array(tie('node'), { maxLength: 5 }), fc.dictionary(text, tie('node'), { maxKeys: 5 })),
    })).node;
    fc.assert(
      fc.property(value, (v) => assert.deepEqual(encodeJson(v), Buffer.from(JSON.stringify(v), 'utf8'))),
      { numRuns: 500 },
    );
  });

  test('a body larger than the first buffer grows it, keeping what was written', () => {
    const big = { chunk: Array.from({ length: 3000 }, (_, i) => ({ key: `👍${i}`, n: i, s: 'x'.repeat(i % 70) })) };
    assert.deepEqual(encodeJson(big), Buffer.from(JSON.stringify(big)));
  });

  test('toJSON is honoured at every depth', () => {
    const v = { a: [{ b: new Date(0), c: { toJSON: () => ({ d: [1, undefined] }) } }] };
    assert.equal(stringifyJson(v), JSON.stringify(v));
  });

  test('an object with a writer writes itself, anywhere within the walked depth', () => {
    const own = (text: string) => ({
      x: 1,
      [OWN_JSON]: (_self: object, out: JsonOut) => {
        out.text(text);
        return true;
      },
    });
    // A sync response's event: rooms.join.<room>.timeline.events[i], at depth 6.
    const body = { rooms: { join: { '!r': { timeline: { events: [own('{"mine":true}'), { plain: [own('{"y":2}')] }] } } } }, top: own('[3]') };
    assert.deepEqual(JSON.parse(stringifyJson(body)!), {
      rooms: { join: { '!r': { timeline: { events: [{ mine: true }, { plain: [{ x: 1 }] }] } } } },
      top: [3],
    });
  });

  test('a writer that declines is written as JSON.stringify would', () => {
    const v = { e: { a: [1, { b: 2 }], [OWN_JSON]: () => false } };
    assert.equal(stringifyJson(v), JSON.stringify(v));
  });

  test('what has no JSON form: left out of objects, null in arrays, undefined alone', () => {
    const skip = { [OWN_JSON]: () => false, toJSON: () => undefined };
    assert.equal(stringifyJson({ a: undefined, b: [undefined, () => 1, { c: 1 }], d: skip, e: { f: {} } }), '{"b":[null,null,{"c":1}],"e":{"f":{}}}');
    assert.equal(stringifyJson(undefined), undefined);
  });
});
