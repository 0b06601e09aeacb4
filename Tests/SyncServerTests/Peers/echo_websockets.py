#!/usr/bin/env python3
"""Exchange text and binary messages of the sizes given with an echo endpoint,
using the `websockets` library (PyPI), and print one line per message.

usage: echo_websockets.py URL [--deflate] [--sizes 0,125,...] [--random]
--random sends random (incompressible) bytes as the binary messages.
Prints 'ok KIND SIZE' per echoed message, 'extensions: ...' once, exits non-zero on any mismatch.
"""
import asyncio
import os
import ssl
import sys

import websockets


async def main() -> int:
    url = sys.argv[1]
    deflate = "--deflate" in sys.argv
    sizes = [0, 125, 126, 65535, 65536, 16 * 1024 * 1024]
    if "--sizes" in sys.argv:
        sizes = [int(s) for s in sys.argv[sys.argv.index("--sizes") + 1].split(",")]
    context = None
    if url.startswith("wss://"):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    async with websockets.connect(
        url, ssl=context, compression="deflate" if deflate else None, max_size=None, open_timeout=10
    ) as ws:
        print("extensions:", ws.response.headers.get("Sec-WebSocket-Extensions", "none"), flush=True)
        for size in sizes:
            text = "".join(chr(ord("a") + i % 26) for i in range(min(size, 26))) * (size // 26 + 1)
            text = text[:size]
            await ws.send(text)
            echoed = await asyncio.wait_for(ws.recv(), 60)
            if echoed != text:
                print(f"mismatch text {size}: got {len(echoed)}", flush=True)
                return 1
            print(f"ok text {size}", flush=True)
            data = bytes((i * 7) & 0xFF for i in range(min(size, 4096))) * (size // 4096 + 1)
            data = os.urandom(size) if "--random" in sys.argv else data[:size]
            await ws.send(data)
            echoed = await asyncio.wait_for(ws.recv(), 60)
            if echoed != data:
                print(f"mismatch binary {size}: got {len(echoed)}", flush=True)
                return 1
            print(f"ok binary {size}", flush=True)
        await ws.close(code=1000, reason="done")
        print(f"closed {ws.close_code}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
