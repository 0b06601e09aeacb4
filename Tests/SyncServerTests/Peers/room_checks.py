#!/usr/bin/env python3
"""End-to-end checks of the ScrollSync room protocol, written against Protocol/PROTOCOL.md
with the `websockets` library (and a raw socket for the slow follower).

usage: room_checks.py BASE_URL CHECK      (CHECK: rooms, sequences, invalid, ordering,
                                           compressed, slow-follower)
Every server message is validated against Protocol/schemas. Exits 0 when the check holds;
otherwise prints what differed and exits 1. SERVER_PID, when set, lets a check read the
server's resident memory.
"""
import asyncio
import base64
import json
import os
import pathlib
import socket
import sys
import uuid

import jsonschema
import websockets

PROTOCOL = pathlib.Path(__file__).resolve().parents[3] / "Protocol"
SCHEMAS = {}
for path in (PROTOCOL / "schemas").glob("*.schema.json"):
    if path.name.startswith("recording-"):
        continue  # a file's lines, not messages (recording_check.py)
    schema = json.loads(path.read_text())
    if path.name != "document-share.schema.json" and schema["properties"]["type"]["const"] not in ("scroll", "control", "follow"):
        SCHEMAS[schema["properties"]["type"]["const"]] = schema


def vectors(name):
    return json.loads((PROTOCOL / "vectors" / f"{name}.json").read_text())


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def validate(message):
    schema = SCHEMAS.get(message.get("type"))
    expect(schema is not None, f"unknown server message type: {message}")
    try:
        jsonschema.validate(message, schema)
    except jsonschema.ValidationError as error:
        raise CheckFailed(f"{message['type']} breaks its schema: {error.message}\n{message}")


def matches(actual, expected):
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(actual[k], v) for k, v in expected.items())
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and isinstance(actual, (int, float)):
        return abs(actual - expected) < 1e-9
    return actual == expected


class Client:
    def __init__(self, ws):
        self.ws = ws

    @classmethod
    async def open(cls, base, room, **query):
        q = "&".join(f"{k}={v}" for k, v in query.items() if v is not None)
        ws = await websockets.connect(f"{base}/rooms/{room}?{q}", subprotocols=["scrollsync.v1"],
                                      compression=query.pop("_compression", None), max_size=None, open_timeout=10)
        expect(ws.subprotocol == "scrollsync.v1", f"subprotocol {ws.subprotocol}")
        return cls(ws)

    async def recv(self, timeout=5):
        try:
            text = await asyncio.wait_for(self.ws.recv(), timeout)
        except asyncio.TimeoutError:
            raise CheckFailed("no message within %s s" % timeout)
        expect(isinstance(text, str), "server sent a binary frame")
        message = json.loads(text)
        validate(message)
        return message

    async def send(self, message):
        await self.ws.send(message if isinstance(message, str) else json.dumps(message))


def substitute(value, ids):
    """Replaces session names in a vector with the ids the server assigned."""
    if isinstance(value, dict):
        return {k: (ids.get(v, v) if k in ("driver", "by", "you") and isinstance(v, str) else substitute(v, ids)) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, ids) for v in value]
    return value


async def check_rooms(base):
    """Protocol/vectors/rooms.json through the real server."""
    for case in vectors("rooms")["cases"]:
        room = "v-" + uuid.uuid4().hex[:10]
        clients, ids = {}, {}
        for number, step in enumerate(case["steps"], 1):
            label = f"{case['name']}, step {number}"
            name = step["session"]
            if "join" in step:
                join = step["join"]
                client = await Client.open(base, room, role=join["role"], key=join.get("key"), name=join.get("name"))
                first = await client.recv()
                if "error" in step:
                    expect(first["type"] == "error" and first["code"] == step["error"], f"{label}: got {first}")
                    await client.ws.wait_closed()
                    expect(client.ws.close_code == 1008, f"{label}: close code {client.ws.close_code}")
                    continue
                expect(first["type"] == "welcome", f"{label}: first message {first}")
                ids[name] = first["you"]
                wanted = substitute(step.get("welcome", {}), ids)
                expect(matches(first, wanted), f"{label}: welcome {first} vs {wanted}")
                if step.get("document"):
                    document = await client.recv()
                    expect(document["type"] == "document" and document["doc"] == first["doc"], f"{label}: {document}")
                clients[name] = client
            elif step.get("leave"):
                await clients.pop(name).ws.close()
            else:
                await clients[name].send(step["send"])
                if "error" in step:
                    reply = await clients[name].recv()
                    expect(reply["type"] == "error" and reply["code"] == step["error"], f"{label}: got {reply}")
                    continue
            for member, client in clients.items():
                for wanted in substitute(step.get("broadcasts", []), ids):
                    got = await client.recv()
                    expect(matches(got, wanted), f"{label}: {member} got {got}, expected {wanted}")
        for client in clients.values():
            await client.ws.close()


async def run_sequences(base, compression):
    for case in vectors("scroll-sequences")["cases"]:
        room = "s-" + uuid.uuid4().hex[:10]
        presenter = await Client.open(base, room, role="presenter")
        follower = await Client.open(base, room, _compression=compression)
        expect((await follower.recv())["type"] == "welcome", "welcome first")
        while (await presenter.recv())["type"] != "presence" or (await asyncio.sleep(0)) is not None:
            pass
        for step in case["steps"]:
            await presenter.send(step["scroll"])
            while True:
                got = await follower.recv()
                if got["type"] == "state":
                    break
            expect(matches(got, step["expect"]), f"{case['name']}: {got} vs {step['expect']}")
            for member in step.get("absent", []):
                expect(member not in got, f"{case['name']}: {member} should be absent in {got}")
        if compression:
            extensions = follower.ws.response.headers.get("Sec-WebSocket-Extensions", "")
            expect("server_no_context_takeover" in extensions, f"negotiated {extensions}")
        await presenter.ws.close()
        await follower.ws.close()


async def check_sequences(base):
    await run_sequences(base, None)


async def check_compressed(base):
    await run_sequences(base, "deflate")


async def check_invalid(base):
    """Each invalid message gets its error code; none changes the state."""
    room = "i-" + uuid.uuid4().hex[:10]
    presenter = await Client.open(base, room, role="presenter")
    expect((await presenter.recv())["type"] == "welcome", "welcome")
    await presenter.recv(), await presenter.recv()  # driver, presence
    for case in vectors("invalid-messages")["cases"]:
        await presenter.send(case["text"])
        reply = await presenter.recv()
        expect(reply["type"] == "error" and reply["code"] == case["code"], f"{case['text']}: got {reply}")
        expect(len(reply["message"]) > 0, "the message says what was wrong")
    await presenter.ws.send(b"\x01\x02")
    reply = await presenter.recv()
    expect(reply["type"] == "error" and reply["code"] == "bad_message", f"binary frame: {reply}")
    await presenter.send({"type": "scroll", "offset": 1})
    state = await presenter.recv()
    expect(state["type"] == "state" and state["seq"] == 1, f"the connection stays usable and nothing changed: {state}")
    await presenter.ws.close()


async def check_ordering(base):
    """seq strictly increases for every follower, across loops, and ends on the newest."""
    room = "o-" + uuid.uuid4().hex[:10]
    presenter = await Client.open(base, room, role="presenter")
    followers = [await Client.open(base, room) for _ in range(8)]
    count = 500

    async def drain_presenter():
        while True:
            message = await presenter.recv()
            if message["type"] == "state" and message["seq"] == count:
                return

    async def follow(client):
        seqs = []
        while not seqs or seqs[-1] < count:
            message = await client.recv()
            if message["type"] == "welcome" and message["state"]:
                seqs.append(message["state"]["seq"])
            elif message["type"] == "state":
                seqs.append(message["seq"])
        return seqs

    tasks = [asyncio.create_task(follow(f)) for f in followers]
    reader = asyncio.create_task(drain_presenter())
    for i in range(1, count + 1):
        await presenter.send({"type": "scroll", "offset": i, "viewport": 10, "content": 1000, "t": i})
    await reader
    for seqs in await asyncio.gather(*tasks):
        expect(all(a < b for a, b in zip(seqs, seqs[1:])), f"seq not strictly increasing: {seqs[:20]}…")
        expect(seqs[-1] == count, f"last seq {seqs[-1]}")
    for client in followers + [presenter]:
        await client.ws.close()


def resident_kib():
    pid = os.environ.get("SERVER_PID")
    if not pid:
        return None
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])


class RawFollower:
    """A follower on a plain socket with a tiny receive buffer, so it can stop reading."""

    def __init__(self, base, room):
        host, port = base.split("//")[1].split(":")
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((host, int(port)))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /rooms/{room} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.sock.recv(4096)
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        expect(head.startswith(b"HTTP/1.1 101"), head.decode(errors="replace"))

    def messages(self, timeout):
        """Reads text messages until `timeout` seconds pass with nothing new."""
        self.sock.settimeout(timeout)
        out = []
        while True:
            while len(self.buffer) >= 2:
                length = self.buffer[1] & 0x7F
                offset = 2
                if length == 126:
                    length, offset = int.from_bytes(self.buffer[2:4], "big"), 4
                elif length == 127:
                    length, offset = int.from_bytes(self.buffer[2:10], "big"), 10
                if len(self.buffer) < offset + length:
                    break
                opcode = self.buffer[0] & 0x0F
                payload = self.buffer[offset:offset + length]
                self.buffer = self.buffer[offset + length:]
                if opcode == 1:
                    message = json.loads(payload)
                    validate(message)
                    out.append(message)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return out
            if not data:
                return out
            self.buffer += data


async def check_slow_follower(base):
    """A follower that stops reading, then reads, gets a short run ending in the newest
    state, and the server's memory for it stays bounded."""
    room = "slow-" + uuid.uuid4().hex[:8]
    presenter = await Client.open(base, room, role="presenter")
    slow = RawFollower(base, room)
    first = slow.messages(1.0)
    expect(first and first[0]["type"] == "welcome", f"welcome first: {first[:1]}")
    before = resident_kib()
    count = 20000

    async def drain_presenter():
        while True:
            message = await presenter.recv(timeout=30)
            if message["type"] == "state" and message["seq"] == count:
                return

    reader = asyncio.create_task(drain_presenter())
    pad = "x" * 150  # about 300-byte states: 6 MB in all if nothing were conflated
    for i in range(1, count + 1):
        await presenter.send({"type": "scroll", "offset": i, "anchor": {"id": f"block-{i}-{pad}", "fraction": 0.5}})
    await reader
    during = resident_kib()
    states = [m for m in slow.messages(1.5) if m["type"] == "state"]
    seqs = [m["seq"] for m in states]
    expect(seqs and seqs[-1] == count, f"the newest state arrives last: {seqs[-3:]}")
    expect(all(a < b for a, b in zip(seqs, seqs[1:])), "seq strictly increases")
    expect(len(seqs) < count // 10, f"{len(seqs)} of {count} states reached the stalled follower: a stale backlog")
    gaps = sum(1 for a, b in zip(seqs, seqs[1:]) if b > a + 1)
    expect(gaps > 0, "skipped states show as gaps in seq")
    if before is not None and during is not None:
        expect(during - before < 16 * 1024, f"server RSS grew {during - before} KiB while the follower stalled")
    print(f"slow follower: received {len(seqs)} of {count} states, {gaps} gaps, "
          f"server RSS {before} -> {during} KiB")
    slow.sock.close()
    await presenter.ws.close()


async def check_document_limit(base):
    """A document over 1 MiB gets too_large; the connection stays usable."""
    room = "d-" + uuid.uuid4().hex[:10]
    presenter = await Client.open(base, room, role="presenter")
    for _ in range(3):
        await presenter.recv()  # welcome, driver, presence
    await presenter.send({"type": "document", "name": "big.txt", "text": "x" * ((1 << 20) + 1)})
    reply = await presenter.recv()
    expect(reply["type"] == "error" and reply["code"] == "too_large", f"got {reply}")
    await presenter.send({"type": "document", "name": "ok.txt", "text": "fits"})
    document = await presenter.recv()
    expect(document["type"] == "document" and document["text"] == "fits", f"got {document}")
    await presenter.ws.close()


def room_list(base):
    """The names in GET /rooms."""
    import urllib.request
    with urllib.request.urlopen(base.replace("ws://", "http://", 1) + "/rooms", timeout=5) as answer:
        return [room["name"] for room in json.load(answer)["rooms"]]


async def check_idle_expiry(base):
    """With --room-idle 1, an empty room is forgotten; until then its state survives."""
    room = "e-" + uuid.uuid4().hex[:10]
    presenter = await Client.open(base, room, role="presenter", key="k")
    for _ in range(3):
        await presenter.recv()
    await presenter.send({"type": "scroll", "offset": 7})
    expect((await presenter.recv())["seq"] == 1, "state")
    await presenter.ws.close()
    again = await Client.open(base, room)
    welcome = await again.recv()
    expect(welcome["state"] and welcome["state"]["offset"] == 7, f"state kept while members come and go: {welcome}")
    await again.ws.close()
    # Wait for the event itself: the room leaves the server's list once it has idled out.
    deadline = asyncio.get_running_loop().time() + 15
    while room in await asyncio.to_thread(room_list, base) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)
    expect(room not in await asyncio.to_thread(room_list, base), "the idle room expired within 15 s")
    later = await Client.open(base, room, role="presenter", key="other")
    welcome = await later.recv()
    expect(welcome["type"] == "welcome" and welcome["state"] is None, f"an idle room is forgotten, key and all: {welcome}")
    await later.ws.close()


async def check_keys_required(base):
    """With --require-keys, a presenter without a key is refused; with one it drives."""
    room = "k-" + uuid.uuid4().hex[:10]
    keyless = await Client.open(base, room, role="presenter")
    reply = await keyless.recv()
    expect(reply["type"] == "error" and reply["code"] == "unauthorized", f"got {reply}")
    await keyless.ws.wait_closed()
    expect(keyless.ws.close_code == 1008, f"close {keyless.ws.close_code}")
    keyed = await Client.open(base, room, role="presenter", key="s3cret")
    welcome = await keyed.recv()
    expect(welcome["type"] == "welcome" and welcome["driver"] == welcome["you"], f"got {welcome}")
    follower = await Client.open(base, room)
    expect((await follower.recv())["type"] == "welcome", "followers need no key")
    await keyed.ws.close()
    await follower.ws.close()


CHECKS = {
    "document-limit": check_document_limit,
    "idle-expiry": check_idle_expiry,
    "keys-required": check_keys_required,
    "rooms": check_rooms,
    "sequences": check_sequences,
    "compressed": check_compressed,
    "invalid": check_invalid,
    "ordering": check_ordering,
    "slow-follower": check_slow_follower,
}

if __name__ == "__main__":
    base, name = sys.argv[1], sys.argv[2]
    try:
        asyncio.run(asyncio.wait_for(CHECKS[name](base), 120))
    except CheckFailed as failure:
        print(f"FAILED {name}: {failure}")
        sys.exit(1)
    print(f"ok {name}")
