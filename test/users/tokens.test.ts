import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Requester } from '../../src/users/requester.js';
import { hashAccessToken, newAccessToken, TokenCache } from '../../src/users/tokens.js';
import { checkNewPassword, hashPassword, MAX_PASSWORD_LENGTH, verifyPassword } from '../../src/users/passwords.js';
import { macMatches, NonceStore, NONCE_LIFETIME_MS, sharedSecretMac } from '../../src/users/shared-secret.js';
import { newDeviceId } from '../../src/users/devices.js';

const requester = (userId: string, tokenId: number): Requester => ({ userId, deviceId: 'D', isGuest: false, isAdmin: false, tokenId });

describe('access tokens', () => {
  test('are long, random and URL-safe; stored as their SHA-256', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const t = newAccessToken();
      assert.match(t, /^hth_[A-Za-z0-9_-]{43}$/);
      seen.add(t);
    }
    assert.equal(seen.size, 200);
    assert.equal(hashAccessToken('abc'), createHash('sha256').update('abc').digest('hex'));
    assert.notEqual(hashAccessToken('abc'), hashAccessToken('abd'));
  });

  test('device IDs are ten capital letters', () => {
    for (let i = 0; i < 50; i++) assert.match(newDeviceId(), /^[A-Z]{10}$/);
  });
});

describe('token cache', () => {
  test('holds at most maxEntries, dropping the least recently used', () => {
    const cache = new TokenCache({ maxEntries: 2 });
    const put = (h: string, user: string) => cache.set(h, { requester: requester(user, 1), validUntilTs: null, cachedAt: 0, lastSeenWrite: 0 }, cache.epoch);
    put('a', '@a:x');
    put('b', '@b:x');
    assert.ok(cache.get('a', 0)); // a is now the most recent
    put('c', '@c:x');
    assert.equal(cache.size, 2);
    assert.equal(cache.get('b', 0), undefined);
    assert.ok(cache.get('a', 0));
    assert.ok(cache.get('c', 0));
  });

  test('entries older than maxAgeMs are not trusted', () => {
    const cache = new TokenCache({ maxAgeMs: 1000 });
    cache.set('a', { requester: requester('@a:x', 1), validUntilTs: null, cachedAt: 5000, lastSeenWrite: 0 }, cache.epoch);
    assert.ok(cache.get('a', 6000));
    assert.equal(cache.get('a', 6001), undefined);
    assert.equal(cache.size, 0);
  });

  test("invalidating a user drops exactly that user's tokens", () => {
    const cache = new TokenCache();
    const e = (u: string, id: number) => ({ requester: requester(u, id), validUntilTs: null, cachedAt: 0, lastSeenWrite: 0 });
    cache.set('a1', e('@a:x', 1), cache.epoch);
    cache.set('a2', e('@a:x', 2), cache.epoch);
    cache.set('b1', e('@b:x', 3), cache.epoch);
    cache.invalidateUser('@a:x');
    assert.equal(cache.get('a1', 0), undefined);
    assert.equal(cache.get('a2', 0), undefined);
    assert.equal(cache.get('b1', 0)?.requester.tokenId, 3);
  });

  test('a lookup that raced an invalidation is not cached', () => {
    const cache = new TokenCache();
    const epoch = cache.epoch; // lookup starts
    cache.invalidateUser('@a:x'); // logout commits meanwhile
    cache.set('a1', { requester: requester('@a:x', 1), validUntilTs: null, cachedAt: 0, lastSeenWrite: 0 }, epoch);
    assert.equal(cache.get('a1', 0), undefined);
    cache.set('a1', { requester: requester('@a:x', 1), validUntilTs: null, cachedAt: 0, lastSeenWrite: 0 }, cache.epoch);
    assert.ok(cache.get('a1', 0));
  });
});

describe('passwords', () => {
  test('bcrypt hashes at the given cost and verifies', async () => {
    const hash = await hashPassword('correct horse', 4);
    assert.match(hash, /^hmac-sha256:\$2b\$04\$/);
    assert.equal(await verifyPassword('correct horse', hash), true);
    assert.equal(await verifyPassword('correct horsE', hash), false);
    assert.equal(await verifyPassword('correct horse', null), false);
    assert.equal(await verifyPassword('correct horse', 'not a hash'), false);
  });

  test('passwords are NFKC-normalized, so composed and decomposed forms match', async () => {
    const hash = await hashPassword('caf\u00e9', 4);
    assert.equal(await verifyPassword('cafe\u0301', hash), true);
  });

  test('empty, overlong and NUL-holding passwords are refused', () => {
    assert.throws(() => checkNewPassword(''), { errcode: 'M_WEAK_PASSWORD', status: 400 });
    assert.throws(() => checkNewPassword('x'.repeat(MAX_PASSWORD_LENGTH + 1)), { errcode: 'M_INVALID_PARAM' });
    assert.throws(() => checkNewPassword('a\u0000b'), { errcode: 'M_INVALID_PARAM' });
    checkNewPassword('x'.repeat(MAX_PASSWORD_LENGTH));
  });
});

describe('shared-secret MAC', () => {
  // Expected values from Python's hmac/hashlib, computing the MAC as Synapse's admin API defines it.
  test('matches the reference vectors', () => {
    const base = { nonce: 'abc123', username: 'alice', password: 'hunter2' };
    assert.equal(sharedSecretMac('sekrit', { ...base, admin: false }), '774cb0b705403b89b3495c9dba2fadda3b8aa8e0');
    assert.equal(sharedSecretMac('sekrit', { ...base, admin: true }), '4d5f76be02fed5b87285a0d91aa9794f3beae611');
    assert.equal(sharedSecretMac('sekrit', { ...base, admin: false, userType: 'bot' }), 'e238c8e9956ce4a35ab43613a8528a0334b1c887');
    assert.equal(
      sharedSecretMac('s\u20accret', { nonce: 'n', username: 'bj\u00f8rn', password: 'p\u00e4ssw\u00f6rd', admin: true }),
      'e6ffda126235eaf66fb287525901a00c3dab2314',
    );
  });

  test('comparison needs the exact digest', () => {
    const mac = sharedSecretMac('sekrit', { nonce: 'n', username: 'u', password: 'p', admin: false });
    assert.equal(macMatches(mac, mac), true);
    assert.equal(macMatches(mac, mac.slice(0, -1)), false);
    assert.equal(macMatches(mac, mac.toUpperCase()), false);
    assert.equal(macMatches(mac, ''), false);
  });

  test('nonces are single use and expire', () => {
    let now = 1_000_000;
    const store = new NonceStore(() => now);
    const a = store.issue();
    const b = store.issue();
    assert.notEqual(a, b);
    assert.equal(store.take(a), true);
    assert.equal(store.take(a), false);
    assert.equal(store.take('never-issued'), false);
    now += NONCE_LIFETIME_MS + 1;
    assert.equal(store.take(b), false);
  });
});
