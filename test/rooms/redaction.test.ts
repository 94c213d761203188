import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pdu } from '../../src/protocol/events.js';
import { RoomService } from '../../src/rooms/service.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { storageBackends } from '../support/databases.js';
import { rejectsWith, SERVER, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');
const bob = user('bob');
const carol = user('carol');
const dave = user('dave');

for (const backend of await storageBackends()) {
  describe(`redaction on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);

    const storedPdu = async (eventId: string): Promise<Pdu> =>
      JSON.parse((await h.database.db.selectFrom('events').select('json').where('event_id', '=', eventId).executeTakeFirstOrThrow()).json) as Pdu;

    for (const version of ['10', '11']) {
      test(`v${version}: a redacted event is served redacted, with unsigned.redacted_because`, async () => {
        const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat', roomVersion: version });
        await h.rooms.join(bob, roomId);
        const msg = await h.rooms.sendMessage(bob, roomId, 'm.room.message', { msgtype: 'm.text', body: 'oops' }, 't1');
        const redaction = await h.rooms.redact(bob, roomId, msg, { reason: 'typo', txnId: 'r1' });
        const served = await h.rooms.getEvent(alice, roomId, msg);
        assert.deepEqual(served.content, {});
        const because = served.unsigned.redacted_because as { event_id: string; type: string; content: Record<string, unknown>; redacts?: string };
        assert.equal(because.event_id, redaction);
        assert.equal(because.type, 'm.room.redaction');
        assert.equal(because.content.reason, 'typo');
        assert.equal(because.redacts, msg);
        // Where the room version puts `redacts` in the stored PDU.
        const pdu = await storedPdu(redaction);
        if (version === '11') {
          assert.equal(pdu.content.redacts, msg);
          assert.equal(pdu.redacts, undefined);
        } else {
          assert.equal(pdu.redacts, msg);
          assert.equal(pdu.content.redacts, undefined);
        }
        // The original stays stored in full; only serving redacts it.
        assert.equal((await storedPdu(msg)).content.body, 'oops');
        // In /messages too, and the redaction itself is served with `redacts`.
        const page = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 2 });
        assert.equal(page.chunk[0]!.event_id, redaction);
        assert.equal(page.chunk[0]!.redacts, msg);
        assert.deepEqual(page.chunk[1]!.content, {});
        // The same txnId gives the same redaction.
        assert.equal(await h.rooms.redact(bob, roomId, msg, { reason: 'typo', txnId: 'r1' }), redaction);
      });
    }

    test('redacting another user\'s event needs the redact level', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.join(bob, roomId);
      await h.rooms.join(carol, roomId);
      const msg = await h.rooms.sendMessage(carol, roomId, 'm.room.message', { body: 'mine' });
      await rejectsWith(h.rooms.redact(bob, roomId, msg), 403, 'M_FORBIDDEN');
      assert.equal((await h.rooms.getEvent(alice, roomId, msg)).content.body, 'mine');
      await h.rooms.redact(alice, roomId, msg, { reason: 'moderation' });
      assert.deepEqual((await h.rooms.getEvent(bob, roomId, msg)).content, {});
    });

    test('redacting a state event: served redacted, and the room summary follows', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat', visibility: 'public', name: 'Secret name' });
      const nameEvent = (await h.rooms.stateEvent(alice, roomId, 'm.room.name', '', 'event')) as { event_id: string };
      assert.equal((await h.rooms.publicRooms({})).chunk.find((r) => r.room_id === roomId)?.name, 'Secret name');
      await h.rooms.redact(alice, roomId, nameEvent.event_id);
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.name', ''), {});
      assert.equal((await h.rooms.publicRooms({})).chunk.find((r) => r.room_id === roomId)?.name, undefined);
    });

    test('authorization reads a redacted state event in its redacted form (v10 drops `invite` from power levels, v11 keeps it)', async () => {
      for (const [version, bobMayInvite] of [['10', true], ['11', false]] as const) {
        const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat', roomVersion: version }); // invite level 50
        await h.rooms.join(bob, roomId);
        await rejectsWith(h.rooms.invite(bob, roomId, carol.userId), 403, 'M_FORBIDDEN');
        const levels = (await h.rooms.stateEvent(alice, roomId, 'm.room.power_levels', '', 'event')) as { event_id: string };
        await h.rooms.redact(alice, roomId, levels.event_id);
        if (bobMayInvite) await h.rooms.invite(bob, roomId, carol.userId);
        else await rejectsWith(h.rooms.invite(bob, roomId, carol.userId), 403, 'M_FORBIDDEN');
        // A restarted service loads the state in the same redacted form.
        const again = new RoomService({ db: h.database.db, dialect: h.database.dialect, serverName: SERVER, signingKey: h.key, notifier: new InProcessBus() });
        if (bobMayInvite) await again.invite(bob, roomId, dave.userId);
        else await rejectsWith(again.invite(bob, roomId, dave.userId), 403, 'M_FORBIDDEN');
        // The protected levels survive either way: alice still rules, bob still may not set the name.
        await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'still allowed' });
        await rejectsWith(h.rooms.sendState(bob, roomId, 'm.room.name', '', { name: 'no' }), 403, 'M_FORBIDDEN');
        await again.sendState(alice, roomId, 'm.room.topic', '', { topic: 'after restart' });
      }
    });

    test('a redaction sent through /send redacts (as v11 clients send it)', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { roomVersion: '11' });
      const msg = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'gone soon' });
      const redaction = await h.rooms.sendMessage(alice, roomId, 'm.room.redaction', { redacts: msg, reason: 'why' }, 'via-send');
      const served = await h.rooms.getEvent(alice, roomId, msg);
      assert.deepEqual(served.content, {});
      assert.equal((served.unsigned.redacted_because as { event_id: string }).event_id, redaction);
      assert.equal(await h.rooms.sendMessage(alice, roomId, 'm.room.redaction', { redacts: msg, reason: 'why' }, 'via-send'), redaction);
      await rejectsWith(h.rooms.sendMessage(alice, roomId, 'm.room.redaction', { reason: 'no target' }), 400, 'M_BAD_JSON');
    });

    test('unknown events and rooms: 404; an event of another room: 400 M_UNKNOWN', async () => {
      const a = await h.rooms.createRoom(alice, {});
      const b = await h.rooms.createRoom(alice, {});
      const inB = await h.rooms.sendMessage(alice, b.roomId, 'm.room.message', { body: 'b' });
      await rejectsWith(h.rooms.redact(alice, a.roomId, '$doesnotexist'), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.redact(alice, a.roomId, inB), 400, 'M_UNKNOWN');
      await rejectsWith(h.rooms.redact(alice, `!nope:${SERVER}`, inB), 404, 'M_NOT_FOUND');
    });
  });
}
