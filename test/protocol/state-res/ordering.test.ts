import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MinHeap,
  lexicographicalTopologicalSort,
  powerKeyLess,
  type PowerSortKey,
} from '../../../src/protocol/state-res/ordering.js';
import { compareCodePoints } from '../../../src/protocol/code-points.js';

const codePoint = fc.oneof(
  fc.integer({ min: 0, max: 0x7f }),
  fc.integer({ min: 0, max: 0xd7ff }),
  fc.integer({ min: 0xe000, max: 0xffff }),
  fc.integer({ min: 0x10000, max: 0x10ffff }),
);
const text = fc.array(codePoint, { maxLength: 6 }).map((cps) => String.fromCodePoint(...cps));

describe('compareCodePoints', () => {
  test('orders as UTF-8 bytes do (which is code point order)', () => {
    fc.assert(
      fc.property(text, text, (a, b) => {
        const expected = Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
        assert.equal(Math.sign(compareCodePoints(a, b)), expected);
      }),
      { numRuns: 2000 },
    );
  });

  test('puts U+10000 after U+FFFF, unlike UTF-16 order', () => {
    assert.ok('\u{10000}' < '\uffff');
    assert.ok(compareCodePoints('\u{10000}', '\uffff') > 0);
    assert.ok(compareCodePoints('$a', '$b') < 0);
    assert.ok(compareCodePoints('$a', '$ab') < 0);
    assert.equal(compareCodePoints('$x', '$x'), 0);
  });
});

test('MinHeap pops in ascending order', () => {
  fc.assert(
    fc.property(fc.array(fc.integer()), (values) => {
      const heap = new MinHeap<number>((a, b) => a < b);
      for (const v of values) heap.push(v);
      const out: number[] = [];
      for (let v = heap.pop(); v !== undefined; v = heap.pop()) out.push(v);
      assert.deepEqual(out, [...values].sort((a, b) => a - b));
    }),
  );
});

describe('power sort key', () => {
  const k = (id: string, power: number, ts: number): PowerSortKey => ({ id, power, ts });
  test('greater power first, then earlier timestamp, then smaller id', () => {
    assert.equal(powerKeyLess(k('$z', 100, 9), k('$a', 50, 1)), true);
    assert.equal(powerKeyLess(k('$a', 50, 1), k('$z', 100, 9)), false);
    assert.equal(powerKeyLess(k('$z', 50, 1), k('$a', 50, 2)), true);
    assert.equal(powerKeyLess(k('$a', 50, 2), k('$z', 50, 1)), false);
    assert.equal(powerKeyLess(k('$a', 50, 1), k('$b', 50, 1)), true);
    assert.equal(powerKeyLess(k('$b', 50, 1), k('$a', 50, 1)), false);
  });
});

describe('lexicographicalTopologicalSort', () => {
  const byName = (id: string): PowerSortKey => ({ id, power: 0, ts: 0 });
  const sort = (graph: Record<string, string[]>, members?: string[]) =>
    lexicographicalTopologicalSort(
      new Map(Object.entries(graph)),
      new Set(members ?? Object.keys(graph)),
      byName,
    );

  test('auth events come first; ties go to the smaller key', async () => {
    assert.deepEqual(await sort({ l: ['o'], m: ['n', 'o'], n: ['o'], o: [], p: ['o'] }), ['o', 'l', 'n', 'm', 'p']);
  });

  test('an auth path through a non-member still orders its ends', async () => {
    // a cites x, which cites z: z must precede a even though a's key is smaller.
    assert.deepEqual(await sort({ a: ['x'], x: ['z'], z: [], b: [] }, ['a', 'z', 'b']), ['b', 'z', 'a']);
  });

  test('power, then timestamp, then id among free events', async () => {
    const keys: Record<string, PowerSortKey> = {
      $low: { id: '$low', power: 0, ts: 1 },
      $high: { id: '$high', power: 100, ts: 5 },
      $early: { id: '$early', power: 50, ts: 2 },
      $late: { id: '$late', power: 50, ts: 3 },
    };
    const graph = new Map(Object.keys(keys).map((id) => [id, [] as string[]]));
    const out = await lexicographicalTopologicalSort(graph, new Set(graph.keys()), (id) => keys[id]!);
    assert.deepEqual(out, ['$high', '$early', '$late', '$low']);
  });

  test('events on an auth cycle are left out', async () => {
    assert.deepEqual(await sort({ a: ['b'], b: ['a'], c: [] }), ['c']);
  });
});
