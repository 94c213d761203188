// room_server.default_room_version: rooms created without a version get it, and /capabilities
// names it as the default. YAML reads `11` as a number: it is taken as the version "11".

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestServer } from '../support/server.js';
import { clients, enc } from '../sync/sync-client.js';

describe('the default room version from the configuration', () => {
  const hs = useTestServer({ config: { room_server: { default_room_version: 11 } } });
  const user = clients(hs);

  test('a room created without a version gets it; /capabilities names it', async () => {
    const alice = await user('alice');
    const roomId = await alice.createRoom({});
    const create = await alice.ok('GET', `/rooms/${enc(roomId)}/state/m.room.create/`);
    assert.equal(create.room_version, '11');
    assert.equal(create.creator, undefined);
    const asked = await alice.createRoom({ room_version: '9' });
    assert.equal((await alice.ok('GET', `/rooms/${enc(asked)}/state/m.room.create/`)).room_version, '9');
    const caps = await alice.ok('GET', '/capabilities');
    assert.equal(caps.capabilities['m.room_versions'].default, '11');
  });
});
