// Password hashes: bcrypt over a digest of the whole password, so passwords past bcrypt's 72 bytes
// are told apart; hashes of the earlier form (bcrypt of the password itself) still verify what they
// can and are rewritten at login; unicode, empty and very long passwords. Then the same over HTTP
// on a real server, SQLite and PostgreSQL.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import bcrypt from 'bcrypt';
import { setPasswordHash } from '../../src/storage/accounts/users.js';
import { checkNewPassword, hashPassword, isOutdatedPasswordHash, MAX_PASSWORD_LENGTH, verifyPassword } from '../../src/users/passwords.js';
import { request } from '../e2e/support/client.js';
import { serverBackends, useTestServer, type TestServer } from '../support/server.js';

/** The earlier hashPassword, as it was written: bcrypt of the NFKC-normalized password itself. */
function previousHashPassword(password: string, cost: number): Promise<string> {
  return bcrypt.hash(password.normalize('NFKC'), cost);
}

const LONG_X = `${'p'.repeat(72)}X`;
const LONG_Y = `${'p'.repeat(72)}Y`;

describe('passwords past 72 bytes', () => {
  test('differing only after byte 72: never accepted for each other', async () => {
    const hash = await hashPassword(LONG_X, 4);
    assert.equal(await verifyPassword(LONG_X, hash), true);
    assert.equal(await verifyPassword(LONG_Y, hash), false);
    assert.equal(await verifyPassword('p'.repeat(72), hash), false);
    // bcrypt alone would take them for one another: the case the digest exists for.
    const plain = await bcrypt.hash(LONG_X, 4);
    assert.equal(await bcrypt.compare(LONG_Y, plain), true);
  });

  test('multi-byte characters across byte 72', async () => {
    const base = '\u00e9'.repeat(36); // 72 bytes in UTF-8
    const hash = await hashPassword(`${base}a`, 4);
    assert.equal(await verifyPassword(`${base}a`, hash), true);
    assert.equal(await verifyPassword(`${base}b`, hash), false);
    const emoji = '\u{1F511}'.repeat(40); // 160 bytes
    const emojiHash = await hashPassword(`${emoji}\u{1F512}`, 4);
    assert.equal(await verifyPassword(`${emoji}\u{1F512}`, emojiHash), true);
    assert.equal(await verifyPassword(`${emoji}\u{1F513}`, emojiHash), false);
  });
});

describe('hashes of the earlier form', () => {
  test('verify the passwords they were made from (up to 72 bytes) and are marked outdated', async () => {
    for (const password of ['correct horse', 'caf\u00e9', 'p'.repeat(72), '\u00e9'.repeat(36)]) {
      const old = await previousHashPassword(password, 4);
      assert.equal(isOutdatedPasswordHash(old), true);
      assert.equal(await verifyPassword(password, old), true, password);
      assert.equal(await verifyPassword(`${password}!`, old), false, password);
      assert.equal(await verifyPassword(password.slice(0, -1), old), false, password);
    }
    assert.equal(await verifyPassword('cafe\u0301', await previousHashPassword('caf\u00e9', 4)), true);
    assert.equal(isOutdatedPasswordHash(await hashPassword('correct horse', 4)), false);
  });

  test('a password past 72 bytes never matches one: its end cannot be checked', async () => {
    const old = await previousHashPassword(LONG_X, 4);
    assert.equal(await verifyPassword(LONG_Y, old), false);
    assert.equal(await verifyPassword(LONG_X, old), false);
  });
});

describe('unicode, empty and very long passwords', () => {
  test('NFKC: composed and decomposed forms, compatibility characters', async () => {
    const hash = await hashPassword('caf\u00e9 \uFB01sh', 4);
    assert.equal(await verifyPassword('cafe\u0301 \uFB01sh', hash), true);
    assert.equal(await verifyPassword('caf\u00e9 fish', hash), true);
    assert.equal(await verifyPassword('cafe fish', hash), false);
  });

  test('empty: refused as a new password, never matches', async () => {
    assert.throws(() => checkNewPassword(''), { status: 400, errcode: 'M_WEAK_PASSWORD' });
    assert.equal(await verifyPassword('', await hashPassword('x', 4)), false);
  });

  test('the length limit counts characters (code points), as Synapse does', async () => {
    const longest = '\u{1F511}'.repeat(MAX_PASSWORD_LENGTH); // 1024 UTF-16 units, 2048 bytes
    checkNewPassword(longest);
    const hash = await hashPassword(longest, 4);
    assert.equal(await verifyPassword(longest, hash), true);
    assert.equal(await verifyPassword(`${longest.slice(0, -2)}\u{1F512}`, hash), false);
    assert.throws(() => checkNewPassword(`${longest}a`), { status: 400, errcode: 'M_INVALID_PARAM' });
    assert.throws(() => checkNewPassword('x'.repeat(MAX_PASSWORD_LENGTH + 1)), { status: 400, errcode: 'M_INVALID_PARAM' });
    assert.equal(await verifyPassword(`${longest}a`, hash), false);
    assert.equal(await verifyPassword('x'.repeat(100_000), hash), false);
  });
});

const PREFIX = '/_chat/client/v3';

function login(hs: TestServer, user: string, password: string) {
  return request(hs.baseUrl, 'POST', `${PREFIX}/login`, { type: 'm.login.password', identifier: { type: 'm.id.user', user }, password });
}

/** Registration through the dummy flow; the reply of the second step (or of the first, if it is not 401). */
async function register(hs: TestServer, username: string, password: string) {
  const first = await request(hs.baseUrl, 'POST', `${PREFIX}/register`, { username, password });
  if (first.status !== 401) return first;
  return request(hs.baseUrl, 'POST', `${PREFIX}/register`, { username, password, auth: { type: 'm.login.dummy', session: first.body.session } });
}

async function storedHash(hs: TestServer, userId: string): Promise<string | null> {
  const row = await hs.server.core.db.selectFrom('users').select('password_hash').where('user_id', '=', userId).executeTakeFirstOrThrow();
  return row.password_hash;
}

for (const { backend, skip } of await serverBackends()) {
  describe(`passwords over HTTP on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let userId: string;
    before(async () => {
      const registered = await register(hs, 'long', LONG_X);
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      userId = registered.body.user_id as string;
    });

    test('72 bytes in common and a different end: 403, the right one: 200', async () => {
      const wrong = await login(hs, 'long', LONG_Y);
      assert.equal(wrong.status, 403);
      assert.equal(wrong.body.errcode, 'M_FORBIDDEN');
      assert.equal((await login(hs, 'long', 'p'.repeat(72))).status, 403);
      assert.equal((await login(hs, 'long', LONG_X)).status, 200);
    });

    test('a hash of the earlier form logs in and is rewritten in the current form; other passwords still fail', async () => {
      await setPasswordHash(hs.server.core.db, userId, await previousHashPassword('short and old', 4));
      assert.equal((await login(hs, 'long', 'short and ol')).status, 403);
      assert.equal(isOutdatedPasswordHash((await storedHash(hs, userId))!), true, 'a failed login rewrites nothing');
      assert.equal((await login(hs, 'long', 'short and old')).status, 200);
      const rewritten = (await storedHash(hs, userId))!;
      assert.equal(isOutdatedPasswordHash(rewritten), false);
      assert.equal(await verifyPassword('short and old', rewritten), true);
      assert.equal((await login(hs, 'long', 'short and old')).status, 200);
      assert.equal((await login(hs, 'long', 'short and olD')).status, 403);
    });

    test('an earlier-form hash of a password past 72 bytes: refused, as its end cannot be checked', async () => {
      const old = await previousHashPassword(LONG_X, 4);
      await setPasswordHash(hs.server.core.db, userId, old);
      assert.equal((await login(hs, 'long', LONG_Y)).status, 403);
      assert.equal((await login(hs, 'long', LONG_X)).status, 403);
      assert.equal(await storedHash(hs, userId), old);
    });

    test('unicode: registered in one normalization form, logged in with another', async () => {
      const r = await register(hs, 'unicode', `caf\u00e9 ${'\u{1F511}'.repeat(30)}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal((await login(hs, 'unicode', `cafe\u0301 ${'\u{1F511}'.repeat(30)}`)).status, 200);
      assert.equal((await login(hs, 'unicode', `caf\u00e9 ${'\u{1F511}'.repeat(29)}\u{1F512}`)).status, 403);
    });

    test('empty and too long: registration 400, login 403', async () => {
      const empty = await register(hs, 'empty', '');
      assert.equal(empty.status, 400, JSON.stringify(empty.body));
      assert.equal(empty.body.errcode, 'M_WEAK_PASSWORD');
      // Synapse's limit: 512 characters; one more is refused.
      const tooLong = await register(hs, 'toolong', 'x'.repeat(MAX_PASSWORD_LENGTH + 1));
      assert.equal(tooLong.status, 400, JSON.stringify(tooLong.body));
      assert.equal(tooLong.body.errcode, 'M_INVALID_PARAM');
      const longest = await register(hs, 'longest', 'x'.repeat(MAX_PASSWORD_LENGTH));
      assert.equal(longest.status, 200, JSON.stringify(longest.body));
      assert.equal((await login(hs, 'longest', 'x'.repeat(MAX_PASSWORD_LENGTH))).status, 200);
      assert.equal((await login(hs, 'longest', `${'x'.repeat(MAX_PASSWORD_LENGTH - 1)}y`)).status, 403);
      assert.equal((await login(hs, 'longest', '')).status, 403);
      assert.equal((await login(hs, 'longest', 'x'.repeat(MAX_PASSWORD_LENGTH + 1))).status, 403);
    });

    test('a password change past 512 characters: 400; to a long passphrase: the end counts', async () => {
      const token = (await login(hs, 'longest', 'x'.repeat(MAX_PASSWORD_LENGTH))).body.access_token as string;
      const auth = { type: 'm.login.password', identifier: { type: 'm.id.user', user: 'longest' }, password: 'x'.repeat(MAX_PASSWORD_LENGTH) };
      const change = (newPassword: string) =>
        request(hs.baseUrl, 'POST', `${PREFIX}/account/password`, { new_password: newPassword, logout_devices: false, auth }, { token });
      const refused = await change('y'.repeat(MAX_PASSWORD_LENGTH + 1));
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.errcode, 'M_INVALID_PARAM');
      const changed = await change(`${'y'.repeat(100)}1`);
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      assert.equal((await login(hs, 'longest', `${'y'.repeat(100)}2`)).status, 403);
      assert.equal((await login(hs, 'longest', `${'y'.repeat(100)}1`)).status, 200);
    });
  });
}
