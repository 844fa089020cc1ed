#!/usr/bin/env python3
"""groupcoord-watch in Python: watch a consumer group rebalance, live.

Starts a few consumers of one group in this process, each on its own
thread. Every few seconds the oldest leaves and a new one joins; each
prints its generation and partitions whenever they change, what it gives
up before the next owner gets it, and commits an offset for every partition
it holds. Run it after `scripts/dev.sh run`, with a topic made by
`groupctl topic create demo --partitions 6 --zookeeper 127.0.0.1:2181`:

    python3 python/examples/watch.py --consumers 3 --seconds 60
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from groupcoord import (Admin, Callbacks, Consumer, ConsumerConfig, GroupcoordError,  # noqa: E402
                        PartitionOffset, TopicPartition, parse_bootstrap)

stopping = threading.Event()
print_lock = threading.Lock()


def say(who: str, what: str) -> None:
    """One timestamped line."""
    with print_lock:
        print(f"{time.strftime('%H:%M:%S')}  {who}  {what}", flush=True)


def describe(ps: list[TopicPartition] | list[PartitionOffset]) -> str:
    """``demo-0 demo-1``, or ``(nothing)``."""
    return " ".join(f"{p.topic}-{p.partition}" for p in ps) or "(nothing)"


class DemoConsumer:
    """One consumer on its own thread, polling until told to leave."""

    def __init__(self, name: str, bootstrap: list[tuple[str, int]], group: str) -> None:
        self.name = name
        self.next_offset: dict[TopicPartition, int] = {}
        callbacks = Callbacks(on_assigned=self.assigned,
                              on_revoked=lambda ps: say(name, f"revoked  {describe(ps)}"),
                              on_lost=lambda ps: say(name, f"LOST     {describe(ps)} "
                                                           "(no heartbeat for the session timeout)"))
        self.consumer = Consumer(ConsumerConfig(bootstrap, group, client_id=name), callbacks)
        self.leaving = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def assigned(self, ps: list[PartitionOffset]) -> None:
        for p in ps:
            self.next_offset[p.tp] = max(p.offset, 0)

    def run(self) -> None:
        shown: tuple[int, str] = (-2, "")
        last_commit = time.monotonic()
        while not (self.leaving.is_set() or stopping.is_set()):
            try:
                self.consumer.poll(0.2)
            except GroupcoordError as e:
                say(self.name, f"error    {e}")
                time.sleep(1)
                continue
            held = self.consumer.assignment()
            now = (self.consumer.generation, describe(held))
            if now != shown and now[0] >= 0:
                shown = now
                say(self.name, f"generation {now[0]}  owns {now[1]}  (member {self.consumer.member_id})")
            if held and time.monotonic() - last_commit >= 2:
                # "Processes" ten records per partition, then commits where it got to.
                last_commit = time.monotonic()
                offsets = []
                for tp in held:
                    self.next_offset[tp] = self.next_offset.get(tp, 0) + 10
                    offsets.append(PartitionOffset(tp.topic, tp.partition, self.next_offset[tp]))
                try:
                    self.consumer.commit(offsets)
                except GroupcoordError as e:
                    say(self.name, f"commit   {e}")
        self.consumer.close()
        say(self.name, "left the group")

    def leave(self) -> None:
        self.leaving.set()
        self.thread.join(timeout=15)


def main() -> int:
    ap = argparse.ArgumentParser(description="Starts N consumers of GROUP (created if missing, subscribed to TOPIC) "
                                             "and, every few seconds, has one leave and a new one join.")
    ap.add_argument("--bootstrap", default="127.0.0.1:7400", help="HOST:PORT[,HOST:PORT] (default %(default)s)")
    ap.add_argument("--group", default="demo")
    ap.add_argument("--topic", default="demo")
    ap.add_argument("--consumers", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=60)
    args = ap.parse_args()
    if not 1 <= args.consumers <= 50 or args.seconds < 1:
        ap.error("--consumers must be 1..50 and --seconds at least 1")
    bootstrap = parse_bootstrap(args.bootstrap)
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        with Admin(bootstrap) as admin:
            controller = admin.create_group(args.group, 6.0, [args.topic], ephemeral=True)
    except GroupcoordError as e:
        print(f"cannot create group {args.group}: {e}", file=sys.stderr)
        return 1
    say("watch", f"group {args.group} (topic {args.topic}, session timeout 6 s) is controlled by "
                 f"{controller.host}:{controller.port}")
    running = [DemoConsumer(f"consumer-{n}", bootstrap, args.group) for n in range(1, args.consumers + 1)]
    next_id = args.consumers + 1
    end = time.monotonic() + args.seconds
    next_change = time.monotonic() + 8
    while not stopping.is_set() and time.monotonic() < end:
        time.sleep(0.1)
        if time.monotonic() < next_change:
            continue
        next_change += 8
        say("watch", f"{running[0].name}, the oldest, leaves; a new one joins")
        running.pop(0).leave()
        running.append(DemoConsumer(f"consumer-{next_id}", bootstrap, args.group))
        next_id += 1
    stopping.set()
    for c in running:
        c.leave()
    say("watch", "done; the group was ephemeral and is gone with its last member")
    return 0


if __name__ == "__main__":
    sys.exit(main())
