import { after, before, describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { type RunningServe, type ServeIo, parseServeArgs, startServe } from '../../src/server/serve.js';
import { HttpClient, type HttpReply } from '../support/http-client.js';
import { FIRST_ACCOUNT_TOKEN, PROCESS_WAIT_MS } from './processes.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hearth-first-run-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function configFolder(name: string): string {
  const folder = join(dir, name);
  mkdirSync(folder, { recursive: true });
  writeFileSync(
    join(folder, 'hearth.yaml'),
    stringify({
      version: 2,
      global: { server_name: 'first.test' },
      listen: { http: '127.0.0.1:0' },
      user_api: { bcrypt_cost: 4 },
      logging: [],
    }),
  );
  return folder;
}

/** `hearth serve` in this process, its operator output captured. */
async function serve(folder: string): Promise<{ running: RunningServe; out: string; baseUrl: string }> {
  let out = '';
  const io: ServeIo = { out: (t) => void (out += t), err: (t) => void (out += t), env: {}, cwd: folder };
  const running = await startServe(parseServeArgs([], folder), io);
  return { running, out, baseUrl: running.server.listeners[0]!.url };
}


function post(baseUrl: string, path: string, body: unknown): Promise<HttpReply> {
  return new HttpClient(baseUrl).post(path, body);
}

/** Registers through the client API with a registration token (user-interactive auth). */
async function registerWithToken(baseUrl: string, username: string, token: string) {
  const path = '/_chat/client/v3/register';
  const first = await post(baseUrl, path, { username, password: 'first password' });
  if (first.status !== 401) return first;
  return post(baseUrl, path, {
    username,
    password: 'first password',
    auth: { type: 'm.login.registration_token', token, session: first.body['session'] },
  });
}

describe('the first start of a server without accounts', () => {
  test('prints a one-time token with which the first account registers and becomes admin', async () => {
    const folder = configFolder('token');
    const { running, out, baseUrl } = await serve(folder);
    try {
      const token = FIRST_ACCOUNT_TOKEN.exec(out)?.[1];
      assert.ok(token, `no token in:\n${out}`);
      assert.match(out, /cli\.ts register --config \S*hearth\.yaml --username NAME --admin$/m);

      // Open registration is off: without the token, nobody registers.
      const refused = await post(baseUrl, '/_chat/client/v3/register', { username: 'mallory', password: 'x', auth: { type: 'm.login.dummy' } });
      assert.ok(refused.status === 401 || refused.status === 403, JSON.stringify(refused));
      assert.equal(refused.body['access_token'], undefined);

      const registered = await registerWithToken(baseUrl, 'root', token);
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      assert.equal(registered.body['user_id'], '@root:first.test');
      assert.equal(await running.server.services.accounts.isAdmin('@root:first.test'), true);

      // One use only.
      const again = await registerWithToken(baseUrl, 'second', token);
      assert.notEqual(again.status, 200);
      assert.equal(await running.server.services.accounts.userExists('@second:first.test'), false);
    } finally {
      await running.stop();
    }

    // Once an account exists, later starts print no token.
    const next = await serve(folder);
    try {
      assert.doesNotMatch(next.out, /registration token/);
    } finally {
      await next.running.stop();
    }
  });

  test('the printed register command works as printed from any folder', async () => {
    const folder = configFolder('command');
    const elsewhere = mkdtempSync(join(tmpdir(), 'hearth-elsewhere-'));
    const { running, out, baseUrl } = await serve(folder);
    try {
      const line = /^ {4}(\S.* register --config .*--username NAME --admin)$/m.exec(out)?.[1];
      assert.ok(line, `no register command in:\n${out}`);
      // Through a shell, as an operator pastes it, from a folder that is not the project's; the
      // password comes on standard input, as the command's usage says.
      const run = spawnSync('/bin/sh', ['-c', line.replace('NAME', 'pasted')], {
        cwd: elsewhere,
        input: 'pasted password\n',
        encoding: 'utf8',
        timeout: PROCESS_WAIT_MS,
        env: { ...process.env, PATH: '/usr/bin:/bin' },
      });
      assert.equal(run.status, 0, `${line}\n${run.stdout}\n${run.stderr}`);
      assert.equal(run.stdout, 'Created admin account @pasted:first.test\n');
      const login = await post(baseUrl, '/_chat/client/v3/login', {
        type: 'm.login.password',
        identifier: { type: 'm.id.user', user: 'pasted' },
        password: 'pasted password',
      });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      assert.equal(await running.server.services.accounts.isAdmin('@pasted:first.test'), true);
    } finally {
      await running.stop();
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  test('a restart without accounts replaces the token', async () => {
    const folder = configFolder('restart');
    const first = await serve(folder);
    const oldToken = FIRST_ACCOUNT_TOKEN.exec(first.out)?.[1];
    await first.running.stop();
    const second = await serve(folder);
    try {
      const newToken = FIRST_ACCOUNT_TOKEN.exec(second.out)?.[1];
      assert.ok(oldToken && newToken);
      assert.notEqual(newToken, oldToken);
      const stale = await registerWithToken(second.baseUrl, 'early', oldToken);
      assert.notEqual(stale.status, 200);
      const fresh = await registerWithToken(second.baseUrl, 'admin', newToken);
      assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
      assert.equal(await second.running.server.services.accounts.isAdmin('@admin:first.test'), true);
    } finally {
      await second.running.stop();
    }
  });
});
