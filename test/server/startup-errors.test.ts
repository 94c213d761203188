// Startup failures that the operator must fix are told in words that say what to fix: which
// database could not be reached or opened (never its password), which folder cannot be written,
// and the key that sets it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { StartupError } from '../../src/server/errors.js';
import { type ServeIo, parseServeArgs, startServe } from '../../src/server/serve.js';
import { explainDatabaseFailure } from '../../src/storage/database.js';
import { postgresUnavailable } from '../support/databases.js';
import { hearthArgs, spawnProcess } from './processes.js';

const ADMIN_URL = process.env['HEARTH_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hearth-startup-'));
});
after(() => {
  chmodSync(dir, 0o700);
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, global: Record<string, unknown>): string {
  const folder = join(dir, name);
  mkdirSync(folder, { recursive: true });
  const path = join(folder, 'hearth.yaml');
  writeFileSync(
    path,
    stringify({
      version: 2,
      global: { server_name: 'startup.test', ...global },
      listen: { http: '127.0.0.1:0' },
      user_api: { bcrypt_cost: 4 },
      logging: [],
    }),
  );
  return path;
}

/** Starts `hearth serve` in this process; returns the StartupError's message. */
async function startupFailure(configPath: string): Promise<string> {
  const io: ServeIo = { out: () => undefined, err: () => undefined, env: {}, cwd: dir };
  try {
    const running = await startServe(parseServeArgs(['--config', configPath], dir), io);
    await running.stop();
  } catch (err) {
    assert.ok(err instanceof StartupError, String(err));
    return err.message;
  }
  assert.fail('the server started');
}

async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('a PostgreSQL database that cannot be used', () => {
  test('closed port: names host, port, database and user, never the password, and says what to check', async () => {
    const port = await closedPort();
    const message = await startupFailure(
      writeConfig('closed', { database: { connection_string: `postgres://hearth:hunter2@127.0.0.1:${port}/chat` } }),
    );
    assert.ok(
      message.startsWith(
        `cannot start: cannot reach the PostgreSQL server at 127.0.0.1:${port} (database "chat" as user "hearth"): ` +
          'connection refused. Is PostgreSQL running and listening on that address and port?',
      ),
      message,
    );
    assert.match(message, /global\.database\.connection_string/);
    assert.doesNotMatch(message, /hunter2/);
  });

  const skip = (async () => {
    const why = await postgresUnavailable();
    if (why && process.env['CI'] === 'true') throw new Error(why);
    return why ?? false;
  })();

  test('an unknown database name: says the server has no such database and how to create it', async (t) => {
    const why = await skip;
    if (why) return t.skip(why);
    const url = new URL(ADMIN_URL);
    url.pathname = `/hearth_absent_${randomBytes(4).toString('hex')}`;
    const database = url.pathname.slice(1);
    const user = decodeURIComponent(url.username);
    const message = await startupFailure(writeConfig('unknown-db', { database: { connection_string: url.toString() } }));
    assert.equal(
      message,
      `cannot start: the PostgreSQL server at ${url.hostname}:${url.port || '5432'} has no database "${database}". ` +
        `Create it (createdb -O ${user} -E UTF8 ${database}) or correct the database name. ` +
        'The database is set by global.database.connection_string (or HEARTH_GLOBAL__DATABASE__CONNECTION_STRING).',
    );
  });

  test('an unknown user: says the server refused it and how to fix it', async (t) => {
    const why = await skip;
    if (why) return t.skip(why);
    const url = new URL(ADMIN_URL);
    url.username = `hearth_nobody_${randomBytes(4).toString('hex')}`;
    url.password = 'not-shown';
    const message = await startupFailure(writeConfig('unknown-user', { database: { connection_string: url.toString() } }));
    assert.match(message, new RegExp(`^cannot start: the PostgreSQL server at ${url.hostname}:\\d+ refused the connection `));
    assert.ok(message.includes(`role "${url.username}" does not exist`), message);
    assert.ok(message.includes(`createuser ${url.username} --pwprompt`), message);
    assert.doesNotMatch(message, /not-shown/);
  });

  test('a refused password is told as such (the error PostgreSQL sends, code 28P01)', () => {
    const refusal = Object.assign(new Error('password authentication failed for user "hearth"'), { code: '28P01' });
    const message = explainDatabaseFailure('postgres://hearth:hunter2@db.internal:6543/chat', new Error('wrapped', { cause: refusal }));
    assert.equal(
      message,
      'the PostgreSQL server at db.internal:6543 refused the password of user "hearth" (database "chat" as user "hearth"). ' +
        'Correct the user name and password. ' +
        'The database is set by global.database.connection_string (or HEARTH_GLOBAL__DATABASE__CONNECTION_STRING).',
    );
    // Anything else is left to its own message.
    assert.equal(explainDatabaseFailure('postgres://h@db/chat', new Error('syntax error at or near "x"')), undefined);
  });
});

describe('folders that cannot be written', () => {
  // Root writes anywhere; without the capabilities that let it, the folder's mode applies to it too.
  const asOperator = (args: string[]) =>
    process.getuid?.() === 0
      ? spawnProcess('setpriv', ['--bounding-set=-dac_override,-dac_read_search', '--', process.execPath, ...hearthArgs(args)])
      : spawnProcess(process.execPath, hearthArgs(args));

  function readOnlyFolder(name: string): string {
    const folder = join(dir, name);
    mkdirSync(folder, { recursive: true });
    chmodSync(folder, 0o555);
    return folder;
  }

  test('a SQLite file in a folder that cannot be written: says which file, which folder and the key', async () => {
    const folder = readOnlyFolder('sqlite-readonly');
    const path = writeConfig('sqlite', { data_dir: './data', database: { connection_string: `file:${folder}/hearth.db` } });
    const hearth = asOperator(['serve', '--config', path]);
    try {
      const { code } = await hearth.exited();
      assert.equal(code, 1, hearth.stderr());
      assert.match(
        hearth.stderr(),
        new RegExp(
          `^hearth serve: cannot start: cannot open the SQLite database ${folder}/hearth\\.db: its folder ${folder} ` +
            'is missing or cannot be written by the user running Hearth \\(\\S+, uid \\d+\\)\\. Make it writable, or choose another place\\. ' +
            'The file is set by global\\.database\\.connection_string, by default inside global\\.data_dir\\.\\n$',
        ),
      );
    } finally {
      hearth.kill();
    }
  });

  test('a data folder that cannot be written: says which file and points at global.data_dir', async () => {
    const folder = readOnlyFolder('data-readonly');
    const path = writeConfig('data', { data_dir: folder });
    const hearth = asOperator(['serve', '--config', path]);
    try {
      const { code } = await hearth.exited();
      assert.equal(code, 1, hearth.stderr());
      assert.match(
        hearth.stderr(),
        new RegExp(
          `^hearth serve: cannot start: cannot write ${folder}/signing\\.key: permission denied for the user running Hearth ` +
            `\\(\\S+, uid \\d+\\)\\. Hearth keeps its files in global\\.data_dir \\(${folder}\\) .*make that folder writable`,
        ),
      );
    } finally {
      hearth.kill();
    }
  });
});
