import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/index.js';
import { createServer } from '../../src/context.js';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;

function hearth(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let dir: string;
let configPath: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hearth-register-'));
  configPath = join(dir, 'hearth.yaml');
  writeFileSync(
    configPath,
    stringify({ version: 2, global: { server_name: 'cli.test' }, listen: { http: '127.0.0.1:0' }, user_api: { bcrypt_cost: 4 } }),
  );
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('register creates accounts that log in, admin only when asked; names are checked', async () => {
  let r = hearth('register', '--config', configPath, '--username', 'Alice', '--password', 'wonderland', '--admin');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'Created admin account @alice:cli.test\n');
  r = hearth('register', '--config', configPath, '--username', 'bob', '--password', 'builder');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'Created account @bob:cli.test\n');

  r = hearth('register', '--config', configPath, '--username', 'alice', '--password', 'again');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^hearth register: .*taken/);
  r = hearth('register', '--config', configPath, '--username', 'not valid!', '--password', 'x');
  assert.equal(r.code, 1);
  assert.doesNotMatch(r.stderr, /^\s+at /m);

  const { config } = loadConfig(configPath, {});
  const server = await createServer(config, { logger: false });
  try {
    const [listener] = await server.listen();
    for (const [user, password, admin] of [['alice', 'wonderland', true], ['bob', 'builder', false]] as const) {
      const res = await fetch(`${listener!.url}/_chat/client/v3/login`, {
        method: 'POST',
        body: JSON.stringify({ type: 'm.login.password', identifier: { type: 'm.id.user', user }, password }),
      });
      const body = (await res.json()) as { user_id: string; access_token: string };
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.user_id, `@${user}:cli.test`);
      assert.equal(await server.services.accounts.isAdmin(body.user_id), admin);
    }
    assert.equal(await server.services.accounts.userExists('@not valid!:cli.test'), false);
  } finally {
    await server.close();
  }
});

test('register without a username or password is a usage error', () => {
  let r = hearth('register', '--config', configPath, '--username', 'carol');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /missing --password/);
  r = hearth('register', '--config', configPath);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /missing --username and --password/);
});

test('register with a bad configuration lists its problems and exits 1', () => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, stringify({ global: { server_name: '' }, user_api: { bcrypt_cost: 3 } }));
  const r = hearth('register', '--config', bad, '--username', 'dave', '--password', 'x');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /global\.server_name: /);
  assert.match(r.stderr, /user_api\.bcrypt_cost: /);
});
