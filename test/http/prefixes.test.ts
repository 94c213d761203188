import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askedUnderR0, canonicalUrl, mountPaths, routerPaths } from '../../src/http/prefixes.js';

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
  assert.deepEqual(routerPaths({ api: 'client', versions: ['r0', 'v3'], path: '/sync' }), ['/_chat/client/v3/sync']);
  assert.deepEqual(routerPaths({ api: 'client', versions: ['r0', 'v3', 'v1'], path: '/x' }), ['/_chat/client/v3/x', '/_chat/client/v1/x']);
  assert.deepEqual(routerPaths({ api: 'client', versions: ['v3'], path: '/knock' }), ['/_chat/client/v3/knock']);
  assert.deepEqual(routerPaths({ api: 'admin', versions: ['v1'], path: '/x' }), ['/_ext/admin/v1/x']);
  assert.deepEqual(routerPaths({ api: 'wellKnown', path: '/server' }), ['/.well-known/chat/server']);
  assert.deepEqual(routerPaths({ api: 'root', path: '/health' }), ['/health']);
});

test('a client route listing r0 must list v3, under which its r0 requests are routed', () => {
  assert.throws(() => routerPaths({ api: 'client', versions: ['r0'], path: '/old' }), /lists r0 without v3/);
  assert.deepEqual(routerPaths({ api: 'media', versions: ['r0', 'v3'], path: '/upload' }), ['/_chat/media/r0/upload', '/_chat/media/v3/upload']);
});

test('a request under the ecosystem names, or under r0, is routed as under the spec names and v3', () => {
  assert.equal(canonicalUrl('/_matrix/client/v3/sync?since=s1'), '/_chat/client/v3/sync?since=s1');
  assert.equal(canonicalUrl('/_matrix/client/r0/sync?since=s1'), '/_chat/client/v3/sync?since=s1');
  assert.equal(canonicalUrl('/_chat/client/r0/rooms/!r:x/send/m.room.message/t1'), '/_chat/client/v3/rooms/!r:x/send/m.room.message/t1');
  assert.equal(canonicalUrl('/_matrix/client/r0'), '/_chat/client/r0');
  assert.equal(canonicalUrl('/_matrix/media/r0/config'), '/_chat/media/r0/config');
  assert.ok(askedUnderR0('/_matrix/client/r0/sync') && askedUnderR0('/_chat/client/r0/sync'));
  assert.ok(!askedUnderR0('/_matrix/client/v3/sync') && !askedUnderR0('/_chat/media/r0/config') && !askedUnderR0('/_matrix/client/r01/x'));
  assert.equal(canonicalUrl('/_synapse/admin/v1/users'), '/_ext/admin/v1/users');
  assert.equal(canonicalUrl('/_synapse/admin?x=1'), '/_ext/admin?x=1');
  assert.equal(canonicalUrl('/.well-known/matrix/server'), '/.well-known/chat/server');
  // Only whole segments are renamed; anything else goes to the router as it came.
  assert.equal(canonicalUrl('/_matrixx/client/v3/sync'), '/_matrixx/client/v3/sync');
  assert.equal(canonicalUrl('/_synapse/client/x'), '/_synapse/client/x');
  assert.equal(canonicalUrl('/_chat/client/v3/sync'), '/_chat/client/v3/sync');
  assert.equal(canonicalUrl('/health'), '/health');
});
