#!/usr/bin/python3
"""Cross-check vectors for JSON signing, content hashes, reference hashes and event ids, made
with independent implementations (signedjson, canonicaljson, PyNaCl, hashlib).

Run: /usr/bin/python3 scripts/gen-signing-vectors.py > test/data/signing/vectors.json
The output is deterministic (fixed seeds; Ed25519 signatures are deterministic).
"""
import base64
import copy
import hashlib
import io
import json
import random
import sys

from canonicaljson import encode_canonical_json
from signedjson.key import decode_signing_key_base64, encode_verify_key_base64, get_verify_key, write_signing_keys
from signedjson.sign import sign_json

rng = random.Random(20240611)


def b64(data, urlsafe=False):
    enc = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return enc(data).decode('ascii').rstrip('=')


# Four keys from fixed seeds.
KEYS = []
for i in range(4):
    seed = hashlib.sha256(b'hearth-test-key-%d' % i).digest()
    KEYS.append(decode_signing_key_base64('ed25519', 'k%d' % i, b64(seed)))
SERVERS = ['domain', 'example.org', 'matrix.example.net', 'xn--bcher-kva.example']

WORDS = ['a', 'b', 'zz', 'é', 'ü', '\u00e9t\u00e9', '\U0001F600', '\ufb01', 'tab\there', 'nl\n',
         'ctl\x01\x1f', 'quote"', 'back\\slash', '\u2028', 'A', '_', '日本', '\x7f']


def rand_string():
    return ''.join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))


def rand_value(depth):
    r = rng.random()
    if depth <= 0 or r < 0.5:
        return rng.choice([
            lambda: rand_string(),
            lambda: rng.randint(-(2**53) + 1, 2**53 - 1),
            lambda: rng.randint(-1000, 1000),
            lambda: rng.choice([True, False, None]),
        ])()
    if r < 0.75:
        return [rand_value(depth - 1) for _ in range(rng.randint(0, 3))]
    return rand_object(depth - 1)


def rand_object(depth):
    return {rand_string() or 'k': rand_value(depth) for _ in range(rng.randint(0, 4))}


# Redaction, per the room versions' "Redactions" sections.
def redact(event, v):
    top = ['event_id', 'type', 'room_id', 'sender', 'state_key', 'content', 'hashes', 'signatures',
           'depth', 'prev_events', 'auth_events', 'origin_server_ts']
    if v < 11:
        top += ['prev_state', 'origin', 'membership']
    keep = {
        'm.room.member': ['membership'] + (['join_authorised_via_users_server'] if v >= 9 else []),
        'm.room.create': ['creator'],
        'm.room.join_rules': ['join_rule'] + (['allow'] if v >= 8 else []),
        'm.room.power_levels': ['ban', 'events', 'events_default', 'kick', 'redact', 'state_default',
                                'users', 'users_default'] + (['invite'] if v >= 11 else []),
        'm.room.history_visibility': ['history_visibility'],
    }
    if v < 6:
        keep['m.room.aliases'] = ['aliases']
    if v >= 11:
        keep['m.room.redaction'] = ['redacts']
    out = {k: event[k] for k in top if k in event}
    content = event.get('content', {})
    if v >= 11 and event['type'] == 'm.room.create':
        out['content'] = dict(content)
    else:
        out['content'] = {k: content[k] for k in keep.get(event['type'], []) if k in content}
    tpi = content.get('third_party_invite')
    if v >= 11 and event['type'] == 'm.room.member' and isinstance(tpi, dict) and 'signed' in tpi:
        out['content']['third_party_invite'] = {'signed': tpi['signed']}
    return out


def without(obj, *keys):
    return {k: val for k, val in obj.items() if k not in keys}


def hash_and_sign(event, v, server, key):
    event = copy.deepcopy(event)
    event['hashes'] = {'sha256': b64(hashlib.sha256(encode_canonical_json(
        without(event, 'unsigned', 'signatures', 'hashes'))).digest())}
    signed = sign_json(redact(event, v), server, key)
    event['signatures'] = signed['signatures']
    return event


def rand_content(event_type):
    extra = rand_object(1)
    if event_type == 'm.room.member':
        extra.update({'membership': rng.choice(['join', 'invite', 'leave']), 'displayname': rand_string()})
        if rng.random() < 0.4:
            extra['join_authorised_via_users_server'] = '@u:domain'
        if rng.random() < 0.4:
            extra['third_party_invite'] = {'display_name': 'x', 'signed': {'mxid': '@u:domain', 'token': 't'}}
    elif event_type == 'm.room.create':
        extra.update({'creator': '@c:domain', 'room_version': '10', 'm.federate': True})
    elif event_type == 'm.room.join_rules':
        extra.update({'join_rule': 'restricted', 'allow': [{'type': 'm.room_membership', 'room_id': '!a:b'}]})
    elif event_type == 'm.room.power_levels':
        extra.update({'ban': 50, 'invite': 0, 'users': {'@c:domain': 100}, 'notifications': {'room': 50}})
    elif event_type == 'm.room.history_visibility':
        extra['history_visibility'] = 'shared'
    elif event_type == 'm.room.aliases':
        extra['aliases'] = ['#a:domain']
    elif event_type == 'm.room.redaction':
        extra['redacts'] = '$abc'
    else:
        extra.update({'msgtype': 'm.text', 'body': rand_string()})
    return extra


TYPES = ['m.room.message', 'm.room.member', 'm.room.create', 'm.room.join_rules', 'm.room.power_levels',
         'm.room.history_visibility', 'm.room.aliases', 'm.room.redaction', 'm.custom' + rand_string()]


def rand_pdu(i, v):
    event_type = rng.choice(TYPES)
    ref = lambda: '$' + b64(hashlib.sha256(b'%d-%f' % (i, rng.random())).digest()[:12], urlsafe=True)
    pdu = {
        'type': event_type,
        'room_id': '!room%d:domain' % rng.randint(0, 9),
        'sender': '@user%d:%s' % (rng.randint(0, 9), rng.choice(SERVERS)),
        'origin_server_ts': rng.randint(0, 2**41),
        'depth': rng.randint(1, 100000),
        'content': rand_content(event_type),
        'auth_events': [ref() for _ in range(rng.randint(0, 3))],
        'prev_events': [ref() for _ in range(rng.randint(1, 2))],
    }
    if event_type != 'm.room.message' or rng.random() < 0.2:
        pdu['state_key'] = rng.choice(['', '@user1:domain', rand_string()])
    if event_type == 'm.room.redaction':
        pdu['redacts'] = '$abc'
    if rng.random() < 0.5:
        pdu['unsigned'] = {'age_ts': rng.randint(0, 10**12), 'x': rand_value(1)}
    if rng.random() < 0.4:
        pdu['origin'] = rng.choice(SERVERS)
    if rng.random() < 0.2:
        pdu['membership'] = 'join'
    if rng.random() < 0.2:
        pdu['prev_state'] = []
    if v <= 2:
        pdu['event_id'] = '$ev%d:domain' % i
    return pdu


def main():
    out = {'keys': [], 'json': [], 'events': []}
    for k in KEYS:
        out['keys'].append({'keyId': 'ed25519:' + k.version, 'seed': b64(bytes(k)),
                            'publicKey': encode_verify_key_base64(get_verify_key(k))})
    stream = io.StringIO()
    write_signing_keys(stream, KEYS)
    out['keyFile'] = stream.getvalue()

    # JSON objects, each signed by one to three (server, key) pairs in turn.
    for _ in range(100):
        obj = rand_object(2)
        if rng.random() < 0.3:
            obj['unsigned'] = rand_object(1)
        steps = [[rng.randrange(len(SERVERS)), rng.randrange(len(KEYS))] for _ in range(rng.randint(1, 3))]
        signed = copy.deepcopy(obj)
        for s, k in steps:
            signed = sign_json(signed, SERVERS[s], KEYS[k])
        # The input is `signed` without `signatures`.
        out['json'].append({'steps': steps, 'signed': signed})

    # Events in several room versions, hashed and signed by one or two servers.
    versions = [1, 3, 4, 5, 6, 8, 9, 10, 11]
    for i in range(162):
        v = versions[i % len(versions)]
        pdu = rand_pdu(i, v)
        steps = [[rng.randrange(len(SERVERS)), rng.randrange(len(KEYS))] for _ in range(rng.randint(1, 2))]
        signed = pdu
        for s, k in steps:
            signed = hash_and_sign(signed, v, SERVERS[s], KEYS[k])
        ref = hashlib.sha256(encode_canonical_json(without(redact(signed, v), 'signatures', 'unsigned'))).digest()
        # The input is `signed` without `hashes` and `signatures`.
        case = {'roomVersion': str(v), 'steps': steps, 'signed': signed,
                'redactedKeys': sorted(redact(signed, v)), 'redactedContent': redact(signed, v)['content'], 'referenceHash': b64(ref)}
        if v == 3:
            case['eventId'] = '$' + b64(ref)
        elif v >= 4:
            case['eventId'] = '$' + b64(ref, urlsafe=True)
        out['events'].append(case)
    out['servers'] = SERVERS
    json.dump(out, sys.stdout, ensure_ascii=False, separators=(',', ':'))
    sys.stdout.write('\n')


main()
