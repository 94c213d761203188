import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BoundedCache } from '../../../src/protocol/push-rules/bounded-cache.js';

test('holds at most maxEntries, evicting entries not read since the last sweep', () => {
  const cache = new BoundedCache<string, number>(3, 1000);
  cache.set('a', 1, 1);
  cache.set('b', 2, 1);
  cache.set('c', 3, 1);
  cache.set('d', 4, 1); // sweep: a, b, c were new, so each gets its second chance; a goes
  assert.equal(cache.size, 3);
  assert.equal(cache.get('a'), undefined);
  assert.equal(cache.get('d'), 4);
  assert.equal(cache.get('b'), 2);
  cache.set('e', 5, 1); // c was not read since the sweep: it goes, b and d stay
  assert.equal(cache.size, 3);
  assert.equal(cache.get('c'), undefined);
  assert.equal(cache.get('b'), 2);
  assert.equal(cache.get('d'), 4);
  assert.equal(cache.get('e'), 5);
});

test('a new entry survives the sweep it causes', () => {
  const cache = new BoundedCache<string, number>(2, 1000);
  cache.set('a', 1, 1);
  cache.set('b', 2, 1);
  cache.get('a');
  cache.get('b');
  cache.set('c', 3, 1);
  assert.equal(cache.get('c'), 3);
  assert.equal(cache.size, 2);
});

test('holds at most maxWeight; an entry heavier than that is not stored', () => {
  const cache = new BoundedCache<string, string>(100, 10);
  cache.set('a', 'A', 4);
  cache.set('b', 'B', 4);
  cache.set('c', 'C', 4);
  assert.ok(cache.weight <= 10);
  assert.equal(cache.size, 2);
  cache.set('huge', 'H', 11);
  assert.equal(cache.get('huge'), undefined);
  assert.ok(cache.weight <= 10);
});

test('replacing a key replaces its weight', () => {
  const cache = new BoundedCache<string, string>(10, 10);
  cache.set('a', 'x', 6);
  cache.set('a', 'y', 3);
  assert.equal(cache.get('a'), 'y');
  assert.equal(cache.weight, 3);
  cache.clear();
  assert.equal(cache.size, 0);
  assert.equal(cache.weight, 0);
});
