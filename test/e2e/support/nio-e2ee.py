#!/usr/bin/python3
# Drives a running server with matrix-nio's AsyncClient and end-to-end encryption (python3-olm) as a
# real encrypted room does: every user logs in over HTTP with a fresh device, uploads its device and
# one-time keys, the sender makes an encrypted room and invites the others, they join, and the
# sender sends its messages one after another at full speed (nio shares the room key with every
# device first: key query, one-time key claim, to-device messages). Each recipient syncs until it
# has decrypted every message. Prints, as one JSON object on stdout, every HTTP status nio received
# and what each recipient decrypted; test/e2e/rate-limits.test.ts asserts on it.
#
#   nio-e2ee.py BASE_URL PASSWORD MESSAGES SENDER RECIPIENT...
#
# The users exist already and share PASSWORD. nio is told never to retry a 429, so a rate-limited
# request fails the run instead of being hidden by a retry.

import asyncio
import json
import logging
import shutil
import sys
import tempfile
import time

from nio import (
    AsyncClient,
    AsyncClientConfig,
    JoinResponse,
    KeysUploadResponse,
    LoginResponse,
    MegolmEvent,
    RoomCreateResponse,
    RoomMessageText,
    RoomSendResponse,
    SyncResponse,
)
from nio.exceptions import EncryptionError

logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")

WAIT_SECONDS = 60
CONFIG = AsyncClientConfig(
    encryption_enabled=True,
    store_sync_tokens=False,
    max_limit_exceeded=0,
    max_timeouts=2,
    request_timeout=60,
)

# Every HTTP response any client received: (user, method, path without query, status).
RESPONSES = []
_send = AsyncClient.send


async def _recording_send(self, method, path, *args, **kwargs):
    resp = await _send(self, method, path, *args, **kwargs)
    RESPONSES.append([self.user_id, method.upper(), path.split("?")[0], resp.status])
    return resp


AsyncClient.send = _recording_send


class Failure(Exception):
    pass


def expect(resp, cls, what):
    if isinstance(resp, cls):
        return resp
    status = getattr(getattr(resp, "transport_response", None), "status", None)
    raise Failure(
        f"{what}: expected {cls.__name__}, got {type(resp).__name__} "
        f"(HTTP {status}, status_code={getattr(resp, 'status_code', None)!r}, message={getattr(resp, 'message', None)!r})"
    )


class Recipient:
    """One receiving client: the bodies it decrypted in the room, and the events it could not yet."""

    def __init__(self, client, room_ids):
        self.client = client
        self.room_ids = room_ids
        self.bodies = []
        self.pending = []
        self.sync_errors = []
        client.add_event_callback(self._on_text, RoomMessageText)
        client.add_event_callback(self._on_encrypted, MegolmEvent)

    async def _on_text(self, room, event):
        if room.room_id in self.room_ids:
            self.bodies.append(event.body)

    async def _on_encrypted(self, room, event):
        if room.room_id in self.room_ids:
            self.pending.append(event)

    def retry_pending(self):
        """Decrypts events that came before their key (nio does not retry them by itself)."""
        still = []
        for event in self.pending:
            try:
                decrypted = self.client.decrypt_event(event)
            except EncryptionError:
                still.append(event)
                continue
            if isinstance(decrypted, RoomMessageText):
                self.bodies.append(decrypted.body)
        self.pending = still


async def main(base_url, password, count, sender_id, recipient_ids):
    stores = []
    clients = []
    loops = []
    try:
        def new_client(user_id):
            store = tempfile.mkdtemp(prefix="nio-e2ee-")
            stores.append(store)
            client = AsyncClient(base_url, user_id, store_path=store, config=CONFIG)
            clients.append(client)
            return client

        sender = new_client(sender_id)
        receivers = [new_client(user_id) for user_id in recipient_ids]

        # Every user logs in with a new device and uploads its device and one-time keys.
        for client in [sender, *receivers]:
            expect(await client.login(password, device_name="nio e2ee"), LoginResponse, f"{client.user_id}'s login")
            if not client.should_upload_keys:
                raise Failure(f"{client.user_id} has no keys to upload after login")
            expect(await client.keys_upload(), KeysUploadResponse, f"{client.user_id}'s key upload")
            expect(await client.sync(timeout=0, full_state=True), SyncResponse, f"{client.user_id}'s first sync")

        created = expect(
            await sender.room_create(
                name="encrypted",
                invite=list(recipient_ids),
                initial_state=[
                    {"type": "m.room.encryption", "state_key": "", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}
                ],
            ),
            RoomCreateResponse,
            "room_create",
        )
        room_id = created.room_id
        for client in receivers:
            expect(await client.join(room_id), JoinResponse, f"{client.user_id}'s join")

        recipients = [Recipient(client, {room_id}) for client in receivers]
        # Everyone syncs in the background from here on, as a client does.
        loops += [asyncio.ensure_future(client.sync_forever(timeout=5000)) for client in [sender, *receivers]]

        deadline = time.monotonic() + WAIT_SECONDS
        while not (room_id in sender.rooms and len(sender.rooms[room_id].users) == len(recipient_ids) + 1):
            if time.monotonic() > deadline:
                raise Failure("the sender never saw every recipient join")
            await asyncio.sleep(0.05)
        if not sender.rooms[room_id].encrypted:
            raise Failure("the sender's room is not encrypted")

        # The messages, one after another with no pause; the first shares the room key.
        bodies = [f"secret {i}" for i in range(count)]
        sent = []
        for i, body in enumerate(bodies):
            resp = expect(
                await sender.room_send(
                    room_id,
                    "m.room.message",
                    {"msgtype": "m.text", "body": body},
                    ignore_unverified_devices=True,
                ),
                RoomSendResponse,
                f"message {i}",
            )
            sent.append(resp.event_id)

        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            for r in recipients:
                r.retry_pending()
            if all(set(bodies) <= set(r.bodies) for r in recipients):
                break
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)

        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)

        return {
            "room_id": room_id,
            "sender": {"user_id": sender.user_id, "device_id": sender.device_id},
            "sent": sent,
            "bodies": bodies,
            "recipients": [
                {
                    "user_id": r.client.user_id,
                    "device_id": r.client.device_id,
                    "decrypted": r.bodies,
                    "undecryptable": len(r.pending),
                }
                for r in recipients
            ],
            "responses": RESPONSES,
        }
    finally:
        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        for client in clients:
            await client.close()
        for store in stores:
            shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) < 6:
        print("usage: nio-e2ee.py BASE_URL PASSWORD MESSAGES SENDER RECIPIENT...", file=sys.stderr)
        sys.exit(2)
    base, pw, n, who, *others = sys.argv[1:]
    try:
        result = asyncio.run(asyncio.wait_for(main(base, pw, int(n), who, others), 240))
    except Failure as err:
        print(f"nio-e2ee: {err}", file=sys.stderr)
        print(json.dumps({"responses": RESPONSES}), file=sys.stderr)
        sys.exit(1)
    except asyncio.TimeoutError:
        print("nio-e2ee: gave up after 240 s", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(result))
