import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalUrl, mountPaths, routerPaths } from '../../src/http/prefixes.js';

test('a client route answers under both protocol names and every version it lists', () => {
  assert.deepEqual(mountPaths({ api: 'client', versions: ['r0', 'v3'], path: '/sync' }), [
    '/_chat/client/r0/sync',
    '/_chat/client/v3/sync',
    '/_matrix/client/r0/sync',
    '/_matrix/client/v3/sync',
  ]);
});

test('the empty version mounts a route without a version segment', () => {
  assert.deepEqual(mountPaths({ api: 'client', versions: [''], path: '/versions' }), [
    '/_chat/client/versions',
    '/_matrix/client/versions',
  ]);
  assert.deepEqual(mountPaths({ api: 'admin', versions: ['', 'v1'], path: '/x' }), [
    '/_ext/admin/x',
    '/_ext/admin/v1/x',
    '/_synapse/admin/x',
    '/_synapse/admin/v1/x',
  ]);
});

test('well-known and root routes ignore versions', () => {
  assert.deepEqual(mountPaths({ api: 'wellKnown', versions: ['v3'], path: '/client' }), [
    '/.well-known/chat/client',
    '/.well-known/matrix/client',
  ]);
  assert.deepEqual(mountPaths({ api: 'root', path: '/health' }), ['/health']);
});

test('a route listing no versions is not mounted', () => {
  assert.deepEqual(mountPaths({ api: 'key', path: '/server' }), []);
});

test('the router holds a route under the spec names only', () => {
  assert.deepEqual(routerPaths({ api: 'client', versions: ['r0', 'v3'], path: '/sync' }), ['/_chat/client/r0/sync', '/_chat/client/v3/sync']);
  assert.deepEqual(routerPaths({ api: 'admin', versions: ['v1'], path: '/x' }), ['/_ext/admin/v1/x']);
  assert.deepEqual(routerPaths({ api: 'wellKnown', path: '/server' }), ['/.well-known/chat/server']);
  assert.deepEqual(routerPaths({ api: 'root', path: '/health' }), ['/health']);
});

test('a request under the ecosystem names is routed as under the spec names', () => {
  assert.equal(canonicalUrl('/_matrix/client/v3/sync?since=s1'), '/_chat/client/v3/sync?since=s1');
  assert.equal(canonicalUrl('/_synapse/admin/v1/users'), '/_ext/admin/v1/users');
  assert.equal(canonicalUrl('/_synapse/admin?x=1'), '/_ext/admin?x=1');
  assert.equal(canonicalUrl('/.well-known/matrix/server'), '/.well-known/chat/server');
  // Only whole segments are renamed; anything else goes to the router as it came.
  assert.equal(canonicalUrl('/_matrixx/client/v3/sync'), '/_matrixx/client/v3/sync');
  assert.equal(canonicalUrl('/_synapse/client/x'), '/_synapse/client/x');
  assert.equal(canonicalUrl('/_chat/client/v3/sync'), '/_chat/client/v3/sync');
  assert.equal(canonicalUrl('/health'), '/health');
});
