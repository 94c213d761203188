import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildHttpApp } from '../../src/http/app.js';
import { LOG_FILE_NAME, setUpLogging } from '../../src/server/logging.js';

test('each log target receives the lines at or above its own level', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-logs-'));
  try {
    const std: string[] = [];
    const setup = setUpLogging(
      [
        { type: 'std', level: 'info', path: null },
        { type: 'file', level: 'warn', path: join(dir, 'logs') },
      ],
      (line) => std.push(line),
    );
    assert.ok(setup.logger);
    assert.equal(setup.logger.level, 'info');
    const app = buildHttpApp([], { logger: setup.logger });
    app.log.debug('debug line');
    app.log.info('info line');
    app.log.warn('warn line');
    app.log.error({ detail: 7 }, 'error line');
    await app.close();
    await setup.close();

    const messages = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
    assert.deepEqual(messages(std).filter((m) => m.endsWith(' line')), ['info line', 'warn line', 'error line']);
    const file = readFileSync(join(dir, 'logs', LOG_FILE_NAME), 'utf8').trim().split('\n');
    assert.deepEqual(messages(file), ['warn line', 'error line']);
    assert.equal((JSON.parse(file[1]!) as { detail: number }).detail, 7);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no log targets: no logger', async () => {
  const setup = setUpLogging([]);
  assert.equal(setup.logger, false);
  await setup.close();
});

test('the lowest target level is the logger level', () => {
  const setup = setUpLogging([
    { type: 'std', level: 'error', path: null },
    { type: 'std', level: 'debug', path: null },
  ], () => {});
  assert.ok(setup.logger);
  assert.equal(setup.logger.level, 'debug');
});
