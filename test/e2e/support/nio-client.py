#!/usr/bin/python3
# Drives a running server with matrix-nio's AsyncClient (over /_matrix/client/r0, token in the query)
# and prints, as one JSON object on stdout, what nio observed. test/e2e/matrix-nio.test.ts asserts on it.
# Any failed request, refused response shape or missing event ends the script with a nonzero status and
# the reason on stderr.
#
#   nio-client.py BASE_URL ALICE_USER ALICE_PASSWORD BOB_LOCALPART BOB_PASSWORD
#
# Alice exists already; bob is registered here through nio (m.login.dummy).

import asyncio
import json
import logging
import sys
import time

from nio import (
    AsyncClient,
    AsyncClientConfig,
    FullyReadEvent,
    JoinedMembersResponse,
    JoinResponse,
    KeyVerificationCancel,
    LoginResponse,
    LogoutResponse,
    ProfileGetResponse,
    ProfileSetDisplayNameResponse,
    ReceiptEvent,
    RedactedEvent,
    RedactionEvent,
    RegisterResponse,
    RoomCreateResponse,
    RoomGetStateEventResponse,
    RoomMessagesResponse,
    RoomMessageText,
    RoomPutStateResponse,
    RoomReadMarkersResponse,
    RoomRedactResponse,
    RoomSendResponse,
    RoomTypingResponse,
    SyncError,
    SyncResponse,
    ToDeviceMessage,
    ToDeviceResponse,
    TypingNoticeEvent,

)
from nio.responses import InviteInfo, WhoamiResponse

# nio reports a response that fails its schema only as a warning; keep those on stderr.
logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")

WAIT_SECONDS = 15
CONFIG = AsyncClientConfig(encryption_enabled=False, store_sync_tokens=False, max_timeouts=2, request_timeout=30)


class Failure(Exception):
    pass


def expect(resp, cls, what):
    """The response if nio parsed it as `cls`; otherwise fails with what nio and the server said."""
    if isinstance(resp, cls):
        return resp
    status = getattr(getattr(resp, "transport_response", None), "status", None)
    raise Failure(
        f"{what}: expected {cls.__name__}, got {type(resp).__name__} "
        f"(HTTP {status}, status_code={getattr(resp, 'status_code', None)!r}, message={getattr(resp, 'message', None)!r})"
    )


class Observer:
    """What one client's sync loop delivered, with a way to wait for something to show up."""

    def __init__(self, client, name):
        self.client = client
        self.name = name
        self.timeline = []  # (room_id, event)
        self.ephemeral = []  # (room_id, event)
        self.room_account_data = []  # (room_id, event)
        self.to_device = []
        self.sync_errors = []
        self.changed = asyncio.Condition()
        client.add_event_callback(self._on_timeline, None)
        client.add_ephemeral_callback(self._on_ephemeral, (TypingNoticeEvent, ReceiptEvent))
        client.add_room_account_data_callback(self._on_room_account_data, (FullyReadEvent,))
        client.add_to_device_callback(self._on_to_device, (KeyVerificationCancel,))
        client.add_response_callback(self._on_sync, (SyncResponse, SyncError))

    async def _note(self, target, item):
        target.append(item)
        async with self.changed:
            self.changed.notify_all()

    async def _on_timeline(self, room, event):
        await self._note(self.timeline, (room.room_id, event))

    async def _on_ephemeral(self, room, event):
        await self._note(self.ephemeral, (room.room_id, event))

    async def _on_room_account_data(self, room, event):
        await self._note(self.room_account_data, (room.room_id, event))

    async def _on_to_device(self, event):
        await self._note(self.to_device, event)

    async def _on_sync(self, resp):
        # Every sync may change the client's room state (members, names), which tests also wait on.
        if isinstance(resp, SyncError):
            self.sync_errors.append(f"{resp.status_code}: {resp.message}")
        async with self.changed:
            self.changed.notify_all()

    async def until(self, found, what):
        """Waits until `found()` returns something truthy and returns it."""

        def check():
            if self.sync_errors:
                raise Failure(f"{self.name}'s sync failed while waiting for {what}: {self.sync_errors}")
            return found()

        deadline = time.monotonic() + WAIT_SECONDS
        try:
            async with self.changed:
                result = check()
                while not result:
                    await asyncio.wait_for(self.changed.wait(), max(0.0, deadline - time.monotonic()))
                    result = check()
                return result
        except asyncio.TimeoutError:
            raise Failure(f"{self.name} did not see {what} within {WAIT_SECONDS} s") from None


async def main(base_url, alice_user, alice_password, bob_localpart, bob_password):
    out = {}
    clients = []
    loops = []
    try:
        # Registration through nio's dummy flow; that session then logs out and its token stops working.
        reg = AsyncClient(base_url, config=CONFIG)
        clients.append(reg)
        registered = expect(await reg.register(bob_localpart, bob_password, "nio registration"), RegisterResponse, "register")
        reg.access_token = registered.access_token
        reg.user_id = registered.user_id
        who = expect(await reg.whoami(), WhoamiResponse, "whoami after register")
        out["registered"] = {"user_id": registered.user_id, "device_id": registered.device_id, "whoami": who.user_id}
        expect(await reg.logout(), LogoutResponse, "logout of the registration session")
        after = await reg.whoami()
        out["registered"]["whoami_after_logout"] = {
            "class": type(after).__name__,
            "status_code": getattr(after, "status_code", None),
        }
        out["registered"]["token"] = registered.access_token

        alice = AsyncClient(base_url, alice_user, config=CONFIG)
        bob = AsyncClient(base_url, bob_localpart, config=CONFIG)
        clients += [alice, bob]
        a_login = expect(await alice.login(alice_password, device_name="nio alice"), LoginResponse, "alice's login")
        b_login = expect(await bob.login(bob_password, device_name="nio bob"), LoginResponse, "bob's login")
        out["alice"] = {"user_id": a_login.user_id, "device_id": a_login.device_id}
        out["bob"] = {"user_id": b_login.user_id, "device_id": b_login.device_id, "token": b_login.access_token}
        if b_login.device_id == registered.device_id:
            raise Failure("bob's login reused the registration's device")

        a_obs = Observer(alice, "alice")
        b_obs = Observer(bob, "bob")
        expect(await alice.sync(timeout=0, full_state=True), SyncResponse, "alice's initial sync")
        expect(await bob.sync(timeout=0, full_state=True), SyncResponse, "bob's initial sync")

        # Alice creates a room and invites bob in the same request.
        created = expect(
            await alice.room_create(name="nio room", topic="Made by matrix-nio", invite=[bob.user_id]),
            RoomCreateResponse,
            "room_create",
        )
        room_id = created.room_id
        out["room_id"] = room_id

        # Bob's long-polling sync sees the invite with the room's stripped state.
        invite = None
        deadline = time.monotonic() + WAIT_SECONDS
        while invite is None:
            if time.monotonic() > deadline:
                raise Failure("bob's sync never showed the invite")
            synced = expect(await bob.sync(timeout=5000), SyncResponse, "bob's sync for the invite")
            invite = synced.rooms.invite.get(room_id)
        assert isinstance(invite, InviteInfo)
        invited_room = bob.invited_rooms[room_id]
        my_member = next(
            (e for e in invite.invite_state if getattr(e, "state_key", None) == bob.user_id and e.membership == "invite"),
            None,
        )
        out["invite"] = {
            "room_name": invited_room.name,
            "inviter": getattr(my_member, "sender", None),
            "membership": getattr(my_member, "membership", None),
            "stripped_types": sorted({type(e).__name__ for e in invite.invite_state}),
        }

        joined = expect(await bob.join(room_id), JoinResponse, "bob's join")
        out["join_room_id"] = joined.room_id

        # From here on both clients sync in the background, as a nio bot does.
        loops += [
            asyncio.ensure_future(alice.sync_forever(timeout=5000)),
            asyncio.ensure_future(bob.sync_forever(timeout=5000)),
        ]
        await b_obs.until(lambda: room_id in bob.rooms and bob.user_id in bob.rooms[room_id].users, "his own join")
        await a_obs.until(lambda: room_id in alice.rooms and bob.user_id in alice.rooms[room_id].users, "bob's join")
        out["room_seen_by_bob"] = {"name": bob.rooms[room_id].name, "topic": bob.rooms[room_id].topic}

        # Messages with transaction ids; resending one id gives back the same event.
        sent = []
        for i, body in enumerate(["first from nio", "second from nio", "third from nio"]):
            tx = f"nio-txn-{i}"
            resp = expect(
                await alice.room_send(room_id, "m.room.message", {"msgtype": "m.text", "body": body}, tx_id=tx),
                RoomSendResponse,
                f"room_send {i}",
            )
            sent.append({"tx_id": tx, "event_id": resp.event_id, "body": body})
        again = expect(
            await alice.room_send(room_id, "m.room.message", {"msgtype": "m.text", "body": "first from nio"}, tx_id="nio-txn-0"),
            RoomSendResponse,
            "room_send with a reused transaction id",
        )
        out["sent"] = sent
        out["resent_event_id"] = again.event_id

        sent_ids = {s["event_id"] for s in sent}
        bodies = {s["body"] for s in sent}

        def bob_messages():
            return [
                e for (r, e) in b_obs.timeline
                if r == room_id and isinstance(e, RoomMessageText) and e.body in bodies
            ]

        await b_obs.until(lambda: sent_ids <= {e.event_id for e in bob_messages()}, "alice's three messages")

        # Paging backwards from bob's current sync token to the start of the room.
        pages = []
        token = bob.next_batch
        for _ in range(30):
            page = expect(await bob.room_messages(room_id, token, limit=3), RoomMessagesResponse, "room_messages")
            pages.append(
                {
                    "from": token,
                    "start": page.start,
                    "end": page.end,
                    "events": [
                        {"event_id": e.event_id, "type": e.source.get("type"), "class": type(e).__name__}
                        for e in page.chunk
                    ],
                }
            )
            if not page.end or not page.chunk:
                break
            token = page.end
        out["pages"] = pages

        # Alice redacts the second message; bob's sync shows the redaction and the server serves it stripped.
        target = sent[1]["event_id"]
        redaction = expect(await alice.room_redact(room_id, target, reason="typo", tx_id="nio-redact-1"), RoomRedactResponse, "room_redact")
        seen = await b_obs.until(
            lambda: next(
                (e for (r, e) in b_obs.timeline if r == room_id and isinstance(e, RedactionEvent) and e.redacts == target),
                None,
            ),
            "the redaction",
        )
        after_redaction = expect(await bob.room_messages(room_id, bob.next_batch, limit=10), RoomMessagesResponse, "room_messages after the redaction")
        stripped = next((e for e in after_redaction.chunk if e.event_id == target), None)
        out["redaction"] = {
            "target": target,
            "event_id": redaction.event_id,
            "seen_event_id": seen.event_id,
            "seen_sender": seen.sender,
            "seen_reason": seen.reason,
            "paged_class": type(stripped).__name__ if stripped else None,
            "paged_content": stripped.source.get("content") if stripped else None,
            "paged_redacted_by": stripped.redacter if isinstance(stripped, RedactedEvent) else None,
            "paged_reason": stripped.reason if isinstance(stripped, RedactedEvent) else None,
        }

        # A custom state event, written by alice and read back by bob, and seen in bob's timeline.
        put = expect(
            await alice.room_put_state(room_id, "org.example.nio.state", {"colour": "teal", "n": 7}, state_key="k1"),
            RoomPutStateResponse,
            "room_put_state",
        )
        got = expect(await bob.room_get_state_event(room_id, "org.example.nio.state", "k1"), RoomGetStateEventResponse, "room_get_state_event")
        in_sync = await b_obs.until(
            lambda: next((e for (r, e) in b_obs.timeline if r == room_id and getattr(e, "event_id", None) == put.event_id), None),
            "the custom state event",
        )
        missing = await bob.room_get_state_event(room_id, "org.example.nio.state", "absent")
        out["state"] = {
            "event_id": put.event_id,
            "content": got.content,
            "event_type": got.event_type,
            "state_key": got.state_key,
            "sync_type": in_sync.type,
            "sync_state_key": in_sync.source.get("state_key"),
            "missing_class": type(missing).__name__,
            "missing_status_code": getattr(missing, "status_code", None),
        }

        # Bob's display name: set, read back by alice, and seen in alice's room member list via sync.
        expect(await bob.set_displayname("Bob via nio"), ProfileSetDisplayNameResponse, "set_displayname")
        profile = expect(await alice.get_profile(bob.user_id), ProfileGetResponse, "get_profile")
        await a_obs.until(
            lambda: alice.rooms[room_id].users.get(bob.user_id) is not None
            and alice.rooms[room_id].users[bob.user_id].display_name == "Bob via nio",
            "bob's new display name",
        )
        out["profile"] = {
            "displayname": profile.displayname,
            "avatar_url": profile.avatar_url,
            "room_name_for_bob": alice.rooms[room_id].user_name(bob.user_id),
        }

        # Typing reaches alice as an ephemeral event, and its end too.
        expect(await bob.room_typing(room_id, True, 10000), RoomTypingResponse, "room_typing on")
        typing_on = await a_obs.until(
            lambda: next((e for (r, e) in a_obs.ephemeral if r == room_id and isinstance(e, TypingNoticeEvent) and bob.user_id in e.users), None),
            "bob typing",
        )
        mark = len(a_obs.ephemeral)
        expect(await bob.room_typing(room_id, False), RoomTypingResponse, "room_typing off")
        typing_off = await a_obs.until(
            lambda: next((e for (r, e) in a_obs.ephemeral[mark:] if r == room_id and isinstance(e, TypingNoticeEvent) and bob.user_id not in e.users), None),
            "bob stopping typing",
        )
        out["typing"] = {"on": list(typing_on.users), "off": list(typing_off.users)}

        # Read markers: the receipt reaches alice, the fully-read marker bob's own room account data.
        read_target = sent[2]["event_id"]
        expect(await bob.room_read_markers(room_id, read_target, read_target), RoomReadMarkersResponse, "room_read_markers")
        receipt = await a_obs.until(
            lambda: next(
                (
                    rc
                    for (r, e) in a_obs.ephemeral
                    if r == room_id and isinstance(e, ReceiptEvent)
                    for rc in e.receipts
                    if rc.user_id == bob.user_id and rc.event_id == read_target
                ),
                None,
            ),
            "bob's read receipt",
        )
        fully_read = await b_obs.until(
            lambda: next((e for (r, e) in b_obs.room_account_data if r == room_id and isinstance(e, FullyReadEvent)), None),
            "his fully-read marker",
        )
        out["receipt"] = {
            "event_id": receipt.event_id,
            "user_id": receipt.user_id,
            "receipt_type": receipt.receipt_type,
            "ts": receipt.timestamp,
            "fully_read": fully_read.event_id,
        }

        # A to-device message to bob's device, sent twice under one transaction id: delivered once.
        message = ToDeviceMessage(
            "m.key.verification.cancel",
            bob.user_id,
            bob.device_id,
            {"transaction_id": "nio-verification-1", "code": "m.user", "reason": "just testing"},
        )
        expect(await alice.to_device(message, "nio-td-1"), ToDeviceResponse, "to_device")
        expect(await alice.to_device(message, "nio-td-1"), ToDeviceResponse, "to_device repeated")
        first = await b_obs.until(lambda: b_obs.to_device[0] if b_obs.to_device else None, "the to-device message")
        # A second message after it: once it is in, a duplicate of the first would have been too.
        later = ToDeviceMessage(message.type, bob.user_id, bob.device_id, {**message.content, "transaction_id": "nio-verification-2"})
        expect(await alice.to_device(later, "nio-td-2"), ToDeviceResponse, "the second to_device")
        await b_obs.until(lambda: any(e.transaction_id == "nio-verification-2" for e in b_obs.to_device), "the second to-device message")
        out["to_device"] = {
            "transaction_ids": [e.transaction_id for e in b_obs.to_device],
            "sender": first.sender,
            "transaction_id": first.transaction_id,
            "code": first.code,
            "reason": first.reason,
        }

        members = expect(await alice.joined_members(room_id), JoinedMembersResponse, "joined_members")
        out["joined_members"] = sorted(
            ({"user_id": m.user_id, "display_name": m.display_name} for m in members.members),
            key=lambda m: m["user_id"],
        )

        # Collected last, after many more syncs: a message delivered twice would show here.
        out["bob_received"] = [
            {"event_id": e.event_id, "sender": e.sender, "body": e.body, "ts": e.server_timestamp}
            for e in bob_messages()
        ]

        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        out["sync_errors"] = {"alice": a_obs.sync_errors, "bob": b_obs.sync_errors}

        expect(await alice.logout(), LogoutResponse, "alice's logout")
        expect(await bob.logout(), LogoutResponse, "bob's logout")
        out["logged_out"] = True
        return out
    finally:
        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        for c in clients:
            await c.close()


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__ or "usage: nio-client.py BASE_URL ALICE_USER ALICE_PASSWORD BOB_LOCALPART BOB_PASSWORD", file=sys.stderr)
        sys.exit(2)
    try:
        result = asyncio.run(asyncio.wait_for(main(*sys.argv[1:]), 50))
    except Failure as err:
        print(f"nio-client: {err}", file=sys.stderr)
        sys.exit(1)
    except asyncio.TimeoutError:
        print("nio-client: gave up after 50 s", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(result))
