"""Processes of a chaos run: redis-server and scrollsync nodes on loopback, and a minimal
Redis client. Standard library only."""

import asyncio
import os
import re
import signal
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# MARK: processes

class Redis:
    """One redis-server on loopback, without persistence (a restart comes back empty)."""

    def __init__(self, logs, name):
        self.port, self.logs, self.name, self.proc = free_port(), logs, name, None

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    async def start(self):
        log = open(os.path.join(self.logs, f"{self.name}.log"), "ab")
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no"], stdout=log, stderr=log)
        for _ in range(100):
            try:
                conn = await Resp.open(self.port)
                await conn.call("PING")
                conn.close()
                return
            except OSError:
                await asyncio.sleep(0.05)
        raise RuntimeError(f"{self.name} did not start")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Node:
    """A release `scrollsync serve` sharing rooms through `redis` (and `shards`)."""

    def __init__(self, binary, logs, name, redis, shards=()):
        self.binary, self.logs, self.name, self.redis, self.shards = binary, logs, name, redis, list(shards)
        self.proc, self.port, self.stopped = None, None, False

    async def start(self):
        path = os.path.join(self.logs, f"node-{self.name}.log")
        log = open(path, "ab")
        start = log.tell()
        env = dict(os.environ, SCROLLSYNC_LIMITS_UNCLAIMED_ROOMS_PER_ADDRESS="0")
        if self.shards:
            env["SCROLLSYNC_REDIS_SHARDS"] = ",".join(r.url for r in self.shards)
        self.proc = subprocess.Popen([self.binary, "serve", "--port", "0", "--loops", "2", "--in-memory", "--scroll-rate", "0",
                                      "--room-creations", "0", "--redis", self.redis.url], stdout=log, stderr=log, env=env)
        for _ in range(200):
            with open(path, "rb") as f:
                f.seek(start)
                found = re.search(rb"serving ws://[^ ]+:(\d+)", f.read())
            if found:
                self.port = int(found.group(1))
                return
            if self.proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        raise RuntimeError(f"node {self.name} did not start (see {path})")

    async def ready(self, timeout=10):
        """Waits until /healthz says Redis is reachable."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                body = await reader.read(4096)
                writer.close()
                if b" 200 " in body.split(b"\r\n", 1)[0] and b"unavailable" not in body:
                    return True
            except OSError:
                pass
            await asyncio.sleep(0.1)
        return False

    def signal(self, number):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, number)
        self.stopped = number == signal.SIGSTOP

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def redis_ports(self, redis_port):
        """Local ports of this process's TCP connections to `redis_port` (from /proc)."""
        inodes = set()
        fd_dir = f"/proc/{self.proc.pid}/fd"
        for fd in os.listdir(fd_dir):
            try:
                link = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        ports = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                lines = open(table).read().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                local, remote, inode = fields[1], fields[2], fields[9]
                if inode in inodes and int(remote.split(":")[1], 16) == redis_port:
                    ports.append(int(local.split(":")[1], 16))
        return ports


# MARK: Redis client

class Resp:
    """A minimal RESP2 client: one command at a time, or a pipeline."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    async def reply(self):
        line = (await self.reader.readuntil(b"\r\n"))[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = await self.reader.readexactly(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [await self.reply() for _ in range(n)]
        raise RuntimeError(f"bad reply {line!r}")

    async def call(self, *args):
        self.writer.write(self.encode(*args))
        return await self.reply()

    async def pipeline(self, commands):
        self.writer.write(b"".join(self.encode(*c) for c in commands))
        return [await self.reply() for _ in commands]

    def close(self):
        self.writer.close()
