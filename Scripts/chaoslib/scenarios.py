"""The scenarios of Scripts/chaos. Each takes a `Scenario` (processes, members, checks; see
Scripts/chaos) and `quick`; it starts what it needs, drives the rooms, injects its fault, and
checks convergence (`settle`) and late joiners where they apply."""

import asyncio
import signal
import time

from .processes import Resp


def now():
    return time.monotonic()


async def until(condition, timeout, step=0.01):
    deadline = now() + timeout
    while now() < deadline:
        if condition():
            return True
        await asyncio.sleep(step)
    return condition()


def shard_of(room, shards):
    """The shard index a node picks for `room` (FNV-1a 64 of its name, ShardedRoomEngine)."""
    h = 0xCBF29CE484222325
    for byte in room.encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h % shards


async def drive(scenario, room, presenters, end, handovers=True, paused=lambda: False, period=0.016):
    """The room's current driver scrolls every `period`; every 100-300 ms another presenter
    takes control and scrolls at once (while not `paused`). Returns the last driver, which
    moves last."""
    rng = scenario.run.rng
    current = presenters[0]
    next_handover = now() + rng.uniform(0.1, 0.3)
    count = 0
    while now() < end:
        if handovers and len(presenters) > 1 and now() >= next_handover and not paused():
            current = rng.choice([p for p in presenters if p is not current])
            current.take()
            count += 1
            next_handover = now() + rng.uniform(0.1, 0.3)
        for p in presenters:
            if p.alive and (p is current or p.driver == p.id):
                p.scroll(scenario.next_offset(room))
        await asyncio.sleep(period)
    scenario.handovers = getattr(scenario, "handovers", 0) + count
    return current


async def last_move(scenario, room, driver):
    if not await until(lambda: driver.driver == driver.id, 6):
        scenario.notes.append(f"{room}: {driver.label} never heard it drives; no last move")
        return
    for _ in range(3):
        driver.scroll(scenario.next_offset(room))
        await asyncio.sleep(0.02)


def refusals(members, code="not_driver"):
    return sum(m.errors.count(code) for m in members)


# MARK: scenarios

async def handover(s, quick):
    """Hand-overs every 100-300 ms between presenters on three nodes; late joiners on a fourth."""
    await s.start(["A", "B", "C", "D"])
    rooms = [s.room(i) for i in range(2 if quick else 4)]
    presenters = {}
    for room in rooms:
        first = await s.presenter_driving(room, "A", "PA")
        presenters[room] = [first] + [await s.member(n, room, "presenter", f"P{n}") for n in "BC"]
        for n in "ABC":
            await s.member(n, room, "follower", f"F{n}")
        first.send({"type": "document", "name": "notes.md", "format": "markdown", "text": f"# {room}"})
    s.watch_hash(rooms)
    end = now() + (6 if quick else 15)
    last = await asyncio.gather(*(drive(s, r, presenters[r], end) for r in rooms))
    await asyncio.gather(*(last_move(s, r, d) for r, d in zip(rooms, last)))
    quiet = now()
    await s.settle(rooms, quiet)
    for w in s.watches:
        w.stop()
    s.notes.append(f"{s.handovers} hand-overs; {refusals([p for ps in presenters.values() for p in ps])} scrolls refused not_driver")
    await s.late_joiners(rooms, ["D", "B"])


async def take_hold(s, quick):
    """Divergence 1: Bob drives on B, Ann takes on A and drives, Bob takes back and holds
    still; 1.5 s later do all nodes agree? Then a follower joins on D (a fetch, so a `Q` that
    Bob's node answers by ordering its state again). Divergence 3: a take and a scroll at once;
    a new room's first presenter."""
    await s.start(["A", "B", "C", "D"])
    trials = 6 if quick else 12
    rooms = [s.room(i) for i in range(trials)]

    async def trial(room):
        bob = await s.presenter_driving(room, "B", "Bob")
        ann = await s.member("A", room, "presenter", "Ann")
        for n in "ABC":
            await s.member(n, room, "follower", f"F{n}")
        for _ in range(3):
            bob.scroll(s.next_offset(room))
            await asyncio.sleep(0.02)
        ann.take()
        await until(lambda: ann.driver == ann.id, 5)
        end = now() + 0.6
        take_at = now() + s.run.rng.uniform(0.2, 0.4)
        taken = False
        while now() < end and (ann.driver == ann.id or now() < take_at + 0.05):
            ann.scroll(s.next_offset(room))
            if not taken and now() >= take_at:
                bob.take()
                taken = True
            await asyncio.sleep(0.004)
        await asyncio.sleep(1.5)
        return s.checks.agree([room])

    agreed = await asyncio.gather(*(trial(r) for r in rooms))
    diverged = [r for r, ok in zip(rooms, agreed) if not ok]
    s.notes.append(f"divergence 1: {len(diverged)} of {trials} trials disagree 1.5 s after the take (the last driver holds still)")
    for room in diverged:
        s.checks.fail("I2", f"1.5 s after Bob's take: {room}: {s.checks.disagreement(room)}")
    s.checked.add("I6")
    for room in rooms:
        await s.member("D", room, "follower", "Late")
    await asyncio.sleep(0.5)
    # Divergence 3: take then scroll at once, from another node than the driver's.
    quick_rooms = [s.room(100 + i) for i in range(4)]
    takers = []
    for room in quick_rooms:
        await s.presenter_driving(room, "A", "Ann")
        cat = await s.member("B", room, "presenter", "Cat")
        cat.take()
        cat.scroll(s.next_offset(room))
        takers.append(cat)
    await asyncio.sleep(1.0)
    s.notes.append(f"divergence 3: take+scroll at once refused not_driver in {sum(1 for c in takers if 'not_driver' in c.errors)} of {len(takers)}")
    firsts = [await s.member("C", s.room(200 + i), "presenter", "First") for i in range(4)]
    s.notes.append(f"divergence 3: a new room's first presenter welcomed as driver in "
                   f"{sum(1 for f in firsts if f.welcome.get('driver') == f.id)} of {len(firsts)}")
    # Then the last driver moves: does every node end on its state?
    for room in rooms:
        for p in [m for m in s.checks.members if m.room == room and m.role == "presenter" and m.driver == m.id]:
            await last_move(s, room, p)
    await s.settle(rooms, now(), window=1.5)


async def kill9(s, quick):
    """kill -9 of the lease holder's node: rooms with a presenter on B inherit after the lease
    expires; rooms with followers only (divergence 6) are joined from a restarted node."""
    await s.start(["A", "B", "C"])
    led, alone = [s.room(i) for i in range(3)], [s.room(10 + i) for i in range(2)]
    anns, bobs = {}, {}
    for room in led + alone:
        anns[room] = await s.presenter_driving(room, "A", "Ann")
        if room in led:
            bobs[room] = await s.member("B", room, "presenter", "Bob")
        for n in ("ABC" if room in led else "BC"):
            await s.member(n, room, "follower", f"F{n}")
    end = now() + 1.5
    await asyncio.gather(*(drive(s, r, [anns[r]], end, handovers=False) for r in led + alone))
    killed = now()
    s.nodes["A"].kill()
    await s.add_node("A2")
    ok = await until(lambda: all(b.driver == b.id for b in bobs.values()), 12, 0.05)
    s.notes.append(f"control passed to Bob on B in {now() - killed:.1f} s" if ok else "control never passed to Bob within 12 s")
    await asyncio.gather(*(last_move(s, r, b) for r, b in bobs.items()))
    await until(lambda: False, max(0, killed + 6.5 - now()))
    await s.late_joiners(led + alone, ["A2"])
    await s.settle(led + alone, now())


async def sigstop(s, quick, seconds):
    """SIGSTOP of the lease holder's node for `seconds` while its driver keeps scrolling."""
    await s.start(["A", "B", "C"])
    rooms = [s.room(i) for i in range(3)]
    anns, bobs = {}, {}
    for room in rooms:
        anns[room] = await s.presenter_driving(room, "A", "Ann")
        bobs[room] = await s.member("B", room, "presenter", "Bob")
        for n in "ABC":
            await s.member(n, room, "follower", f"F{n}")
    s.watch_hash(rooms)

    async def fault():
        await asyncio.sleep(1.0)
        s.nodes["A"].signal(signal.SIGSTOP)
        await asyncio.sleep(seconds)
        s.nodes["A"].signal(signal.SIGCONT)
        await s.caught_up(rooms, now(), "after SIGCONT")

    end = now() + 2.0 + seconds
    await asyncio.gather(fault(), *(drive(s, r, [anns[r]], end, handovers=False) for r in rooms))
    await s.ready()
    moved = 0
    for room in rooms:
        driver = next((m for m in (anns[room], bobs[room]) if m.id == bobs[room].driver), None)
        if driver:
            await last_move(s, room, driver)
            moved += 1
    s.notes.append(f"after SIGCONT: Bob drives {sum(1 for b in bobs.values() if b.driver == b.id)} of {len(rooms)} rooms")
    await s.settle(rooms, now())


async def redis_restart(s, quick):
    """Redis killed and restarted empty while drivers on A, B and C scroll."""
    await s.start(["A", "B", "C", "D"])
    rooms = [s.room(i) for i in range(3)]
    drivers = {}
    for room, node in zip(rooms, "ABC"):
        drivers[room] = await s.presenter_driving(room, node, f"P{node}")
        drivers[room].send({"type": "document", "name": "d.md", "format": "markdown", "text": f"# {room}"})
        for n in "ABC":
            await s.member(n, room, "follower", f"F{n}")

    async def fault():
        await asyncio.sleep(1.0)
        s.redis[0].kill()
        await asyncio.sleep(2.0)
        await s.redis[0].start()
        restarted = now()
        await s.ready()
        s.notes.append(f"every node reached the new Redis {now() - restarted:.1f} s after it started")
        await s.caught_up(rooms, restarted, "after Redis restarted")

    end = now() + 5.0
    await asyncio.gather(fault(), *(drive(s, r, [drivers[r]], end, handovers=False) for r in rooms))
    await asyncio.gather(*(last_move(s, r, d) for r, d in drivers.items()))
    await s.settle(rooms, now())
    await s.late_joiners(rooms, ["D"])


async def client_kill(s, quick):
    """CLIENT KILL of B's Redis connections, then A's, during hand-overs between A and B."""
    await s.start(["A", "B"])
    rooms = [s.room(i) for i in range(3)]
    presenters = {}
    for room in rooms:
        presenters[room] = [await s.presenter_driving(room, "A", "PA"), await s.member("B", room, "presenter", "PB")]
        for n in "AB":
            await s.member(n, room, "follower", f"F{n}")
    s.watch_hash(rooms)
    faulty = [False]

    async def fault():
        conn = await Resp.open(s.redis[0].port)
        for name in "BA":
            await asyncio.sleep(1.5)
            faulty[0] = True
            ports = s.nodes[name].redis_ports(s.redis[0].port)
            for port in ports:
                await conn.call("CLIENT", "KILL", "ADDR", f"127.0.0.1:{port}")
            s.notes.append(f"CLIENT KILL of {len(ports)} connections of node {name}")
            killed = now()
            await asyncio.sleep(0.2)
            await s.ready()
            await s.caught_up(rooms, killed, f"after CLIENT KILL of {name}")
            faulty[0] = False
        conn.close()

    end = now() + 4.5
    results = await asyncio.gather(fault(), *(drive(s, r, presenters[r], end, paused=lambda: faulty[0]) for r in rooms))
    await asyncio.gather(*(last_move(s, r, d) for r, d in zip(rooms, results[1:])))
    await s.settle(rooms, now())


async def two_shards(s, quick):
    """Two Redis servers (redis.shards): hand-overs on rooms of both, one shard killed and
    restarted empty (every node serves its rooms alone meanwhile)."""
    await s.start(["A", "B", "C", "D"], shards=2)
    rooms = [s.room(i) for i in range(6)]
    presenters = {}
    for room in rooms:
        presenters[room] = [await s.presenter_driving(room, "A", "PA")] + [await s.member(n, room, "presenter", f"P{n}") for n in "BC"]
        for n in "ABC":
            await s.member(n, room, "follower", f"F{n}")
    s.notes.append(f"rooms on shard 2: {sum(1 for r in rooms if shard_of(r, 2) == 1)} of {len(rooms)}")
    s.watch_hash(rooms)
    faulty = [False]

    async def fault():
        await asyncio.sleep(1.5)
        faulty[0] = True
        s.redis[1].kill()
        await asyncio.sleep(1.5)
        await s.redis[1].start()
        restarted = now()
        await s.ready()
        await s.caught_up(rooms, restarted, "after shard 2 restarted")
        await asyncio.sleep(0.3)
        faulty[0] = False

    end = now() + (5.0 if quick else 8.0)
    results = await asyncio.gather(fault(), *(drive(s, r, presenters[r], end, paused=lambda: faulty[0]) for r in rooms))
    await asyncio.gather(*(last_move(s, r, d) for r, d in zip(rooms, results[1:])))
    await s.settle(rooms, now())
    await s.late_joiners(rooms, ["D"])


SCENARIOS = {
    "handover": handover,
    "take-hold": take_hold,
    "kill9": kill9,
    "sigstop3": lambda s, q: sigstop(s, q, 3),
    "sigstop7": lambda s, q: sigstop(s, q, 7),
    "redis-restart": redis_restart,
    "client-kill": client_kill,
    "two-shards": two_shards,
}
