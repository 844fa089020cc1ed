#!/usr/bin/env python3
"""Planned rebalances: how long each moved partition goes without an owner.

Run by `bench/run.sh rebalance`, which starts groupcoordd once per heartbeat
interval, with held heartbeats (the default) and without them
(heartbeat.max.wait.ms=0: every heartbeat answered at once, as before
version 1 of Heartbeat), and runs this driver against it; by hand:

    python3 bench/rebalance.py --bootstrap 127.0.0.1:7400 --zookeeper 127.0.0.1:2181 \\
        --groupctl build/client/groupctl --interval-ms 1000 --members 100 --label held

The members are groupcoord's asyncio consumers (python/groupcoord, the
AsyncConsumer), all in this process on one event loop, each polling as an
application would. Their on_assigned and on_revoked callbacks stamp
time.monotonic(); a partition that moves is unowned from its old owner's
revoke to its new owner's assign, and a partition a topic gains is unowned
from just before `groupctl topic grow` to its first assign. Phases, each
after the group is in step (every partition held once, the shares within one
of each other):

  join     one more member joins (--joins times; it leaves again, a graceful
           leave, between them);
  leave    a member closes (--joins times, the members just joined);
  grow     the topic grows by a quarter of its partitions;
  restart  a rolling restart: --restarts members in turn close and a new
           one joins in its place, the next once the group is in step.

Then a steady window (--steady-s) with every member in step: the server's CPU
(utime + stime of --server-pid from /proc) per member per second, less the
same server's CPU over as long a window after every member has left (its
ticker and ZooKeeper session: the control), and the heartbeats it answered
(groupcoord_requests_total{api="Heartbeat"} from --metrics-url) per member
per second.

Throughout: no partition is ever held by two members at once (an assign of a
partition whose previous owner has not revoked it); a violation fails the run
(exit 1). Output: "[rebalance] ..." progress on stderr; on stdout the rows of
bench/run.sh's table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from groupcoord import Admin, AsyncConsumer, Callbacks, ConsumerConfig, parse_bootstrap  # noqa: E402

ROW = "13 rebalance"


def log(text: str) -> None:
    sys.stderr.write(f"[rebalance] {text}\n")
    sys.stderr.flush()


class Fleet:
    """The members, what each holds, and every assign and revoke."""

    def __init__(self, a: argparse.Namespace, topic: str) -> None:
        self.a = a
        self.topic = topic
        self.members: dict[str, AsyncConsumer] = {}
        self.tasks: dict[str, asyncio.Task] = {}
        self.stopping: dict[str, bool] = {}
        self.held: dict[str, set[int]] = {}
        self.owner: dict[int, str] = {}
        self.released_at: dict[int, float] = {}
        self.unowned: list[float] = []
        self.violations: list[str] = []
        self.next_id = 0

    def add(self) -> str:
        name = f"m{self.next_id}"
        self.next_id += 1
        config = ConsumerConfig(parse_bootstrap(self.a.bootstrap), self.a.group, client_id=name,
                                heartbeat_interval=self.a.interval_ms / 1000.0,
                                request_timeout=max(3.0, self.a.interval_ms / 1000.0))

        def assigned(ps, name=name) -> None:
            t = time.monotonic()
            for p in ps:
                if p.topic != self.topic:
                    continue
                holder = self.owner.get(p.partition)
                if holder is not None and holder != name:
                    self.violations.append(f"{name} given {p.partition} at {t:.6f} while {holder} holds it")
                self.owner[p.partition] = name
                self.held[name].add(p.partition)
                if p.partition in self.released_at:
                    self.unowned.append((t - self.released_at.pop(p.partition)) * 1000.0)

        def revoked(tps, name=name) -> None:
            t = time.monotonic()
            for tp in tps:
                if tp.topic != self.topic:
                    continue
                self.held[name].discard(tp.partition)
                if self.owner.get(tp.partition) == name:
                    del self.owner[tp.partition]
                    self.released_at[tp.partition] = t

        self.held[name] = set()
        consumer = AsyncConsumer(config, Callbacks(on_assigned=assigned, on_revoked=revoked, on_lost=revoked))
        self.members[name] = consumer
        self.stopping[name] = False
        self.tasks[name] = asyncio.ensure_future(self._run(name, consumer))
        return name

    async def _run(self, name: str, consumer: AsyncConsumer) -> None:
        # Short polls, as an application's loop: the held heartbeat's answer
        # is taken by whichever poll is waiting when it comes.
        while not self.stopping[name]:
            try:
                await consumer.poll(0.2)
            except Exception as e:  # noqa: BLE001 - a member's failure is reported, the run goes on
                log(f"{name}: {e}")
                await asyncio.sleep(0.1)

    async def remove(self, name: str) -> None:
        """A graceful leave: the member stops polling, revokes all it holds, and leaves."""
        self.stopping[name] = True
        await self.tasks.pop(name)
        await self.members.pop(name).close()
        del self.held[name]
        del self.stopping[name]

    def in_step(self, partitions: int) -> bool:
        counts = [len(h) for h in self.held.values()]
        return (len(self.owner) == partitions and sum(counts) == partitions and bool(counts)
                and max(counts) - min(counts) <= 1 and not self.released_at)

    async def settle(self, partitions: int, what: str) -> float:
        start = time.monotonic()
        deadline = start + self.a.settle_s
        while time.monotonic() < deadline:
            if self.in_step(partitions):
                return (time.monotonic() - start) * 1000.0
            await asyncio.sleep(0.002)
        raise RuntimeError(f"{what}: not in step after {self.a.settle_s} s "
                           f"({len(self.owner)} of {partitions} partitions held)")


def quantiles(values: list[float]) -> str:
    if not values:
        return "none moved"
    v = sorted(values)
    p99 = v[min(len(v) - 1, (len(v) * 99) // 100)]
    return f"p50 {statistics.median(v):.1f} / p99 {p99:.1f} / max {v[-1]:.1f} ms ({len(v)} moves)"


def server_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def heartbeats_answered(url: str) -> float:
    with urllib.request.urlopen(url, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith('groupcoord_requests_total{api="Heartbeat"}'):
                return float(line.split()[-1])
    return 0.0


async def main_async(a: argparse.Namespace) -> int:
    topic = f"rebalance-{os.getpid()}-{a.label}-{a.interval_ms}"
    a.group = topic
    partitions = a.members * a.partitions_per_member
    subprocess.run([a.groupctl, "topic", "create", topic, "--partitions", str(partitions), "--zookeeper",
                    a.zookeeper, "--topics-path", a.topics_path], check=True, capture_output=True)
    session = 3 * a.interval_ms / 1000.0
    with Admin(parse_bootstrap(a.bootstrap)) as admin:
        admin.create_group(a.group, session, [topic])
    fleet = Fleet(a, topic)
    label = f"{a.label}, {a.members} members, {a.interval_ms} ms interval"
    for _ in range(a.members):
        fleet.add()
    took = await fleet.settle(partitions, "forming")
    log(f"{label}: formed in {took:.0f} ms")
    rows: dict[str, list[float]] = {}

    # join, then the same member leaves.
    joins: list[float] = []
    leaves: list[float] = []
    for _ in range(a.joins):
        fleet.unowned = []
        name = fleet.add()
        await fleet.settle(partitions, "join")
        joins += fleet.unowned
        fleet.unowned = []
        await fleet.remove(name)
        await fleet.settle(partitions, "leave")
        leaves += fleet.unowned
    rows["join"] = joins
    rows["leave"] = leaves

    # grow
    fleet.unowned = []
    grown = partitions + max(1, partitions // 4)
    t0 = time.monotonic()
    for p in range(partitions, grown):
        fleet.released_at[p] = t0
    subprocess.run([a.groupctl, "topic", "grow", topic, "--partitions", str(grown), "--zookeeper", a.zookeeper,
                    "--topics-path", a.topics_path], check=True, capture_output=True)
    await fleet.settle(grown, "grow")
    rows["grow"] = fleet.unowned
    partitions = grown

    # rolling restart
    fleet.unowned = []
    for name in list(fleet.members)[: a.restarts]:
        await fleet.remove(name)
        fleet.add()
        await fleet.settle(partitions, "restart")
    rows["restart"] = fleet.unowned

    for phase, values in rows.items():
        log(f"{label}: {phase}: unowned {quantiles(values)}")
        print(f"{ROW} | {a.label} | {a.members} | {a.interval_ms} | {phase} | {quantiles(values)}")

    # steady: the server's CPU and heartbeats per member per second, less
    # what the same server spends with no member at all over as long (its
    # ticker, its ZooKeeper session), measured after the members leave.
    steady = None
    if a.server_pid and a.steady_s > 0:
        cpu0, hb0, t0 = server_cpu_s(a.server_pid), heartbeats_answered(a.metrics_url), time.monotonic()
        await asyncio.sleep(a.steady_s)
        cpu1, hb1, t1 = server_cpu_s(a.server_pid), heartbeats_answered(a.metrics_url), time.monotonic()
        steady = ((cpu1 - cpu0) / (t1 - t0), (hb1 - hb0) / (t1 - t0), len(fleet.members))

    for name in list(fleet.members):
        await fleet.remove(name)

    if steady is not None:
        await asyncio.sleep(2.0)  # the leaves written and the group settled
        cpu0, t0 = server_cpu_s(a.server_pid), time.monotonic()
        await asyncio.sleep(a.steady_s)
        idle = (server_cpu_s(a.server_pid) - cpu0) / (time.monotonic() - t0)
        busy, beats, n = steady
        per_member_us = (busy - idle) / n * 1e6
        log(f"{label}: steady {a.steady_s:.0f} s: server CPU {busy * 1e3:.2f} ms/s with the members, "
            f"{idle * 1e3:.2f} ms/s without: {per_member_us:.1f} us per member per second; "
            f"{beats / n:.3f} heartbeats per member per second")
        print(f"{ROW} | {a.label} | {n} | {a.interval_ms} | steady | server CPU {per_member_us:.1f} us per member "
              f"per s ({busy * 1e3:.2f} ms/s less {idle * 1e3:.2f} ms/s idle), {beats / n:.3f} heartbeats per "
              f"member per s")
    if fleet.violations:
        for v in fleet.violations[:20]:
            log(f"OWNERSHIP VIOLATION: {v}")
        return 1
    log(f"{label}: no partition held twice")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap", required=True, help="HOST:PORT of groupcoordd")
    p.add_argument("--zookeeper", required=True, help="the ensemble's connect string (for groupctl topic)")
    p.add_argument("--topics-path", default="/brokers/topics", help="the servers' zk.topics.path")
    p.add_argument("--groupctl", required=True, help="the groupctl binary")
    p.add_argument("--interval-ms", type=int, default=1000, help="the members' heartbeat interval")
    p.add_argument("--members", type=int, default=100)
    p.add_argument("--partitions-per-member", type=int, default=4)
    p.add_argument("--joins", type=int, default=5, help="joins (each followed by that member's leave)")
    p.add_argument("--restarts", type=int, default=10, help="members restarted one after another")
    p.add_argument("--settle-s", type=float, default=120.0, help="the longest a phase may take to settle")
    p.add_argument("--steady-s", type=float, default=30.0, help="the steady window for CPU and heartbeats")
    p.add_argument("--server-pid", type=int, default=0, help="groupcoordd's pid (its CPU, from /proc)")
    p.add_argument("--metrics-url", default="", help="groupcoordd's /metrics")
    p.add_argument("--label", default="held", help="what the run is (held, or not held)")
    a = p.parse_args()
    return asyncio.run(main_async(a))


if __name__ == "__main__":
    sys.exit(main())
