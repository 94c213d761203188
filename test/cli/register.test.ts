import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/index.js';
import { createServer } from '../../src/context.js';
import { PROCESS_WAIT_MS } from '../server/processes.js';
import { HttpClient } from '../support/http-client.js';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;

/** `hearth <args>` with `input` as its standard input (a pipe, not a terminal). */
function hearthWithInput(input: string, ...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8', timeout: PROCESS_WAIT_MS, input });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const hearth = (...args: string[]) => hearthWithInput('', ...args);

/** Python's pty module gives the command a terminal; Debian's python3 has it. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const ON_A_TERMINAL = `
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen = b''
def read_until(marker):
    global seen
    while marker not in seen:
        chunk = os.read(fd, 1024)
        if not chunk:
            sys.exit('the terminal closed before %r: %r' % (marker, seen))
        seen += chunk
for prompt, answer in [(b'Password: ', b'typed secret\\r'), (b'Confirm password: ', b'typed secret\\r')]:
    read_until(prompt)
    os.write(fd, answer)
try:
    while True:
        chunk = os.read(fd, 1024)
        if not chunk:
            break
        seen += chunk
except OSError:
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode())
sys.exit(os.waitstatus_to_exitcode(status))
`;

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
  // Without --password, from the first line of standard input (what follows it is not read).
  r = hearthWithInput('builder\nnot this\n', 'register', '--config', configPath, '--username', 'bob');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'Created account @bob:cli.test\n');
  r = hearthWithInput('with crlf\r\n', 'register', '--config', configPath, '--username', 'carol');
  assert.equal(r.code, 0, r.stderr);

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
    const accounts = [['alice', 'wonderland', true], ['bob', 'builder', false], ['carol', 'with crlf', false]] as const;
    for (const [user, password, admin] of accounts) {
      const res = await new HttpClient(listener!.url, { prefix: '/_chat/client/v3' }).post('/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user }, password });
      const body = res.body as { user_id: string; access_token: string };
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.user_id, `@${user}:cli.test`);
      assert.equal(await server.services.accounts.isAdmin(body.user_id), admin);
    }
    assert.equal(await server.services.accounts.userExists('@not valid!:cli.test'), false);
  } finally {
    await server.close();
  }
});

test('on a terminal, register asks for the password twice without showing it', () => {
  const r = spawnSync(
    PYTHON,
    ['-c', ON_A_TERMINAL, process.execPath, '--import', 'tsx', CLI, 'register', '--config', configPath, '--username', 'dora', '--admin'],
    { encoding: 'utf8', timeout: PROCESS_WAIT_MS },
  );
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /Password: /);
  assert.match(r.stdout, /Confirm password: /);
  assert.match(r.stdout, /Created admin account @dora:cli\.test/);
  assert.doesNotMatch(r.stdout, /typed secret/);
});

test('register without a username, or without any password, is a usage error; so is an empty one', () => {
  let r = hearth('register', '--config', configPath, '--username', 'erin');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /missing --password, and standard input held no password/);
  r = hearthWithInput('\n', 'register', '--config', configPath, '--username', 'erin');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /the password is empty/);
  r = hearth('register', '--config', configPath);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /missing --username/);
});

test('register with a bad configuration lists its problems and exits 1', () => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, stringify({ global: { server_name: '' }, user_api: { bcrypt_cost: 3 } }));
  const r = hearth('register', '--config', bad, '--username', 'dave', '--password', 'x');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /global\.server_name: /);
  assert.match(r.stderr, /user_api\.bcrypt_cost: /);
});
