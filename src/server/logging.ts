// Log destinations from the `logging` key: each target (standard output, or a file in a folder)
// gets the lines at or above its own level. Fastify's logger (pino) writes JSON lines into one
// stream, which fans them out.

import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import type { LogLevel, LogTarget } from '../config/index.js';

/** pino's numeric levels. */
const LEVEL_VALUES: Readonly<Record<LogLevel, number>> = { debug: 20, info: 30, warn: 40, error: 50 };

export const LOG_FILE_NAME = 'hearth.log';

export interface LogSetup {
  /** Fastify's `logger` option: false when no target is configured. */
  readonly logger: false | { level: LogLevel; stream: { write(line: string): void } };
  /** Flushes and closes the log files. */
  close(): Promise<void>;
}

interface Sink {
  readonly min: number;
  write(line: string): void;
}

function lineLevel(line: string): number {
  const match = /"level":(\d+)/.exec(line);
  return match ? Number(match[1]) : LEVEL_VALUES.error;
}

export function setUpLogging(targets: readonly LogTarget[], stdout: (line: string) => void = (l) => void process.stdout.write(l)): LogSetup {
  if (targets.length === 0) return { logger: false, close: async () => {} };
  const files: WriteStream[] = [];
  const sinks: Sink[] = targets.map((target) => {
    const min = LEVEL_VALUES[target.level];
    if (target.type === 'std' || target.path === null) return { min, write: stdout };
    mkdirSync(target.path, { recursive: true });
    const file = createWriteStream(join(target.path, LOG_FILE_NAME), { flags: 'a' });
    files.push(file);
    return { min, write: (line) => void file.write(line) };
  });
  const lowest = Math.min(...sinks.map((s) => s.min));
  const level = (Object.keys(LEVEL_VALUES) as LogLevel[]).find((l) => LEVEL_VALUES[l] === lowest)!;
  const stream = {
    write(line: string): void {
      const value = lineLevel(line);
      for (const sink of sinks) if (value >= sink.min) sink.write(line);
    },
  };
  return {
    logger: { level, stream },
    close: () =>
      Promise.all(files.map((f) => new Promise<void>((resolve) => f.end(() => resolve())))).then(() => undefined),
  };
}
