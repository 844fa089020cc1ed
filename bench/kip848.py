#!/usr/bin/env python3
"""KIP-848 consumers (librdkafka, group.protocol=consumer) on groupcoordd's Kafka port.

Run by `bench/run.sh kip848`, which starts groupcoordd with a Kafka port once
per heartbeat interval and runs this driver against it; by hand:

    LD_LIBRARY_PATH=$(scripts/librdkafka.sh path) /usr/bin/python3 bench/kip848.py \\
        --bootstrap 127.0.0.1:9092 --zookeeper 127.0.0.1:2181 --groupctl build/client/groupctl \\
        --heartbeat-ms 1000 --phases growth,join

Every consumer is a process of its own (this file with --member): a
confluent-kafka Consumer with group.protocol=consumer and neither
session.timeout.ms nor heartbeat.interval.ms (the group sets them), whose
on_assign, on_revoke and on_lost callbacks print one JSON line each with
time.monotonic() (CLOCK_MONOTONIC, one clock for every process of the
machine) and the partitions. The driver gathers the lines of all of them.

Phases (each bounded in time; the whole run by --deadline-s):
  growth  a fresh topic of --from partitions and a fresh group of --members
          consumers, stable (each holds its share, every partition held
          once); then `groupctl topic grow` to --to partitions: the time
          from just before the command to the moment every member holds its
          new share (every partition held exactly once). --rounds rounds.
  join    --members consumers stable on a topic of --from partitions; one
          more joins: for each partition that moves, the time it is
          unowned, from its old owner's revoke callback to its new owner's
          assign callback. Then that member closes (a graceful leave) and
          the group settles before the next; --joins joins.
Throughout, by the callbacks' times: no partition is ever held by two
consumers at once (an assign of a partition another member has not
revoked). A violation fails the run (exit 1) and is printed with the lines.

Output: "[kip848] ..." progress on stderr; on stdout the rows of
bench/run.sh's table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time

ROW = "12 kip848"


# --------------------------------------------------------------------------- the member


def member_main(a: argparse.Namespace) -> int:
    import confluent_kafka
    from confluent_kafka import Consumer

    def emit(**fields) -> None:
        fields["member"] = a.name
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()

    conf = {
        "bootstrap.servers": a.bootstrap,
        "group.id": a.group,
        "client.id": a.name,
        "group.protocol": "consumer",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    consumer = Consumer(conf)
    emit(event="started", t=time.monotonic(), lib=confluent_kafka.libversion()[0], pid=os.getpid())

    # The time of an assign is taken as the callback starts (the application
    # may use the partitions from then on), that of a revoke as it ends (it
    # has let them go): an overlap is never hidden by the callbacks' own time.
    def on_assign(_c, partitions):
        t = time.monotonic()
        emit(event="assign", t=t, partitions=sorted(tp.partition for tp in partitions if tp.topic == a.topic))

    def on_revoke(_c, partitions):
        ps = sorted(tp.partition for tp in partitions if tp.topic == a.topic)
        emit(event="revoke", t=time.monotonic(), partitions=ps)

    def on_lost(_c, partitions):
        ps = sorted(tp.partition for tp in partitions if tp.topic == a.topic)
        emit(event="lost", t=time.monotonic(), partitions=ps)

    consumer.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    stop = threading.Event()

    def read_stdin() -> None:
        # "close" (or the driver gone: end of input) ends the member.
        for line in sys.stdin:
            if line.strip() == "close":
                break
        stop.set()

    threading.Thread(target=read_stdin, daemon=True).start()
    deadline = time.monotonic() + a.max_seconds
    seen_errors: set[str] = set()
    while not stop.is_set() and time.monotonic() < deadline:
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is not None:
            text = f"{msg.error().name()}: {msg.error().str()}"
            if text not in seen_errors and msg.error().code() != confluent_kafka.KafkaError._PARTITION_EOF:
                seen_errors.add(text)
                emit(event="error", t=time.monotonic(), error=text)
    emit(event="closing", t=time.monotonic())
    consumer.close()  # leaves the group: its partitions are revoked (on_revoke) first
    emit(event="closed", t=time.monotonic())
    return 0


# --------------------------------------------------------------------------- the driver


def log(msg: str) -> None:
    print(f"[kip848] {msg}", file=sys.stderr, flush=True)


class Failure(Exception):
    pass


class Run:
    """The members' processes and every line they printed."""

    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.cond = threading.Condition()
        self.events: list[dict] = []
        self.procs: dict[str, subprocess.Popen] = {}
        self.readers: list[threading.Thread] = []
        self.deadline = time.monotonic() + a.deadline_s
        self.violations: list[str] = []
        self.log_file = open(a.events_log, "a") if a.events_log else None

    # -- processes
    def start(self, name: str, group: str, topic: str) -> None:
        cmd = [sys.executable, os.path.abspath(__file__), "--member", "--name", name, "--group", group,
               "--topic", topic, "--bootstrap", self.a.bootstrap, "--max-seconds", str(int(self.a.deadline_s) + 60)]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.a.member_stderr,
                             text=True, bufsize=1)
        self.procs[name] = p
        th = threading.Thread(target=self._read, args=(name, p), daemon=True)
        th.start()
        self.readers.append(th)

    def _read(self, name: str, p: subprocess.Popen) -> None:
        for line in p.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if self.log_file:
                self.log_file.write(line + "\n")
                self.log_file.flush()
            with self.cond:
                self.events.append(e)
                self.cond.notify_all()
        with self.cond:
            self.events.append({"event": "exited", "member": name, "t": time.monotonic()})
            self.cond.notify_all()

    def close(self, name: str, wait_s: float = 30.0) -> None:
        p = self.procs.pop(name, None)
        if p is None:
            return
        try:
            p.stdin.write("close\n")
            p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass
        try:
            p.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            log(f"member {name} (pid {p.pid}) did not close within {wait_s:.0f} s: killed")
            p.kill()
            p.wait()

    def close_all(self) -> None:
        names = list(self.procs)
        for n in names:  # all at once, then wait for each
            try:
                self.procs[n].stdin.write("close\n")
                self.procs[n].stdin.flush()
            except (BrokenPipeError, ValueError):
                pass
        for n in names:
            self.close(n)

    def kill_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
        for p in self.procs.values():
            p.wait()
        self.procs.clear()

    # -- state
    def snapshot(self, since: int = 0) -> list[dict]:
        with self.cond:
            return list(self.events[since:])

    def mark(self) -> int:
        with self.cond:
            return len(self.events)

    def holdings(self, members: list[str]) -> dict[str, set[int]]:
        """What each member holds now, from its own lines (each process's lines are in order)."""
        held: dict[str, set[int]] = {m: set() for m in members}
        for e in self.snapshot():
            m = e.get("member")
            if m not in held:
                continue
            if e["event"] == "assign":
                held[m].update(e["partitions"])
            elif e["event"] in ("revoke", "lost"):
                held[m].difference_update(e["partitions"])
            elif e["event"] in ("closing", "exited"):
                held[m].clear()
        return held

    def wait_until(self, what: str, check, timeout_s: float) -> None:
        end = min(time.monotonic() + timeout_s, self.deadline)
        while not check():
            left = end - time.monotonic()
            if left <= 0:
                raise Failure(f"{what}: not within {timeout_s:.0f} s")
            with self.cond:
                self.cond.wait(min(left, 0.1))

    def errors_since(self, mark: int) -> list[str]:
        return sorted({f"{e['member']}: {e['error']}" for e in self.snapshot(mark) if e["event"] == "error"})


def balanced(held: dict[str, set[int]], partitions: int) -> bool:
    """Every partition held exactly once, each member at its share (floor or ceil)."""
    n = len(held)
    if n == 0:
        return False
    lo, hi = partitions // n, -(-partitions // n)
    total = 0
    union: set[int] = set()
    for ps in held.values():
        if not lo <= len(ps) <= hi:
            return False
        total += len(ps)
        union |= ps
    return total == partitions and union == set(range(partitions))


def replay(events: list[dict], members: set[str], partitions: int, t0: float, violations: list[str],
           context: str) -> float | None:
    """The events in time order: every assign of a partition still held by another member is a
    violation; returns the first time at or after t0 at which the members' holdings are balanced."""
    owner: dict[int, str] = {}
    held: dict[str, set[int]] = {m: set() for m in members}
    first = None
    for e in sorted((e for e in events if "t" in e), key=lambda e: e["t"]):
        m = e["member"]
        ev = e["event"]
        if ev == "assign":
            for p in e["partitions"]:
                o = owner.get(p)
                if o is not None and o != m:
                    violations.append(f"{context}: partition {p} assigned to {m} at {e['t']:.6f} while {o} held it")
                owner[p] = m
                if m in held:
                    held[m].add(p)
        elif ev in ("revoke", "lost"):
            for p in e["partitions"]:
                if owner.get(p) == m:
                    del owner[p]
                if m in held:
                    held[m].discard(p)
        elif ev in ("closing", "exited"):
            for p in [p for p, o in owner.items() if o == m]:
                del owner[p]
            if m in held:
                held[m].clear()
        else:
            continue
        if first is None and e["t"] >= t0 and balanced(held, partitions):
            first = e["t"]
    return first


def fmt_ms(v: float) -> str:
    return f"{v:,.0f}"


def groupctl(a: argparse.Namespace, *args: str) -> None:
    cmd = [a.groupctl, *args, "--zookeeper", a.zookeeper, "--topics-path", a.topics_path]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise Failure(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    log(r.stdout.strip())


def form(run: Run, a: argparse.Namespace, group: str, topic: str, names: list[str], partitions: int) -> None:
    for n in names:
        run.start(n, group, topic)
    run.wait_until(f"{group}: {len(names)} members holding {partitions} partitions balanced",
                   lambda: balanced(run.holdings(names), partitions), a.form_timeout_s)


def phase_growth(run: Run, a: argparse.Namespace, tag: str) -> list[str]:
    times: list[float] = []
    rng = random.Random(a.seed)
    for r in range(1, a.rounds + 1):
        group = f"kip848-grow-hb{a.heartbeat_ms}-{tag}-r{r}"
        topic = f"kip848-grow-hb{a.heartbeat_ms}-{tag}-r{r}"
        groupctl(a, "topic", "create", topic, "--partitions", str(a.from_partitions))
        names = [f"g{r}m{i}" for i in range(a.members)]
        mark = run.mark()
        form(run, a, group, topic, names, a.from_partitions)
        time.sleep(a.settle_s)  # stable: nothing moves meanwhile
        # The members formed together and heartbeat in step: a grow at a
        # fixed delay after the forming would land at the same point of
        # their schedule every round. A random point of the interval, as a
        # topic change meets a group (--grow-phase fixed: right after).
        phase = rng.uniform(0, a.heartbeat_ms / 1000) if a.grow_phase == "random" else 0.0
        time.sleep(phase)
        t0 = time.monotonic()
        groupctl(a, "topic", "grow", topic, "--partitions", str(a.to_partitions))
        run.wait_until(f"{group}: every member at its share of {a.to_partitions}",
                       lambda: balanced(run.holdings(names), a.to_partitions), a.grow_timeout_s)
        events = [e for e in run.snapshot(mark) if e.get("member") in names]
        done = replay(events, set(names), a.to_partitions, t0, [], f"growth round {r}")
        if done is None:
            raise Failure(f"growth round {r}: the replay never saw the balanced state")
        ms = (done - t0) * 1000
        times.append(ms)
        shares = sorted(len(s) for s in run.holdings(names).values())
        log(f"growth round {r}, heartbeat {a.heartbeat_ms} ms, grown {phase * 1000:.0f} ms into the interval "
            f"after the settle: {ms:.0f} ms to every member holding its share "
            f"(shares {shares[0]}..{shares[-1]})")
        errs = run.errors_since(mark)
        if errs:
            log(f"growth round {r}: consumer errors: {errs[:5]}")
        run.close_all()
        replay([e for e in run.snapshot(mark) if e.get("member") in names], set(names), a.to_partitions,
               float("inf"), run.violations, f"growth round {r}, from the forming to the close")
    med = statistics.median(times)
    return [f"| {ROW} | growth: a topic of {a.from_partitions:,} partitions grown to {a.to_partitions:,} "
            f"(`groupctl topic grow`) under {a.members} librdkafka {a.lib} consumers (group.protocol=consumer, "
            f"a process each), heartbeat interval {a.heartbeat_ms} ms: from just before the command to every member "
            f"holding its share, every partition held once (ms, median (min .. max) of {len(times)} rounds, "
            f"a fresh group each, grown at {'a random point' if a.grow_phase == 'random' else 'a fixed point'} of the "
            f"heartbeat interval) | {fmt_ms(med)} ({fmt_ms(min(times))} .. {fmt_ms(max(times))}) | "
            f"{'< 1,000' if a.heartbeat_ms == 1000 else ''} |"]


def phase_join(run: Run, a: argparse.Namespace, tag: str) -> list[str]:
    group = f"kip848-join-hb{a.heartbeat_ms}-{tag}"
    topic = group
    groupctl(a, "topic", "create", topic, "--partitions", str(a.from_partitions))
    names = [f"j{i}" for i in range(a.members)]
    form(run, a, group, topic, names, a.from_partitions)
    time.sleep(a.settle_s)
    unowned: list[float] = []
    moved_per_join: list[int] = []
    settle_times: list[float] = []
    for j in range(1, a.joins + 1):
        extra = f"x{j}"
        before = run.holdings(names)
        owner_before = {p: m for m, ps in before.items() for p in ps}
        mark = run.mark()
        t0 = time.monotonic()
        run.start(extra, group, topic)
        everyone = names + [extra]
        run.wait_until(f"join {j}: {len(everyone)} members balanced",
                       lambda: balanced(run.holdings(everyone), a.from_partitions), a.form_timeout_s)
        after = run.holdings(everyone)
        owner_after = {p: m for m, ps in after.items() for p in ps}
        events = run.snapshot(mark)
        done = replay([e for e in run.snapshot() if e.get("member") in everyone], set(everyone),
                      a.from_partitions, t0, [], f"join {j}")
        moved = sorted(p for p in range(a.from_partitions) if owner_before.get(p) != owner_after.get(p))
        moved_per_join.append(len(moved))
        for p in moved:
            old, new = owner_before[p], owner_after[p]
            rev = [e["t"] for e in events if e.get("member") == old and e["event"] in ("revoke", "lost")
                   and p in e["partitions"]]
            asg = [e["t"] for e in events if e.get("member") == new and e["event"] == "assign" and p in e["partitions"]]
            if not rev or not asg:
                raise Failure(f"join {j}: partition {p} moved {old} -> {new} without a revoke and an assign")
            unowned.append((min(asg) - max(rev)) * 1000)
        if done is not None:
            settle_times.append((done - t0) * 1000)
        log(f"join {j}: {len(moved)} partitions moved to {extra}, unowned "
            f"{', '.join(f'{u:.0f}' for u in unowned[-len(moved):])} ms; "
            f"start to balanced {settle_times[-1] if settle_times else float('nan'):.0f} ms")
        # The extra member leaves (a graceful close) and the group settles on the ten.
        run.close(extra)
        run.wait_until(f"join {j}: the group settled after the leave",
                       lambda: balanced(run.holdings(names), a.from_partitions), a.form_timeout_s)
        time.sleep(a.settle_s)
    run.close_all()
    # Every line of the phase, in time order: the forming, the joins, the leaves and the closes.
    joined = set(names) | {f"x{j}" for j in range(1, a.joins + 1)}
    replay([e for e in run.snapshot() if e.get("member") in joined], joined, a.from_partitions, float("inf"),
           run.violations, "join phase")
    unowned.sort()
    p50 = statistics.median(unowned)
    return [
        f"| {ROW} | one member joins {a.members} stable librdkafka {a.lib} consumers (group.protocol=consumer) on "
        f"{a.from_partitions} partitions, heartbeat interval {a.heartbeat_ms} ms, {len(moved_per_join)} joins (the "
        f"joiner closes after each): each moved partition unowned, from its old owner's revoke callback to its new "
        f"owner's assign callback, p50 / max (ms, {len(unowned)} moves) | {fmt_ms(p50)} / {fmt_ms(unowned[-1])} |  |",
        f"| {ROW} | the same joins: partitions moved per join, median (min .. max); process start of the joiner to "
        f"every member at its share, median (min .. max) (ms) | {statistics.median(moved_per_join):.0f} "
        f"({min(moved_per_join)} .. {max(moved_per_join)}); {fmt_ms(statistics.median(settle_times))} "
        f"({fmt_ms(min(settle_times))} .. {fmt_ms(max(settle_times))}) |  |",
    ]


def driver_main(a: argparse.Namespace) -> int:
    import confluent_kafka  # the library the members load: its version for the table
    a.lib = confluent_kafka.libversion()[0]
    tag = a.tag or time.strftime("%H%M%S")
    run = Run(a)
    rows: list[str] = []
    rc = 0
    try:
        for ph in a.phases.split(","):
            if ph == "growth":
                rows += phase_growth(run, a, tag)
            elif ph == "join":
                rows += phase_join(run, a, tag)
            else:
                raise Failure(f"unknown phase {ph}")
    except Failure as e:
        log(f"FAILED: {e}")
        for n, ps in sorted(run.holdings(list(run.procs)).items()):
            log(f"  {n} holds {len(ps)}: {sorted(ps)[:20]}{' ...' if len(ps) > 20 else ''}")
        rows.append(f"| {ROW} | heartbeat interval {a.heartbeat_ms} ms: FAILED | {e} |  |")
        rc = 1
    finally:
        run.close_all() if rc == 0 else run.kill_all()
    rows.append(f"| {ROW} | heartbeat interval {a.heartbeat_ms} ms: a partition held by two consumers at once "
                f"(by the callbacks' times) | {len(run.violations)} | 0 |")
    for v in run.violations[:20]:
        log(f"VIOLATION {v}")
    if run.violations:
        rc = 1
    for r in rows:
        print(r, flush=True)
    return rc


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--member", action="store_true", help="run one consumer (the driver starts these)")
    p.add_argument("--name", default="m")
    p.add_argument("--group", default="g")
    p.add_argument("--topic", default="t")
    p.add_argument("--max-seconds", type=float, default=900)
    p.add_argument("--bootstrap", default="127.0.0.1:9092")
    p.add_argument("--zookeeper", default="127.0.0.1:2181")
    p.add_argument("--topics-path", default="/brokers/topics")
    p.add_argument("--groupctl", default="build/client/groupctl")
    p.add_argument("--heartbeat-ms", type=int, default=1000,
                   help="the server's kafka.group.consumer.heartbeat.interval.ms (for the table only)")
    p.add_argument("--phases", default="growth,join")
    p.add_argument("--members", type=int, default=10)
    p.add_argument("--from", dest="from_partitions", type=int, default=100)
    p.add_argument("--to", dest="to_partitions", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--joins", type=int, default=20)
    p.add_argument("--grow-phase", choices=("random", "fixed"), default="random",
                   help="grow at a random point of the heartbeat interval after the settle, or right after it")
    p.add_argument("--seed", type=int, default=848)
    p.add_argument("--settle-s", type=float, default=1.0, help="quiet time once stable, before each step")
    p.add_argument("--form-timeout-s", type=float, default=90)
    p.add_argument("--grow-timeout-s", type=float, default=60)
    p.add_argument("--deadline-s", type=float, default=600, help="the whole run")
    p.add_argument("--tag", default="", help="in the group and topic names (default: the time)")
    p.add_argument("--events-log", default="", help="append every member line here")
    p.add_argument("--member-stderr", default="", help="the members' standard error (default: inherited)")
    a = p.parse_args()
    if a.member:
        return member_main(a)
    a.member_stderr = open(a.member_stderr, "a") if a.member_stderr else None
    return driver_main(a)


if __name__ == "__main__":
    sys.exit(main())
