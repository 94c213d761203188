// Profile reads and the user directory on a real server, on SQLite and PostgreSQL, answering as
// Synapse does: a profile field the user has not set is 200 `{}` (404 only for an unknown user),
// the whole profile with nothing set is 404, and the directory never offers the searcher themself.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, type Reply } from '../sync/sync-client.js';

function expectError(r: Reply, status: number, errcode: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.errcode, errcode, JSON.stringify(r.body));
  assert.equal(typeof r.body.error, 'string');
}

const ids = (r: any) => (r.results as { user_id: string }[]).map((x) => x.user_id);

for (const { backend, skip } of await serverBackends()) {
  describe(`profile reads and the user directory on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);
    const anonymous = async (path: string): Promise<Reply> => {
      const { status, body } = await new HttpClient(hs.baseUrl).get(path);
      return { status, body };
    };

    test('a field not set is 200 {}; an unknown user 404; a malformed user id 400', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const profile = `/profile/${enc(alice.userId)}`;
      // Registration set the localpart as display name; no avatar.
      assert.deepEqual(await bob.ok('GET', profile), { displayname: alice.userId.slice(1).split(':')[0] });
      assert.deepEqual(await bob.ok('GET', `${profile}/avatar_url`), {});
      assert.deepEqual(await anonymous(`${profile}/avatar_url`), { status: 200, body: {} });

      await alice.ok('PUT', `${profile}/avatar_url`, { avatar_url: 'mxc://localhost/pic' });
      await alice.ok('PUT', `${profile}/displayname`, { displayname: '' });
      assert.deepEqual(await bob.ok('GET', `${profile}/displayname`), {});
      assert.deepEqual(await bob.ok('GET', `${profile}/avatar_url`), { avatar_url: 'mxc://localhost/pic' });
      assert.deepEqual(await bob.ok('GET', profile), { avatar_url: 'mxc://localhost/pic' });

      // Nothing set at all: each field is {}, the whole profile 404.
      await alice.ok('PUT', `${profile}/avatar_url`, { avatar_url: '' });
      assert.deepEqual(await bob.ok('GET', `${profile}/displayname`), {});
      assert.deepEqual(await bob.ok('GET', `/_chat/client/r0/profile/${enc(alice.userId)}/avatar_url`), {});
      expectError(await bob.call('GET', profile), 404, 'M_NOT_FOUND');

      const nobody = `/profile/${enc('@nobody:localhost')}`;
      expectError(await bob.call('GET', nobody), 404, 'M_NOT_FOUND');
      expectError(await bob.call('GET', `${nobody}/displayname`), 404, 'M_NOT_FOUND');
      expectError(await anonymous(`${nobody}/avatar_url`), 404, 'M_NOT_FOUND');
      for (const bad of ['nobody', '@nobody', 'localhost']) {
        expectError(await bob.call('GET', `/profile/${enc(bad)}`), 400, 'M_INVALID_PARAM');
        expectError(await bob.call('GET', `/profile/${enc(bad)}/displayname`), 400, 'M_INVALID_PARAM');
      }
    });

    test('a deactivated user keeps the profile they had', async () => {
      const carol = await user('carol');
      const bob = await user('bob');
      const profile = `/profile/${enc(carol.userId)}`;
      await carol.ok('PUT', `${profile}/displayname`, { displayname: 'Carol' });
      await carol.ok('POST', '/account/deactivate', {
        auth: { type: 'm.login.password', identifier: { type: 'm.id.user', user: carol.userId }, password: 'secret' },
      });
      assert.deepEqual(await bob.ok('GET', profile), { displayname: 'Carol' });
      assert.deepEqual(await bob.ok('GET', `${profile}/displayname`), { displayname: 'Carol' });
      assert.deepEqual(await bob.ok('GET', `${profile}/avatar_url`), {});
    });

    test('the user directory never returns the searcher', async () => {
      const dana = await user('dana');
      const erin = await user('erin');
      await dana.ok('PUT', `/profile/${enc(dana.userId)}/displayname`, { displayname: 'Zebra Finch' });
      await erin.ok('PUT', `/profile/${enc(erin.userId)}/displayname`, { displayname: 'Zebra Crossing' });
      // Both in a public room: each is visible to everyone, the searcher included.
      const roomId = await dana.createRoom({ preset: 'public_chat' });
      await erin.join(roomId);
      const search = (c: typeof dana, term: string) => c.ok('POST', '/user_directory/search', { search_term: term, limit: 10 });
      assert.deepEqual(ids(await search(dana, 'zebra')), [erin.userId]);
      assert.deepEqual(ids(await search(erin, 'zebra')), [dana.userId]);
      assert.deepEqual(ids(await search(dana, 'finch')), []);
      assert.deepEqual(ids(await search(dana, dana.userId.slice(1).split(':')[0]!)), []);
      assert.deepEqual(ids(await search(erin, 'finch')), [dana.userId]);
    });
  });
}
