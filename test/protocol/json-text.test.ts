import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OWN_JSON, stringifyJson } from '../../src/protocol/json-text.js';

describe('stringifyJson', () => {
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

  test('toJSON is honoured at every depth', () => {
    const v = { a: [{ b: new Date(0), c: { toJSON: () => ({ d: [1, undefined] }) } }] };
    assert.equal(stringifyJson(v), JSON.stringify(v));
  });

  test('an object with a writer writes itself, anywhere within the walked depth', () => {
    const own = (text: string) => ({ x: 1, [OWN_JSON]: () => text });
    // A sync response's event: rooms.join.<room>.timeline.events[i], at depth 6.
    const body = { rooms: { join: { '!r': { timeline: { events: [own('{"mine":true}'), { plain: [own('{"y":2}')] }] } } } }, top: own('[3]') };
    assert.deepEqual(JSON.parse(stringifyJson(body)!), {
      rooms: { join: { '!r': { timeline: { events: [{ mine: true }, { plain: [{ x: 1 }] }] } } } },
      top: [3],
    });
  });

  test('a writer that declines is written as JSON.stringify would', () => {
    const v = { e: { a: [1, { b: 2 }], [OWN_JSON]: () => undefined } };
    assert.equal(stringifyJson(v), JSON.stringify(v));
  });

  test('what has no JSON form: left out of objects, null in arrays, undefined alone', () => {
    const skip = { [OWN_JSON]: () => undefined, toJSON: () => undefined };
    assert.equal(stringifyJson({ a: undefined, b: [undefined, () => 1, { c: 1 }], d: skip, e: { f: {} } }), '{"b":[null,null,{"c":1}],"e":{"f":{}}}');
    assert.equal(stringifyJson(undefined), undefined);
  });
});
