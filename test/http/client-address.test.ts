// Which address a request comes from: X-Forwarded-For is read only from trusted proxies, from the
// right, up to the first address that is not a trusted proxy.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ClientAddresses, plainAddress } from '../../src/http/client-address.js';

describe('without trusted proxies', () => {
  const addresses = new ClientAddresses([]);

  test('the peer is the client, whatever the header says', () => {
    assert.equal(addresses.resolve('192.0.2.1', '203.0.113.9'), '192.0.2.1');
    assert.equal(addresses.resolve('::ffff:192.0.2.1', undefined), '192.0.2.1');
    assert.equal(addresses.resolve('2001:db8::1', '203.0.113.9'), '2001:db8::1');
    assert.equal(addresses.isTrusted('127.0.0.1'), false);
  });
});

describe('behind trusted proxies', () => {
  const addresses = new ClientAddresses(['127.0.0.1/32', '10.0.0.0/8', 'fd00::/8']);

  test('the rightmost address that is not a trusted proxy is the client', () => {
    assert.equal(addresses.resolve('127.0.0.1', '203.0.113.9'), '203.0.113.9');
    assert.equal(addresses.resolve('127.0.0.1', '198.51.100.1, 203.0.113.9, 10.1.2.3'), '203.0.113.9', 'a client cannot hide behind a forged entry');
    assert.equal(addresses.resolve('::ffff:127.0.0.1', '10.0.0.5,203.0.113.9'), '203.0.113.9', 'every entry is read, not only the last');
    assert.equal(addresses.resolve('fd12::1', '2001:db8::7, fd00::2'), '2001:db8::7');
    assert.equal(addresses.resolve('127.0.0.1', ['198.51.100.1', '203.0.113.9']), '203.0.113.9', 'repeated headers in order');
  });

  test('ports and brackets are removed; IPv4 in IPv6 form is plain IPv4', () => {
    assert.equal(addresses.resolve('127.0.0.1', '203.0.113.9:51000'), '203.0.113.9');
    assert.equal(addresses.resolve('127.0.0.1', '[2001:db8::7]:443'), '2001:db8::7');
    assert.equal(addresses.resolve('127.0.0.1', '::ffff:203.0.113.9'), '203.0.113.9');
  });

  test('an entry that names no address stops the walk at the proxy that wrote it', () => {
    assert.equal(addresses.resolve('127.0.0.1', 'unknown'), '127.0.0.1');
    assert.equal(addresses.resolve('127.0.0.1', '203.0.113.9, _hidden, 10.1.2.3'), '10.1.2.3');
    assert.equal(addresses.resolve('127.0.0.1', ''), '127.0.0.1');
  });

  test('a chain of trusted proxies only: the leftmost is the client', () => {
    assert.equal(addresses.resolve('127.0.0.1', '10.9.9.9, 10.1.2.3'), '10.9.9.9');
  });

  test('from a peer that is not trusted, the header is ignored', () => {
    assert.equal(addresses.resolve('198.51.100.1', '203.0.113.9'), '198.51.100.1');
    assert.equal(addresses.resolve('11.0.0.1', '10.0.0.1'), '11.0.0.1');
  });

  test('trust is by range, for IPv4 and IPv6', () => {
    assert.equal(addresses.isTrusted('10.255.255.255'), true);
    assert.equal(addresses.isTrusted('11.0.0.0'), false);
    assert.equal(addresses.isTrusted('fdff::1'), true);
    assert.equal(addresses.isTrusted('fe00::1'), false);
    assert.equal(addresses.isTrusted('::ffff:10.0.0.1'), true);
    assert.equal(addresses.isTrusted('not an address'), false);
  });
});

test('a range that is no address is refused', () => {
  assert.throws(() => new ClientAddresses(['proxy.example.org']), /not an IP address/);
});

test('plainAddress unwraps IPv4 in IPv6 form only', () => {
  assert.equal(plainAddress('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(plainAddress('::ffff:c000:201'), '::ffff:c000:201');
  assert.equal(plainAddress('2001:db8::1'), '2001:db8::1');
});
