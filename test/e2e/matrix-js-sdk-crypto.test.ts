// matrix-js-sdk with its Rust crypto (matrix-sdk-crypto-wasm) against a real server, on SQLite and
// PostgreSQL, doing what Element does at a first login: it bootstraps cross-signing (uploading the
// keys and signing its device) and secret storage with a new key backup, then backs up the room key
// of a message it encrypts. A second device of the same user sees the cross-signing keys, reads the
// backup key from secret storage, restores the room key from the backup and decrypts the message.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as sdk from 'matrix-js-sdk';
import type { GeneratedSecretStorageKey } from 'matrix-js-sdk/lib/crypto-api/index.js';
import * as RustCrypto from '@matrix-org/matrix-sdk-crypto-wasm';
import { HttpClient, type HttpReply } from '../support/http-client.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';
import { type SdkClient, loginClient, startAndPrepare, waitUntil } from './support/sdk.js';

const PASSWORD = 'alice-pw';
const MESSAGE = 'a secret kept in the backup';

for (const { backend, skip } of await serverBackends()) {
  describe(`matrix-js-sdk crypto against the server on ${backend}`, { skip }, () => {
    let hs: TestServer;
    const started: SdkClient[] = [];
    let recoveryKey: GeneratedSecretStorageKey | undefined;
    let first: SdkClient;
    let roomId: string;
    let eventId: string;

    // What Element gives the SDK: the secret storage key, once the user has one.
    const cryptoCallbacks: sdk.ICreateClientOpts['cryptoCallbacks'] = {
      getSecretStorageKey: async ({ keys }) => {
        const keyId = Object.keys(keys)[0];
        return recoveryKey === undefined || keyId === undefined ? null : [keyId, recoveryKey.privateKey];
      },
    };

    async function device(): Promise<SdkClient> {
      const c = await loginClient(hs.baseUrl, { identifier: { type: 'm.id.user', user: 'alice' }, password: PASSWORD }, { cryptoCallbacks });
      started.push(c);
      // The SDK turns the crypto library's tracing on at debug level, which prints to the console
      // while it starts; afterwards only errors are traced.
      const { debug, info } = console;
      console.debug = console.info = () => undefined;
      try {
        await c.client.initRustCrypto({ useIndexedDB: false });
        new RustCrypto.Tracing(RustCrypto.LoggerLevel.Error).turnOn();
      } finally {
        Object.assign(console, { debug, info });
      }
      await startAndPrepare(c);
      return c;
    }

    function serverGet(path: string, token: string): Promise<HttpReply> {
      return new HttpClient(hs.baseUrl, { token }).get(path);
    }

    before(async () => {
      hs = await startTestServer({ backend });
      await hs.registerUser('alice', PASSWORD);
    });
    after(async () => {
      for (const c of started) c.client.stopClient();
      await hs?.close();
    });

    test('the first device bootstraps cross-signing, secret storage and a key backup', async () => {
      first = await device();
      const crypto = first.client.getCrypto()!;
      let uploads = 0;
      await crypto.bootstrapCrossSigning({
        // The first upload needs no password; were one asked for, the password stage answers it.
        authUploadDeviceSigningKeys: async (makeRequest) => {
          uploads++;
          try {
            await makeRequest(null);
          } catch (err) {
            if (!(err instanceof sdk.MatrixError) || err.httpStatus !== 401) throw err;
            const session = (err.data as { session?: string }).session;
            await makeRequest({ type: 'm.login.password', identifier: { type: 'm.id.user', user: first.userId }, password: PASSWORD, session });
          }
        },
      });
      assert.equal(uploads, 1);
      await crypto.bootstrapSecretStorage({
        createSecretStorageKey: async () => (recoveryKey = await crypto.createRecoveryKeyFromPassphrase()),
        setupNewKeyBackup: true,
      });
      await crypto.checkKeyBackupAndEnable();

      assert.equal(await crypto.isCrossSigningReady(), true, first.trail());
      assert.equal(await crypto.isSecretStorageReady(), true, first.trail());
      const version = await crypto.getActiveSessionBackupVersion();
      assert.ok(version, 'a backup is active');
      const deviceStatus = await crypto.getDeviceVerificationStatus(first.userId, first.client.getDeviceId()!);
      assert.equal(deviceStatus?.signedByOwner, true, 'the device is signed by the self-signing key');

      // The server holds what the SDK made.
      const token = first.client.getAccessToken()!;
      const backup = await serverGet('/room_keys/version', token);
      assert.equal(backup.status, 200);
      assert.equal(backup.body.version, version);
      assert.equal(backup.body.algorithm, 'm.megolm_backup.v1.curve25519-aes-sha2');
      const master = await crypto.getCrossSigningKeyId();
      assert.ok(master);
      const own = (await new HttpClient(hs.baseUrl, { token }).post('/keys/query', { device_keys: { [first.userId]: [] } })).body;
      assert.deepEqual(Object.keys(own.master_keys[first.userId].keys), [`ed25519:${master}`]);
      assert.ok(own.self_signing_keys[first.userId]);
      assert.ok(own.user_signing_keys[first.userId]);
    });

    test('a message in an encrypted room has its room key backed up', async () => {
      const crypto = first.client.getCrypto()!;
      roomId = (
        await first.client.createRoom({
          name: 'Encrypted',
          initial_state: [{ type: 'm.room.encryption', state_key: '', content: { algorithm: 'm.megolm.v1.aes-sha2' } }],
        })
      ).room_id;
      await waitUntil(first, () => first.client.getRoom(roomId) !== null, 'the new room');
      const deadline = Date.now() + 10_000;
      while (!(await crypto.isEncryptionEnabledInRoom(roomId))) {
        assert.ok(Date.now() < deadline, 'encryption enabled in the room');
        await new Promise((r) => setTimeout(r, 20));
      }
      eventId = (await first.client.sendTextMessage(roomId, MESSAGE)).event_id;
      const sent = await serverGet(`/rooms/${encodeURIComponent(roomId)}/event/${encodeURIComponent(eventId)}`, first.client.getAccessToken()!);
      assert.equal(sent.body.type, 'm.room.encrypted', 'the server only sees ciphertext');

      // The SDK backs keys up after a random delay of up to ten seconds.
      const version = await crypto.getActiveSessionBackupVersion();
      const until = Date.now() + 30_000;
      for (;;) {
        const keys = await serverGet(`/room_keys/keys?version=${version}`, first.client.getAccessToken()!);
        const sessions = keys.body.rooms?.[roomId]?.sessions ?? {};
        if (Object.keys(sessions).length > 0) {
          const [data] = Object.values(sessions) as any[];
          assert.equal(typeof data.session_data.ciphertext, 'string');
          break;
        }
        assert.ok(Date.now() < until, `the room key reaches the backup; last requests:\n${first.trail()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    });

    test('a second device sees the cross-signing keys, restores the room key from the backup and decrypts', async () => {
      const second = await device();
      const crypto = second.client.getCrypto()!;
      assert.equal(await crypto.userHasCrossSigningKeys(second.userId, true), true);
      const status = await crypto.getCrossSigningStatus();
      assert.equal(status.publicKeysOnDevice, true, 'the public cross-signing keys came from /keys/query');
      assert.equal(status.privateKeysInSecretStorage, true, 'the private keys are in secret storage');
      const firstDevice = await crypto.getDeviceVerificationStatus(second.userId, first.client.getDeviceId()!);
      assert.equal(firstDevice?.signedByOwner, true, "the first device's self-signing signature is served");

      await crypto.loadSessionBackupPrivateKeyFromSecretStorage();
      await crypto.checkKeyBackupAndEnable();
      const restored = await crypto.restoreKeyBackup();
      assert.ok(restored.imported >= 1, `imported ${restored.imported} of ${restored.total}`);

      await waitUntil(second, () => second.client.getRoom(roomId) !== null, 'the room on the second device');
      const room = second.client.getRoom(roomId)!;
      let event = room.findEventById(eventId);
      if (event === undefined) {
        await second.client.scrollback(room, 20);
        event = room.findEventById(eventId);
      }
      assert.ok(event, 'the message is in the timeline');
      await second.client.decryptEventIfNeeded(event, { isRetry: true });
      await waitUntil(second, () => event.getType() === 'm.room.message', 'the message decrypted');
      assert.equal(event.getContent()['body'], MESSAGE);
    });

    test('no request was refused except the expected ones', () => {
      const refused = started.flatMap((c) => c.exchanges.filter((e) => e.status >= 400).map((e) => `${e.method} ${e.path} -> ${e.status} ${e.error ?? ''}`));
      // Before a backup exists the SDK asks for one, and 404 is the answer. (The first upload of
      // cross-signing keys was not refused either: it needs no password.)
      const expected = (line: string) => /^GET \/_matrix\/client\/v3\/room_keys\/version -> 404/.test(line);
      assert.deepEqual(refused.filter((l) => !expected(l)), []);
    });
  });
}
