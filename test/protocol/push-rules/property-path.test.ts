import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePropertyPath, propertyAt } from '../../../src/protocol/push-rules/property-path.js';

test('dots separate names; \\. and \\\\ escape a dot and a backslash', () => {
  assert.deepEqual(parsePropertyPath('content.body'), ['content', 'body']);
  assert.deepEqual(parsePropertyPath('type'), ['type']);
  assert.deepEqual(parsePropertyPath('content.m\\.relates_to.rel_type'), [
    'content',
    'm.relates_to',
    'rel_type',
  ]);
  assert.deepEqual(parsePropertyPath('content.m\\\\foo'), ['content', 'm\\foo']);
  assert.deepEqual(parsePropertyPath('content.m\\\\.foo'), ['content', 'm\\', 'foo']);
});

test('other backslashes stay as written', () => {
  assert.deepEqual(parsePropertyPath('content.\\x'), ['content', '\\x']);
  assert.deepEqual(parsePropertyPath('content.end\\'), ['content', 'end\\']);
});

test('empty names are names', () => {
  assert.deepEqual(parsePropertyPath(''), ['']);
  assert.deepEqual(parsePropertyPath('a..b'), ['a', '', 'b']);
});

test('propertyAt walks own object properties only', () => {
  const event = {
    type: 'm.room.message',
    content: {
      body: 'hi',
      'm.relates_to': { rel_type: 'm.replace' },
      'm\\foo': 1,
      list: [{ a: 1 }],
      nothing: null,
    },
  };
  assert.equal(propertyAt(event, 'type'), 'm.room.message');
  assert.equal(propertyAt(event, 'content.body'), 'hi');
  assert.equal(propertyAt(event, 'content.m\\.relates_to.rel_type'), 'm.replace');
  assert.equal(propertyAt(event, 'content.m.relates_to.rel_type'), undefined);
  assert.equal(propertyAt(event, 'content.m\\\\foo'), 1);
  assert.equal(propertyAt(event, 'content.nothing'), null);
  assert.equal(propertyAt(event, 'content.nothing.deeper'), undefined);
  assert.equal(propertyAt(event, 'content.missing'), undefined);
  assert.equal(propertyAt(event, 'content.list.0.a'), undefined);
  assert.equal(propertyAt(event, 'content.body.length'), undefined);
  assert.equal(propertyAt(event, 'content.constructor'), undefined);
  assert.equal(propertyAt(event, 'content.__proto__'), undefined);
  assert.deepEqual(propertyAt(event, 'content.list'), [{ a: 1 }]);
});
