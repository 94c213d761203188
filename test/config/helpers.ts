// Temporary folders holding real configuration files.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/config/index.js';

export class TempDir {
  readonly path = mkdtempSync(join(tmpdir(), 'hearth-config-'));

  /** Writes `text` to `name` (folders created) and returns its absolute path. */
  write(name: string, text: string): string {
    const file = join(this.path, name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return file;
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}

/** Runs `fn`, which must throw a ConfigError, and returns the error. */
export function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a ConfigError, nothing was thrown');
}

/** The problem lines of a ConfigError's message (the lines after the heading). */
export function problemLines(err: ConfigError): string[] {
  return err.message.split('\n').slice(1).map((l) => l.trim());
}
