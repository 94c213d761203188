// The real matrix-js-sdk (37.x) against a real server over /_matrix/, on SQLite and PostgreSQL: two
// clients log in with a password, sync, create a room, invite, join, talk, change their names,
// type, read, redact, and a third session pages back through history with scrollback.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as sdk from 'matrix-js-sdk';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';
import { type SdkClient, loginClient, startAndPrepare, waitForEmit, waitUntil } from './support/sdk.js';

type TimelineArgs = [sdk.MatrixEvent, sdk.Room | undefined, boolean | undefined, boolean, sdk.IRoomTimelineData];

/** Waits for a live (not paginated) timeline event in the room that `match` accepts. */
function liveEvent(owner: SdkClient, roomId: string, match: (e: sdk.MatrixEvent) => boolean, what: string): Promise<sdk.MatrixEvent> {
  return waitForEmit<TimelineArgs>(
    owner,
    owner.client,
    sdk.RoomEvent.Timeline,
    (event, room, toStart, removed) => room?.roomId === roomId && toStart !== true && !removed && match(event),
    what,
  ).then(([event]) => event);
}

for (const { backend, skip } of await serverBackends()) {
  describe(`matrix-js-sdk against the server on ${backend}`, { skip }, () => {
    let hs: TestServer;
    let alice: SdkClient;
    let bob: SdkClient;
    const started: SdkClient[] = [];
    let roomId: string;
    let hello: string;

    before(async () => {
      hs = await startTestServer({ backend });
      await hs.registerUser('alice', 'alice-pw');
      await hs.registerUser('bob', 'bob-pw');
    });
    after(async () => {
      for (const c of started) c.client.stopClient();
      await hs?.close();
    });

    test('both log in with a password and reach the PREPARED sync state', async () => {
      alice = await loginClient(hs.baseUrl, { identifier: { type: 'm.id.user', user: 'alice' }, password: 'alice-pw' });
      // The legacy `user` field, as older clients send it.
      bob = await loginClient(hs.baseUrl, { user: 'bob', password: 'bob-pw' } as Omit<sdk.LoginRequest, 'type'>);
      assert.equal(alice.userId, '@alice:localhost');
      assert.equal(bob.userId, '@bob:localhost');
      started.push(alice, bob);
      await Promise.all([startAndPrepare(alice), startAndPrepare(bob)]);
      // The SDK made its start-up requests under /_matrix/ and every one of them succeeded.
      for (const c of [alice, bob]) {
        const failed = c.exchanges.filter((e) => e.status >= 400);
        assert.deepEqual(failed, [], `${c.userId}'s failed requests`);
        assert.ok(c.exchanges.some((e) => e.path.startsWith('/_matrix/client/v3/sync')));
        assert.ok(c.exchanges.every((e) => e.path.startsWith('/_matrix/')));
      }
      assert.ok([sdk.SyncState.Prepared, sdk.SyncState.Syncing].includes(alice.client.getSyncState()!));
    });

    test('alice creates a room and invites bob; bob sees the invite and joins', async () => {
      const aliceHasRoom = waitForEmit<[sdk.Room]>(alice, alice.client, sdk.ClientEvent.Room, (r) => r.name === 'SDK room', 'the new room');
      roomId = (await alice.client.createRoom({ preset: sdk.Preset.PrivateChat, name: 'SDK room', topic: 'Made by the SDK' })).room_id;
      const [aliceRoom] = await aliceHasRoom;
      assert.equal(aliceRoom.roomId, roomId);
      assert.equal(aliceRoom.getMyMembership(), sdk.KnownMembership.Join);

      const invited = waitForEmit<[sdk.Room, string]>(
        bob,
        bob.client,
        sdk.RoomEvent.MyMembership,
        (room, membership) => room.roomId === roomId && membership === sdk.KnownMembership.Invite,
        'the invite',
      );
      await alice.client.invite(roomId, bob.userId);
      const [invitedRoom] = await invited;
      assert.equal(invitedRoom.name, 'SDK room', 'the invite carries the room name');
      assert.equal(invitedRoom.getMember(bob.userId)?.events.member?.getSender(), alice.userId);

      const bobJoinSeen = waitForEmit<[sdk.MatrixEvent, sdk.RoomMember]>(
        alice,
        alice.client,
        sdk.RoomMemberEvent.Membership,
        (_e, member) => member.roomId === roomId && member.userId === bob.userId && member.membership === sdk.KnownMembership.Join,
        "bob's join",
      );
      const joined = await bob.client.joinRoom(roomId);
      assert.equal(joined.roomId, roomId);
      await bobJoinSeen;
      await waitUntil(bob, () => bob.client.getRoom(roomId)?.getMyMembership() === sdk.KnownMembership.Join, "bob's own join");
      const bobRoom = bob.client.getRoom(roomId)!;
      assert.equal(bobRoom.currentState.getStateEvents('m.room.topic', '')?.getContent().topic, 'Made by the SDK');
      assert.deepEqual(bobRoom.getJoinedMembers().map((m) => m.userId).sort(), [alice.userId, bob.userId]);
    });

    test("alice's message reaches bob's timeline, and alice's local echo is confirmed", async () => {
      const arrives = liveEvent(bob, roomId, (e) => e.getType() === 'm.room.message', 'the message');
      const sent = await alice.client.sendTextMessage(roomId, 'Hello from the SDK');
      hello = sent.event_id;
      const event = await arrives;
      assert.equal(event.getId(), hello);
      assert.equal(event.getSender(), alice.userId);
      assert.deepEqual(event.getContent(), { msgtype: 'm.text', body: 'Hello from the SDK' });
      assert.ok(Math.abs(event.getTs() - Date.now()) < 10_000);
      // Alice's timeline holds the event once, under its real id, no longer pending.
      await waitUntil(alice, () => alice.client.getRoom(roomId)!.getLiveTimeline().getEvents().some((e) => e.getId() === hello && e.status === null), 'the remote echo');
      const mine = alice.client.getRoom(roomId)!.getLiveTimeline().getEvents().filter((e) => e.getContent().body === 'Hello from the SDK');
      assert.equal(mine.length, 1);
    });

    test('a display name change updates the member on the other client', async () => {
      const renamed = waitForEmit<[sdk.MatrixEvent, sdk.RoomMember]>(
        alice,
        alice.client,
        sdk.RoomMemberEvent.Name,
        (_e, member) => member.roomId === roomId && member.userId === bob.userId && member.name === 'Bob via SDK',
        "bob's new name",
      );
      await bob.client.setDisplayName('Bob via SDK');
      await renamed;
      assert.equal(alice.client.getRoom(roomId)!.getMember(bob.userId)!.rawDisplayName, 'Bob via SDK');
    });

    test('typing and read receipts reach the other client', async () => {
      const typing = waitForEmit<[sdk.MatrixEvent, sdk.RoomMember]>(
        alice,
        alice.client,
        sdk.RoomMemberEvent.Typing,
        (_e, member) => member.roomId === roomId && member.userId === bob.userId && member.typing,
        "bob's typing",
      );
      await bob.client.sendTyping(roomId, true, 10_000);
      await typing;

      const stopped = waitForEmit<[sdk.MatrixEvent, sdk.RoomMember]>(
        alice,
        alice.client,
        sdk.RoomMemberEvent.Typing,
        (_e, member) => member.roomId === roomId && member.userId === bob.userId && !member.typing,
        "bob's typing stopping",
      );
      await bob.client.sendTyping(roomId, false, 0);
      await stopped;

      // A receipt for a message after everything bob sent (his own events count as read by him).
      const arrives = liveEvent(bob, roomId, (e) => e.getContent().body === 'read me', 'the message to read');
      const target = (await alice.client.sendTextMessage(roomId, 'read me')).event_id;
      const event = await arrives;
      const read = waitForEmit<[sdk.MatrixEvent, sdk.Room]>(
        alice,
        alice.client,
        sdk.RoomEvent.Receipt,
        (_e, room) => room.roomId === roomId && room.getEventReadUpTo(bob.userId, true) === target,
        "bob's receipt",
      );
      await bob.client.sendReadReceipt(event, sdk.ReceiptType.Read);
      await read;
      const aliceRoom = alice.client.getRoom(roomId)!;
      assert.ok(aliceRoom.getUsersReadUpTo(aliceRoom.findEventById(target)!).includes(bob.userId));
      assert.equal(typeof aliceRoom.getReadReceiptForUserId(bob.userId, true)?.data.ts, 'number');
    });

    test('a redaction reaches the other client and strips the event', async () => {
      const target = liveEvent(bob, roomId, (e) => e.getContent().body === 'regrettable', 'the regrettable message');
      const sent = await alice.client.sendTextMessage(roomId, 'regrettable');
      await target;
      const redacted = waitForEmit<[sdk.MatrixEvent, sdk.Room]>(
        bob,
        bob.client,
        sdk.RoomEvent.Redaction,
        (e, room) => room.roomId === roomId && (e.event.redacts ?? e.getContent().redacts) === sent.event_id,
        'the redaction',
      );
      await alice.client.redactEvent(roomId, sent.event_id, undefined, { reason: 'typo' });
      await redacted;
      const event = bob.client.getRoom(roomId)!.findEventById(sent.event_id)!;
      assert.equal(event.isRedacted(), true);
      assert.deepEqual(event.getContent(), {});
      // The server serves it redacted too, with what redacted it.
      const served = await bob.client.fetchRoomEvent(roomId, sent.event_id);
      assert.deepEqual(served.content, {});
      assert.equal((served.unsigned?.redacted_because as { content?: { reason?: string } } | undefined)?.content?.reason, 'typo');
    });

    test('a new session pages back through the whole history with scrollback', async () => {
      const bodies: string[] = [];
      for (let i = 0; i < 25; i++) bodies.push(`history ${i}`);
      const ids: string[] = [];
      for (const body of bodies) ids.push((await alice.client.sendTextMessage(roomId, body)).event_id);

      const fresh = await loginClient(hs.baseUrl, { identifier: { type: 'm.id.user', user: 'bob' }, password: 'bob-pw' });
      started.push(fresh);
      await startAndPrepare(fresh, 10);
      const room = fresh.client.getRoom(roomId);
      assert.ok(room, 'the room is known after the first sync');
      const live = () => room.getLiveTimeline().getEvents();
      assert.ok(live().length <= 11, `the first sync holds at most the limit: ${live().length}`);
      assert.equal(live().at(-1)?.getId(), ids.at(-1));

      for (let i = 0; i < 20 && live()[0]?.getType() !== 'm.room.create'; i++) await fresh.client.scrollback(room, 10);
      const events = live();
      assert.equal(events[0]?.getType(), 'm.room.create', `scrollback reaches the start of the room:\n${fresh.trail()}`);
      const eventIds = events.map((e) => e.getId());
      assert.equal(new Set(eventIds).size, eventIds.length, 'no event twice');
      // The 25 messages in order, nothing between them; the earlier ones before them.
      const start = eventIds.indexOf(ids[0]!);
      assert.deepEqual(eventIds.slice(start, start + ids.length), ids);
      assert.ok(eventIds.indexOf(hello) < start && eventIds.indexOf(hello) > 0);
      const firstBodies = events.filter((e) => e.getType() === 'm.room.message' && !e.isRedacted()).map((e) => e.getContent().body);
      assert.deepEqual(firstBodies, ['Hello from the SDK', 'read me', ...bodies]);
      assert.ok(fresh.exchanges.some((e) => e.path.includes('/messages?')), 'scrollback asked /messages');
      assert.deepEqual(fresh.exchanges.filter((e) => e.status >= 400), []);
    });

    test('a room of version 12: its id names no server; bob joins it and a message arrives', async () => {
      const created = await alice.client.createRoom({ preset: sdk.Preset.PublicChat, name: 'Hydra', room_version: '12' });
      const hydra = created.room_id;
      assert.match(hydra, /^![A-Za-z0-9_-]{43}$/);
      await waitUntil(alice, () => alice.client.getRoom(hydra)?.getMyMembership() === sdk.KnownMembership.Join, "alice's v12 room");
      assert.equal(alice.client.getRoom(hydra)!.getVersion(), '12');
      await bob.client.joinRoom(hydra);
      await waitUntil(bob, () => bob.client.getRoom(hydra)?.getMyMembership() === sdk.KnownMembership.Join, "bob's join of the v12 room");
      const arrives = liveEvent(bob, hydra, (e) => e.getType() === 'm.room.message', 'the v12 message');
      const sent = await alice.client.sendTextMessage(hydra, 'Hello, hydra');
      assert.equal((await arrives).getId(), sent.event_id);
      // The creator's power is infinite, so she is not listed.
      const levels = bob.client.getRoom(hydra)!.currentState.getStateEvents('m.room.power_levels', '')!.getContent();
      assert.deepEqual(levels['users'], {});
    });

    test('no request any of the clients made was refused', () => {
      const failed = started.flatMap((c) => c.exchanges.filter((e) => e.status === 0 || e.status >= 400).map((e) => ({ user: c.userId, ...e })));
      // Requests cut short by stopping a client are not failures of the server.
      assert.deepEqual(failed.filter((e) => e.status !== 0), []);
    });
  });
}
