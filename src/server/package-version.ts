// The package's version, as `hearth version` prints it and /federation/v1/version answers it.

import { readFileSync } from 'node:fs';

/** package.json sits two folders up from both src/server/ and dist/server/. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}
