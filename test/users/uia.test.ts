import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { StageFailure, UiaChallenge, UserInteractiveAuth, type UiaRequest } from '../../src/users/uia.js';
import { storageBackends } from '../support/databases.js';
import { accountsFixture, type AccountsFixture } from './account-fixture.js';

/** The challenge a request is answered with, or the session when it passes. */
async function attempt(uia: UserInteractiveAuth, req: UiaRequest) {
  try {
    return { session: await uia.authenticate(req) };
  } catch (err) {
    if (err instanceof UiaChallenge) return { challenge: err };
    throw err;
  }
}

for (const backend of await storageBackends()) {
  describe(`user-interactive auth on ${backend.name}`, { skip: backend.skip }, () => {
    let fx: AccountsFixture;
    let uia: UserInteractiveAuth;

    before(async () => {
      fx = await accountsFixture(backend.create);
      uia = new UserInteractiveAuth({
        db: fx.database.db,
        now: () => fx.clock.now,
        sessionLifetimeMs: 60_000,
        stages: {
          'test.ok': async () => {},
          'test.secret': async (auth) => {
            if (auth['secret'] !== 'open sesame') throw new StageFailure('M_FORBIDDEN', 'Wrong secret');
            return { secret_stage: 'passed' };
          },
        },
      });
    });
    after(() => fx.close());

    const base = { operation: 'POST /thing', userId: '@u:hearth.test', flows: [['test.ok', 'test.secret'], ['test.other']], params: { 'test.secret': { hint: 'h' } } };

    test('no auth: a challenge with flows, params, a new session and nothing completed, without errcode', async () => {
      const r = await attempt(uia, { ...base, auth: undefined });
      assert.ok(r.challenge);
      assert.equal(r.challenge.failed, false);
      const body = r.challenge.replyBody();
      assert.deepEqual(Object.keys(body).sort(), ['completed', 'flows', 'params', 'session']);
      assert.deepEqual(body['flows'], [{ stages: ['test.ok', 'test.secret'] }, { stages: ['test.other'] }]);
      assert.deepEqual(body['params'], { 'test.secret': { hint: 'h' } });
      assert.deepEqual(body['completed'], []);
      const again = await attempt(uia, { ...base, auth: undefined });
      assert.notEqual(again.challenge?.replyBody()['session'], body['session'], 'each start gets its own session');
    });

    test('stages complete one by one; a failed attempt carries errcode and keeps what was completed', async () => {
      const start = await attempt(uia, { ...base, auth: undefined });
      const session = start.challenge!.replyBody()['session'] as string;
      const one = await attempt(uia, { ...base, auth: { type: 'test.ok', session } });
      assert.deepEqual(one.challenge?.replyBody()['completed'], ['test.ok']);
      assert.equal(one.challenge?.failed, false);
      const bad = await attempt(uia, { ...base, auth: { type: 'test.secret', session, secret: 'nope' } });
      const badBody = bad.challenge!.replyBody();
      assert.deepEqual([badBody['errcode'], badBody['error'], badBody['completed'], badBody['session']], ['M_FORBIDDEN', 'Wrong secret', ['test.ok'], session]);
      const done = await attempt(uia, { ...base, auth: { type: 'test.secret', session, secret: 'open sesame' } });
      assert.deepEqual(done.session?.completed, ['test.ok', 'test.secret']);
      assert.equal(done.session?.params['secret_stage'], 'passed');
      // Completed stages are not checked again: a retry with only the session passes too.
      const retry = await attempt(uia, { ...base, auth: { session } });
      assert.ok(retry.session);
      await uia.finish(retry.session);
      await assert.rejects(uia.authenticate({ ...base, auth: { session } }), { status: 400, errcode: 'M_UNKNOWN' });
    });

    test('a stage that is not offered, a malformed auth, or an unchecked stage type', async () => {
      const notOffered = await attempt(uia, { ...base, auth: { type: 'm.login.dummy' } });
      assert.equal(notOffered.challenge?.replyBody()['errcode'], 'M_UNRECOGNIZED');
      const offeredButUnknown = await attempt(uia, { ...base, auth: { type: 'test.other' } });
      assert.equal(offeredButUnknown.challenge?.replyBody()['errcode'], 'M_UNRECOGNIZED');
      const badType = await attempt(uia, { ...base, auth: { type: 7 } });
      assert.equal(badType.challenge?.replyBody()['errcode'], 'M_BAD_JSON');
      await assert.rejects(uia.authenticate({ ...base, auth: 'x' }), { status: 400, errcode: 'M_BAD_JSON' });
      await assert.rejects(uia.authenticate({ ...base, auth: { session: 5 } }), { status: 400, errcode: 'M_BAD_JSON' });
    });

    test('a session is bound to its operation and its user', async () => {
      const start = await attempt(uia, { ...base, auth: undefined });
      const session = start.challenge!.replyBody()['session'] as string;
      await assert.rejects(uia.authenticate({ ...base, operation: 'POST /other', auth: { session } }), (err: unknown) => err instanceof HearthError && err.status === 403 && err.errcode === 'M_FORBIDDEN');
      await assert.rejects(uia.authenticate({ ...base, userId: '@someone-else:hearth.test', auth: { session } }), { status: 403 });
    });

    test('sessions expire', async () => {
      const start = await attempt(uia, { ...base, auth: undefined });
      const session = start.challenge!.replyBody()['session'] as string;
      fx.clock.now += 60_001;
      await assert.rejects(uia.authenticate({ ...base, auth: { type: 'test.ok', session } }), { status: 400, errcode: 'M_UNKNOWN' });
    });

    test('request parameters are kept with the session and replaced by later non-empty ones', async () => {
      const start = await attempt(uia, { ...base, auth: undefined, request: { username: 'first' } });
      const session = start.challenge!.replyBody()['session'] as string;
      await attempt(uia, { ...base, auth: { type: 'test.ok', session }, request: {} });
      const done = await attempt(uia, { ...base, auth: { type: 'test.secret', secret: 'open sesame', session } });
      assert.deepEqual(done.session?.params['request'], { username: 'first' });
      const replaced = await attempt(uia, { ...base, auth: { session }, request: { username: 'second' } });
      assert.deepEqual(replaced.session?.params['request'], { username: 'second' });
    });

    test('values kept with a session are read back by its own operation and user only', async () => {
      const start = await attempt(uia, { ...base, auth: undefined, request: { username: 'kept' } });
      const session = start.challenge!.sessionId;
      assert.equal(session, start.challenge!.replyBody()['session']);
      await uia.keep(session, { hash: 'h1', other: 1 });
      await uia.keep(session, { done: '@u:hearth.test' }, ['hash']);
      assert.deepEqual(await uia.peek(session, base.operation, base.userId), { request: { username: 'kept' }, other: 1, done: '@u:hearth.test' });
      assert.equal(await uia.peek(session, 'POST /other', base.userId), undefined);
      assert.equal(await uia.peek(session, base.operation, '@someone:hearth.test'), undefined);
      assert.equal(await uia.peek('no-such-session', base.operation, base.userId), undefined);
      // Kept values survive the stages; an expired session is gone.
      const done = await attempt(uia, { ...base, auth: { type: 'test.secret', secret: 'open sesame', session } });
      const after = await attempt(uia, { ...base, auth: { type: 'test.ok', session } });
      assert.equal(done.challenge?.failed, false);
      assert.equal(after.session?.params['other'], 1);
      fx.clock.now += 60_001;
      assert.equal(await uia.peek(session, base.operation, base.userId), undefined);
    });

    test('a stage given without a session starts one and is checked at once', async () => {
      const r = await attempt(uia, { ...base, auth: { type: 'test.ok' } });
      assert.deepEqual(r.challenge?.replyBody()['completed'], ['test.ok']);
      assert.equal(typeof r.challenge?.replyBody()['session'], 'string');
    });
  });
}
