// The matrix-bot-sdk npm package, loaded for tests without its end-to-end encryption module.
//
// matrix-bot-sdk requires `@matrix-org/matrix-sdk-crypto-nodejs` as it loads (its e2ee/ files), and
// that package's index.js throws unless a native binary was downloaded from GitHub by its install
// script ("Cannot find module '@matrix-org/matrix-sdk-crypto-nodejs-linux-x64-gnu'"), which CI and
// offline installs do not have. The tests use no encryption, and the SDK reads nothing of that
// module at load time (only inside the methods of its crypto client), so a stand-in is put into
// the CommonJS cache under the module's path before the SDK is loaded with the same `require`.
// Anything the SDK does take from the stand-in throws, naming it.
//
//   import { MatrixBotSdk } from '../support/bot-sdk.js';
//   const { Appservice, MemoryStorageProvider } = MatrixBotSdk;

import { createRequire } from 'node:module';

type BotSdk = typeof import('matrix-bot-sdk');

const require = createRequire(import.meta.url);
const CRYPTO_MODULE = '@matrix-org/matrix-sdk-crypto-nodejs';

function unavailable(name: string): never {
  throw new Error(`${CRYPTO_MODULE}.${name} is not available in tests (its native binary is not installed)`);
}

/** `module.exports` of the stand-in: every export is a class or function that throws when used. */
const cryptoStandIn: object = new Proxy(
  {},
  {
    get(_target, key) {
      // Looked at by module loaders and inspection; not exports.
      if (typeof key === 'symbol' || key === '__esModule' || key === 'then' || key === 'default') return undefined;
      return new Proxy(function standIn() {}, {
        apply: () => unavailable(key),
        construct: () => unavailable(key),
        get: (_fn, member) => (typeof member === 'symbol' ? undefined : unavailable(`${key}.${String(member)}`)),
      });
    },
  },
);

function loadBotSdk(): BotSdk {
  const path = require.resolve(CRYPTO_MODULE);
  if (require.cache[path] === undefined) {
    // A loaded Module in all but its contents: the SDK only ever sees `exports`.
    require.cache[path] = { id: path, filename: path, loaded: true, exports: cryptoStandIn, children: [], paths: [] } as unknown as NodeJS.Module;
  }
  return require('matrix-bot-sdk') as BotSdk;
}

export const MatrixBotSdk: BotSdk = loadBotSdk();
