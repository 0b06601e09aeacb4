"""Members of a chaos run: a tiny WebSocket client that records what each member receives,
the invariant checks of docs/cluster.md (I1-I6), and a poller of the rooms' hashes (I4).
Standard library only."""

import asyncio
import base64
import json
import os

from .processes import Resp


def content(state):
    """A state without its seq: what I1 compares."""
    return json.dumps({k: v for k, v in state.items() if k not in ("type", "seq")}, sort_keys=True)


class Checks:
    """What every member received, checked as it arrives (I1, I3, I5) and on demand (I2, I6)."""

    def __init__(self):
        self.by_seq = {}  # (room, seq) -> (content, member name)
        self.broken = {"I1": [], "I2": [], "I3": [], "I4": [], "I5": [], "I6": []}
        self.members = []

    def fail(self, invariant, detail):
        if len(self.broken[invariant]) < 1000:
            self.broken[invariant].append(detail)

    def saw(self, member, state, in_welcome):
        room, seq = member.room, state["seq"]
        if seq <= member.last_seq:
            self.fail("I3", f"{member.label}: seq {seq} after {member.last_seq}")
        member.last_seq = max(member.last_seq, seq)
        text = content(state)
        first = self.by_seq.setdefault((room, seq), (text, member.label))
        if first[0] != text:
            self.fail("I1", f"{room} seq {seq}: {member.label} got offset {state.get('offset')} by {state.get('by')}, "
                            f"{first[1]} got {json.loads(first[0]).get('offset')} by {json.loads(first[0]).get('by')}")
        if not in_welcome and member.driver is not None and state.get("by") != member.driver:
            self.fail("I5", f"{member.label}: state seq {seq} by {state.get('by')} while its driver is {member.driver}")

    def views(self, room):
        """What each live member of `room` holds: (seq, content, driver, doc) by member label."""
        return {m.label: m.view() for m in self.members if m.room == room and m.alive and not m.node.stopped}

    def agree(self, rooms):
        return all(len(set(self.views(r).values())) <= 1 for r in rooms)

    def disagreement(self, room):
        groups = {}
        for label, view in self.views(room).items():
            groups.setdefault(view, []).append(label)
        return "; ".join(f"{' '.join(sorted(labels))} hold seq {v[0]} offset {json.loads(v[1]).get('offset') if v[1] else None} "
                         f"driver {v[2]}" for v, labels in groups.items())


class Member:
    """One WebSocket connection to `/rooms/ROOM` on a node, recording what it receives."""

    def __init__(self, checks, node, room, role, name):
        self.checks, self.node, self.room, self.role, self.name = checks, node, room, role, name
        self.label = f"{name}@{node.name}"
        self.id = self.state = self.driver = self.doc = self.welcome = None
        self.last_seq, self.alive, self.errors = 0, False, []
        self.writer = None
        checks.members.append(self)

    def view(self):
        return (self.state["seq"] if self.state else 0, content(self.state) if self.state else "", self.driver, self.doc)

    async def connect(self, timeout=10):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.node.port)
        key = base64.b64encode(os.urandom(16)).decode()
        query = f"role={self.role}" + (f"&name={self.name}" if self.role == "presenter" else "")
        writer.write((f"GET /rooms/{self.room}?{query} HTTP/1.1\r\nHost: 127.0.0.1:{self.node.port}\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        status = head.split(b"\r\n", 1)[0].decode(errors="replace")
        if " 101 " not in status:
            raise RuntimeError(f"{self.label}: {status}")
        self.writer, self.alive = writer, True
        welcomed = asyncio.get_running_loop().create_future()
        asyncio.ensure_future(self.read(reader, welcomed))
        await asyncio.wait_for(welcomed, timeout)
        return self

    async def read(self, reader, welcomed):
        try:
            while True:
                b0, b1 = await reader.readexactly(2)
                n = b1 & 0x7F
                if n == 126:
                    n = int.from_bytes(await reader.readexactly(2), "big")
                elif n == 127:
                    n = int.from_bytes(await reader.readexactly(8), "big")
                payload = await reader.readexactly(n)
                opcode = b0 & 0x0F
                if opcode == 0x9:
                    self.frame(0xA, payload)
                elif opcode == 0x8:
                    break
                elif opcode == 0x1:
                    self.received(json.loads(payload), welcomed)
        except (asyncio.IncompleteReadError, OSError):
            pass
        self.alive = False
        if not welcomed.done():
            welcomed.set_exception(RuntimeError(f"{self.label}: closed before welcome"))

    def received(self, message, welcomed):
        kind = message.get("type")
        if kind == "welcome":
            self.welcome, self.id, self.driver, self.doc = message, message["you"], message.get("driver"), message.get("doc")
            if message.get("state"):
                self.checks.saw(self, message["state"], True)
                self.state = message["state"]
            welcomed.set_result(True)
        elif kind == "state":
            self.checks.saw(self, message, False)
            if not self.state or message["seq"] > self.state["seq"]:
                self.state = message
        elif kind == "driver":
            self.driver = message.get("driver")
        elif kind == "document":
            self.doc = message.get("doc")
        elif kind == "error":
            self.errors.append(message.get("code"))

    def frame(self, opcode, payload):
        if not self.alive:
            return
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
        try:
            self.writer.write(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        except (OSError, RuntimeError):
            self.alive = False

    def send(self, message):
        self.frame(0x1, json.dumps(message).encode())

    def scroll(self, offset):
        self.send({"type": "scroll", "offset": offset, "viewport": 10, "content": 10_000_000})

    def take(self):
        self.send({"type": "control", "action": "take"})

    def close(self):
        if self.writer:
            self.writer.close()
        self.alive = False


class HashWatch:
    """Polls every room's hash `seq` every few ms (I4: it never decreases while the hash lives)."""

    def __init__(self, checks, port, rooms, every=0.003):
        self.checks, self.port, self.rooms, self.every = checks, port, rooms, every
        self.last, self.polls, self.decreases, self.task = {}, 0, 0, None

    def start(self):
        self.task = asyncio.ensure_future(self.run())

    async def run(self):
        conn = None
        while True:
            try:
                conn = conn or await Resp.open(self.port)
                answers = await conn.pipeline([("HGET", f"scrollsync:{{{r}}}", "seq") for r in self.rooms])
                self.polls += 1
                for room, answer in zip(self.rooms, answers):
                    if not isinstance(answer, bytes):
                        self.last.pop(room, None)  # gone (expired, or Redis restarted empty)
                        continue
                    seq = int(answer)
                    if seq < self.last.get(room, 0):
                        self.decreases += 1
                        self.checks.fail("I4", f"{room}: hash seq {self.last[room]} -> {seq}")
                    self.last[room] = seq
            except (OSError, asyncio.IncompleteReadError):
                conn, self.last = None, {}
                await asyncio.sleep(0.1)
            await asyncio.sleep(self.every)

    def stop(self):
        if self.task:
            self.task.cancel()
