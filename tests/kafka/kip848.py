#!/usr/bin/env python3
"""groupcoord's Kafka port serving KIP-848's consumer group protocol
(ConsumerGroupHeartbeat, API 68; ConsumerGroupDescribe, API 69) to a real
client: librdkafka 2.15.1 with group.protocol=consumer, under Debian's
python3-confluent-kafka (member_kip848.py).

librdkafka 2.15.1 is built once per machine by scripts/librdkafka.sh (CI does
it before the tests); each member runs with LD_LIBRARY_PATH naming its
directory, taken from GROUPCOORD_LIBRDKAFKA_LIB_DIR or else from
`scripts/librdkafka.sh path` at the start. A library that is missing or is
not 2.15.1 fails every test here (`scripts/librdkafka.sh check`); nothing is
skipped.

As driver.py's tests do, each test starts two groupcoordd servers against
the test ensemble under a ZooKeeper root of its own and writes a topic, here
of 12 partitions; the servers give consumer-protocol members the session
timeout and heartbeat interval configured here
(kafka.group.consumer.session.timeout.ms, kafka.group.consumer.heartbeat.interval.ms).
A member prints a JSON line for each assignment, revocation and loss with the
time it happened on the machine's monotonic clock, the driver's clock too.

Every test ends by judging the ownership rule on those events: a member holds
a partition from the "assigned" event that gives it until the "revoked" or
"lost" event that takes it (or until it was killed or its close returned),
and no two members' holdings of a partition may overlap.

Time (tests/README.md, "Time in tests"): every wait polls up to a bound
computed from the timeouts configured here plus the scheduling allowance.
Every process started here is stopped by its PID.

Run alone: python3 tests/kafka/kip848.py [-k PATTERN] (tests/README.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import unittest
from functools import lru_cache

from driver import (CLAIM_FALLBACK, COMMAND_TIMEOUT, GROUPCTL, INITIAL_REBALANCE_DELAY, JOIN_WINDOW_MAX, PYTHON,
                    SOURCE_DIR, ZK_SESSION_TIMEOUT, KafkaPortTest, Member, Rdkafka, design_bound,
                    eventually_within, failover_bound, figure, missing_servers, run, unique, zk_connect)

LIBRDKAFKA_VERSION = "2.15.1"
PARTITIONS = 12
ALL = set(range(PARTITIONS))

# The servers' consumer-protocol timeouts (kafka.group.consumer.*), which every member gets from them.
SESSION_TIMEOUT = 6.0
HEARTBEAT_INTERVAL = 1.0
# The session timeout of the tests where a server dies under the members, or a static member
# restarts: longer than the failover's design bound plus a heartbeat interval, so that no member's
# session ends before it has heartbeated the surviving server, and a restart fits within it.
LONG_SESSION_TIMEOUT = design_bound(failover_bound() + HEARTBEAT_INTERVAL)
# The longest a member's commit or committed() may take: a failover's design bound, a heartbeat
# interval, and the allowance (member_kip848.py --request-timeout-s).
REQUEST_TIMEOUT = design_bound(failover_bound() + HEARTBEAT_INTERVAL)
# librdkafka.sh builds the library when this machine's cache lacks it (about a minute, and
# apt-get for what it needs): a hang guard, no bound the design gives.
LIBRARY_BUILD_TIMEOUT = 900.0


def settle_bound(changes: int = 1) -> float:
    """A group reaches its target assignment after ``changes`` changes of its members (members
    started together join one after another, each a change) within: the claim fallback (a new
    group without a controller), the join window's cap and the initial rebalance delay (if the
    server holds the consumer protocol's first assignments back as it does the classic one's),
    then three heartbeat intervals a change: the owner of a partition that moves hears at its next
    heartbeat that it must give it up, says it has at the next, and the new owner is given it at
    its own next."""
    return CLAIM_FALLBACK + JOIN_WINDOW_MAX + INITIAL_REBALANCE_DELAY + 3 * HEARTBEAT_INTERVAL * changes


@lru_cache(maxsize=1)
def library() -> tuple[str, str]:
    """(librdkafka 2.15.1's directory, "") or ("", why it is missing)."""
    given = os.environ.get("GROUPCOORD_LIBRDKAFKA_LIB_DIR", "")
    script = str(SOURCE_DIR / "scripts/librdkafka.sh")
    try:
        if not given:
            r = subprocess.run(["bash", script, "path"], capture_output=True, text=True,
                               timeout=LIBRARY_BUILD_TIMEOUT)
            if r.returncode != 0 or not r.stdout.strip():
                return "", f"scripts/librdkafka.sh path exited {r.returncode}: {r.stderr[-2000:]}"
            given = r.stdout.strip().splitlines()[-1]
        # Debian's python3-confluent-kafka on it: libversion() and group.protocol=consumer, as
        # scripts/librdkafka.sh check does, but with the directory this run uses.
        probe = ("import sys, confluent_kafka as c\n"
                 "v = c.libversion()[0]\n"
                 f"sys.exit(0 if v == {LIBRDKAFKA_VERSION!r} else 'libversion() is ' + v)\n")
        r = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True,
                           env={**os.environ, "LD_LIBRARY_PATH": given}, timeout=design_bound(COMMAND_TIMEOUT))
        if r.returncode != 0:
            return "", (f"librdkafka {LIBRDKAFKA_VERSION} does not load from {given} under {PYTHON}'s "
                        f"confluent_kafka: {r.stderr.strip()[-1500:]} (scripts/librdkafka.sh build, check)")
        return given, ""
    except subprocess.TimeoutExpired as e:
        return "", f"{e.cmd} did not finish within {e.timeout:.0f} s"


def held_by(m: Member) -> set[int]:
    return m.holdings() or set()


def split_of(members: list[Member], sizes: list[int] | None = None) -> list[set[int]] | None:
    """The members' holdings when they split all partitions: none held twice, all held, and (with
    ``sizes``) as many as those for each member, in order."""
    held = [held_by(m) for m in members]
    if sum(len(h) for h in held) != PARTITIONS or set().union(*held) != ALL:
        return None
    if sizes is not None and [len(h) for h in held] != sizes:
        return None
    return held


def member_id(m: Member) -> tuple[int, str] | None:
    """(epoch, member id) from its latest "generation" event: librdkafka's consumer group metadata,
    whose generation is the member epoch with this protocol."""
    last = None
    for e in m.snapshot():
        if e["event"] == "generation":
            last = (e["generation"], e["member_id"])
    return last


def changes(m: Member, since: int) -> list[dict]:
    """Its assignments, revocations and losses since event ``since`` that added or took something
    (librdkafka calls the callbacks with empty lists too, e.g. on an answer that changed nothing)."""
    return [e for e in m.snapshot()[since:]
            if (e["event"] == "assigned" and e["added"]) or (e["event"] in ("revoked", "lost") and e["partitions"])]


def taken_from(m: Member, since: int, kinds: tuple[str, ...] = ("revoked", "lost")) -> set[int]:
    out: set[int] = set()
    for e in m.snapshot()[since:]:
        if e["event"] in kinds:
            out |= set(e["partitions"])
    return out


def ownership_violations(members: list[Member], ends: dict[str, float]) -> list[str]:
    """Every overlap of two members' holdings of one partition. A member holds a partition from the
    "t" of the "assigned" event that adds it to the "t" of the "revoked" or "lost" event that takes
    it; one still held at the end is held until ``ends[name]`` (it was killed, or its close had
    returned) or for ever (it still runs). A member's own inconsistencies (a partition added twice,
    one taken that it did not hold) are reported too."""
    intervals: dict[int, list[tuple[float, float, str]]] = {}
    problems: list[str] = []
    for m in members:
        start: dict[int, float] = {}
        for e in m.snapshot():
            if e["event"] == "assigned":
                for p in e["added"]:
                    if p in start:
                        problems.append(f"{m.name} was given partition {p} again at {e['t']:.3f} while holding it")
                        continue
                    start[p] = e["t"]
            elif e["event"] in ("revoked", "lost"):
                for p in e["partitions"]:
                    if p not in start:
                        problems.append(f"{m.name} had partition {p} {e['event']} at {e['t']:.3f} without holding it")
                        continue
                    intervals.setdefault(p, []).append((start.pop(p), e["t"], m.name))
        end = ends.get(m.name, float("inf"))
        for p, t in start.items():
            intervals.setdefault(p, []).append((t, end, m.name))
    for p, spans in sorted(intervals.items()):
        spans.sort()
        s1, e1, n1 = spans[0]  # of the spans so far, the one that ends last
        for s2, e2, n2 in spans[1:]:
            if s2 < e1:
                problems.append(f"partition {p} held by {n1} over [{s1:.3f}, {e1:.3f}] and by {n2} from {s2:.3f}: "
                                f"{min(e1, e2) - s2:.3f} s at once")
            if e2 > e1:
                s1, e1, n1 = s2, e2, n2
    return problems


class Fatal:
    """What ConsumerProtocolBase.wait_for's state becomes once a member reported a fatal error."""

    def __init__(self, errors: list) -> None:
        self.errors = errors


class ConsumerProtocolBase(KafkaPortTest):
    """Two servers serving the consumer protocol with the session timeout SESSION and the heartbeat
    interval HEARTBEAT_INTERVAL; a topic of 12 partitions; members of member_kip848.py."""

    PARTITIONS = PARTITIONS
    SESSION = SESSION_TIMEOUT

    def missing_prerequisites(self) -> list[str]:
        out = missing_servers()
        _, why = library()
        if why:
            out.append(why)
        return out

    def member_env(self) -> dict[str, str]:
        return {"LD_LIBRARY_PATH": library()[0]}

    def server_args(self) -> list[str]:
        return [f"--kafka-group-consumer-session-timeout-ms={round(self.SESSION * 1000)}",
                f"--kafka-group-consumer-heartbeat-interval-ms={round(HEARTBEAT_INTERVAL * 1000)}"]

    def setUp(self) -> None:
        super().setUp()
        # When each member stopped holding what it still held (killed, or its close returned).
        self.ends: dict[str, float] = {}

    def kip(self, name: str, group: str, *extra: str) -> Member:
        return self.member("kip848", name, group, ["--request-timeout-s", f"{REQUEST_TIMEOUT:.1f}", *extra])

    def wait_for(self, what: str, state, bound: float):
        """As KafkaPortTest.wait_for, but fails at once when a member reports a fatal error (its
        consumer is unusable from then on, so nothing it waits for will come)."""
        def watched():
            fatal = [(m, e) for m in self.members for e in m.snapshot() if e["event"] == "error" and e.get("fatal")]
            return Fatal(fatal) if fatal else state()
        got = super().wait_for(what, watched, bound)
        if isinstance(got, Fatal):
            self.fail(f"while waiting for {what}: " + "; ".join(f"{m.name} reported a fatal error: {e['error']}"
                                                               for m, e in got.errors) + "\n" +
                      "\n".join(m.describe() for m in self.members))
        return got

    def kill_member(self, m: Member) -> None:
        m.kill9()
        self.ends[m.name] = time.monotonic()

    def close_member(self, m: Member) -> None:
        """Closes it (librdkafka revokes everything, then leaves) and waits for its exit: the time
        it takes the client to leave, a heartbeat interval, plus the allowance."""
        self.assert_clean_exit(m, design_bound(2 * HEARTBEAT_INTERVAL))
        self.ends[m.name] = time.monotonic()

    def wait_split(self, members: list[Member], bound: float, what: str,  # type: ignore[override]
                   sizes: list[int] | None = None) -> list[set[int]]:
        return self.wait_for(f"{what}: {[m.name for m in members]} to split all {PARTITIONS} partitions"
                             f"{'' if sizes is None else f' as {sizes}'}",
                             lambda: split_of(members, sizes), bound)

    def assert_ownership(self) -> None:
        problems = ownership_violations(self.members, self.ends)
        self.assertEqual(problems, [], "the ownership rule broken:\n" + "\n".join(m.describe() for m in self.members))

    def assert_no_errors(self, ms: list[Member]) -> None:
        """No member reported a fatal client error (librdkafka's error_cb)."""
        for m in ms:
            fatal = [e for e in m.snapshot() if e["event"] == "error" and e.get("fatal")]
            self.assertEqual(fatal, [], m.describe())

    def memberships(self, ms: list[Member]) -> list[tuple[int, str]]:
        """Each member's (epoch, member id) as it reported them last: the ids are the clients' own,
        distinct and non-empty."""
        got = [member_id(m) for m in ms]
        self.assertTrue(all(g is not None and g[1] for g in got), "\n".join(m.describe() for m in ms))
        self.assertEqual(len({i for _, i in got}), len(ms), got)
        return got

    def read_committed(self, m: Member, bound: float) -> dict | None:
        """Asks the member for committed() of every partition until it answers with offsets or
        design_bound(bound) passes; the last answer, or None."""
        until = time.monotonic() + design_bound(bound)
        while time.monotonic() < until:
            mark = len(m.snapshot())
            m.send({"cmd": "read_committed"})
            got = self.wait_for(f"{m.name} to answer read_committed",
                                lambda: m.has("committed_offsets", mark) or
                                next((e for e in m.snapshot()[mark:] if e["event"] == "error" and
                                      e.get("op") == "committed"), None), REQUEST_TIMEOUT)
            if got["event"] == "committed_offsets":
                return got["offsets"]
            time.sleep(HEARTBEAT_INTERVAL)  # pacing the retries of a refused read
        return None

    def commit(self, m: Member, offsets: dict, bound: float) -> None:
        mark = len(m.snapshot())
        m.send({"cmd": "commit", "offsets": offsets})
        got = self.wait_for(f"{m.name}'s commit of {offsets} to be answered",
                            lambda: m.has("committed", mark) or
                            next((e for e in m.snapshot()[mark:] if e["event"] == "error" and e.get("op") == "commit"),
                                 None), bound + REQUEST_TIMEOUT)
        self.assertEqual(got["event"], "committed", m.describe())


class ConsumerProtocolTest(ConsumerProtocolBase):
    """Scenarios on the server's short session timeout (SESSION_TIMEOUT)."""

    def test_three_members_split(self) -> None:
        """Three members form a group: every partition held by exactly one of them, 4 each."""
        group = unique("K")
        ms = [self.kip(f"kip848-{n}", group) for n in range(3)]
        started = time.monotonic()
        held = self.wait_split(ms, settle_bound(3), "three members forming a group", sizes=[4, 4, 4])
        figure(f"kafka kip848 three members formed in {time.monotonic() - started:.1f} s: "
               f"{[sorted(h) for h in held]}")
        self.memberships(ms)
        self.assert_no_errors(ms)
        self.assert_ownership()

    def test_fourth_member_moves_only_what_must(self) -> None:
        """A fourth member joins a group of three (4/4/4, the uniform assignor): three partitions
        move, one from each old member, revoked before the new member gets them; the others are
        never revoked."""
        group = unique("K")
        uniform = ("--remote-assignor", "uniform")
        first = [self.kip(f"kip848-{n}", group, *uniform) for n in range(3)]
        before = self.wait_split(first, settle_bound(3), "three members forming a group", sizes=[4, 4, 4])
        marks = [len(m.snapshot()) for m in first]
        joined = time.monotonic()
        fourth = self.kip("kip848-3", group, *uniform)
        after = self.wait_split(first + [fourth], settle_bound(), "the fourth member joining", sizes=[3, 3, 3, 3])
        figure(f"kafka kip848 fourth member settled in {time.monotonic() - joined:.1f} s: "
               f"{[sorted(h) for h in after]}")
        for m, b, a, mark in zip(first, before, after, marks):
            self.assertTrue(a <= b, f"{m.name} gained partitions: {sorted(b)} -> {sorted(a)}; {m.describe()}")
            self.assertEqual(taken_from(m, mark, ("lost",)), set(), m.describe())
            revoked = taken_from(m, mark)
            self.assertEqual(revoked, b - a, f"{m.name} revoked more than moved: {m.describe()}")
            self.assertEqual(len(revoked), 1, m.describe())
            self.assertEqual([e for e in changes(m, mark) if e["event"] == "assigned"], [],
                             f"{m.name} was given something: {m.describe()}")
        self.assertEqual(taken_from(fourth, 0), set(), fourth.describe())
        self.assertEqual(after[3], set().union(*(b - a for b, a in zip(before, after))))
        self.memberships(first + [fourth])
        self.assert_no_errors(first + [fourth])
        self.assert_ownership()

    def test_sigkill_member(self) -> None:
        """A member killed (SIGKILL) is dropped after the server's session timeout; its partitions
        go to the others, who give up nothing."""
        group = unique("K")
        ms = [self.kip(f"kip848-{n}", group) for n in range(3)]
        held = self.wait_split(ms, settle_bound(3), "three members forming a group", sizes=[4, 4, 4])
        marks = [len(m.snapshot()) for m in ms]
        self.kill_member(ms[0])
        killed = self.ends[ms[0].name]
        # Its last heartbeat came at most a heartbeat interval before the kill; the survivors are
        # given its partitions at their next heartbeat after it is dropped.
        after = self.wait_split(ms[1:], SESSION_TIMEOUT + HEARTBEAT_INTERVAL,
                                "two members after the third was killed", sizes=[6, 6])
        took = time.monotonic() - killed
        figure(f"kafka kip848 the killed member's partitions moved in {took:.1f} s "
               f"(session timeout {SESSION_TIMEOUT:.0f} s)")
        # A lower bound the protocol promises: no allowance.
        self.assertGreaterEqual(took, SESSION_TIMEOUT - HEARTBEAT_INTERVAL,
                                "the killed member's partitions moved before its session timeout")
        for m, h, a, mark in zip(ms[1:], held[1:], after, marks[1:]):
            self.assertEqual(taken_from(m, mark), set(), m.describe())
            self.assertTrue(h <= a, m.describe())
        self.assertEqual(after[0] | after[1], ALL)
        self.assert_no_errors(ms[1:])
        self.assert_ownership()

    def test_group_own_session_timeout(self) -> None:
        """`groupctl config` gives the group a session timeout of its own, longer than the
        server's: a killed member's partitions stay its own past the server's session timeout and
        move after the group's."""
        group = unique("K")
        own = 3 * SESSION_TIMEOUT
        set_ = run([GROUPCTL, "--output", "json", "config", group, "--zookeeper", zk_connect(), "--zk-root",
                    self.root, "--session-timeout", f"{round(own * 1000)}ms"])
        self.assertEqual(json.loads(set_.stdout)["consumer.session.timeout.ms"], round(own * 1000), set_.stdout)
        ms = [self.kip(f"kip848-own-{n}", group) for n in range(2)]
        held = self.wait_split(ms, settle_bound(2), "two members forming a group", sizes=[6, 6])
        self.assertEqual(self.groupctl_describe(group)["session_timeout_ms"], round(own * 1000))
        mark = len(ms[1].snapshot())
        self.kill_member(ms[0])
        killed = self.ends[ms[0].name]
        after = self.wait_split(ms[1:], own + HEARTBEAT_INTERVAL, "the survivor after the other was killed",
                                sizes=[12])
        took = time.monotonic() - killed
        figure(f"kafka kip848 with the group's own session timeout {own:.0f} s (the server's "
               f"{SESSION_TIMEOUT:.0f} s), the killed member's partitions moved in {took:.1f} s")
        # A lower bound the protocol promises: no allowance.
        self.assertGreaterEqual(took, own - HEARTBEAT_INTERVAL,
                                "the killed member's partitions moved before the group's own session timeout")
        self.assertEqual(taken_from(ms[1], mark), set(), ms[1].describe())
        self.assertTrue(held[1] <= after[0], ms[1].describe())
        self.assert_no_errors(ms[1:])
        self.assert_ownership()

    def test_describe_group(self) -> None:
        """librdkafka 2.15.1's DescribeConsumerGroups (ConsumerGroupDescribe, API 69, for a group of
        the consumer protocol) names every member by its own member id and client id, with what it
        holds."""
        group = unique("K")
        ms = [self.kip(f"kip848-describe-{n}", group) for n in range(3)]
        held = self.wait_split(ms, settle_bound(3), "three members forming a group", sizes=[4, 4, 4])
        ids = self.memberships(ms)
        rd = Rdkafka(self.bootstrap(), os.path.join(library()[0], "librdkafka.so.1"))
        try:
            timeout = design_bound(ZK_SESSION_TIMEOUT)
            last = [""]

            def described() -> dict | None:
                try:
                    d = rd.describe_group(group, timeout)
                except AssertionError as e:  # an error answered: looked at again, and quoted if it stays
                    last[0] = str(e)
                    return None
                last[0] = repr(d)
                got = {m["consumer_id"]: sorted(p for t, p in m["partitions"] if t == self.topic) for m in d["members"]}
                want = {i: sorted(h) for (_, i), h in zip(ids, held)}
                return d if got == want and d["state"] == "Stable" else None
            # The description matches once every member has heartbeated what it holds.
            d = eventually_within(design_bound(2 * HEARTBEAT_INTERVAL), described)
            if not d:
                self.fail(f"DescribeConsumerGroups never showed the members {ids} with what they hold "
                          f"{[sorted(h) for h in held]}; its last answer: {last[0]}")
        finally:
            rd.close()
        self.assertEqual(d["error"], (0, ""), d)
        self.assertEqual(sorted(m["client_id"] for m in d["members"]), sorted(m.name for m in ms), d)
        controller = self.controller_of(group)
        self.assertEqual(d["coordinator"], (controller.id, "127.0.0.1", controller.kafka_port), d)


class ConsumerProtocolLongSessionTest(ConsumerProtocolBase):
    """Scenarios where a server dies under the members or a static member restarts: the servers'
    session timeout is LONG_SESSION_TIMEOUT."""

    SESSION = LONG_SESSION_TIMEOUT

    def test_offsets_survive_controller_kill(self) -> None:
        """Three members commit what they hold; the group's controller is killed (SIGKILL). The
        members carry on with the other server, holding what they held, read back the offsets
        committed, and commit again."""
        group = unique("K")
        ms = [self.kip(f"kip848-{n}", group) for n in range(3)]
        held = self.wait_split(ms, settle_bound(3), "three members forming a group", sizes=[4, 4, 4])
        offsets: dict[str, int] = {}
        for m, h in zip(ms, held):
            mine = {str(p): 100 + 7 * p for p in sorted(h)}
            self.commit(m, mine, ZK_SESSION_TIMEOUT)
            offsets.update(mine)
        for m in ms:
            self.assertEqual(self.read_committed(m, ZK_SESSION_TIMEOUT), offsets, m.describe())
        marks = [len(m.snapshot()) for m in ms]
        controller = self.controller_of(group)
        survivor = [s for s in self.servers if s is not controller][0]
        controller.kill9()
        killed = time.monotonic()
        # A member's next request after the failover finds the survivor within a heartbeat interval.
        for m in ms:
            got = self.read_committed(m, failover_bound() + HEARTBEAT_INTERVAL)
            self.assertEqual(got, offsets, f"offsets {m.name} read back after killing server {controller.id}, "
                                           f"the group's controller: {m.describe()}")
        self.assertIs(self.controller_of(group), survivor)
        figure(f"kafka kip848 committed offsets read back {time.monotonic() - killed:.1f} s after the "
               f"controller's SIGKILL")
        again = {}
        for m, h in zip(ms, held):
            mine = {str(p): 200 + 7 * p for p in sorted(h)}
            self.commit(m, mine, failover_bound() + HEARTBEAT_INTERVAL)
            again.update(mine)
        for m in ms:
            self.assertEqual(self.read_committed(m, HEARTBEAT_INTERVAL), again, m.describe())
        # Time passes to show that nothing happens: a member dropped by the survivor would lose its
        # partitions at its next heartbeat, and another be given them at its own.
        time.sleep(3 * HEARTBEAT_INTERVAL)
        for m, h, mark in zip(ms, held, marks):
            self.assertEqual(changes(m, mark), [], f"{m.name}'s assignment changed after the controller's "
                                                   f"SIGKILL: {m.describe()}")
            self.assertEqual(held_by(m), h, m.describe())
            self.assertIsNone(m.proc.poll(), m.describe())
        self.assert_no_errors(ms)
        self.assert_ownership()

    def test_static_member_restart(self) -> None:
        """A static member (group.instance.id) closes (a static leave keeps its assignment) and
        comes back within the session timeout: it gets the same partitions back, and the others see
        no revocation or assignment."""
        group = unique("K")
        ms = [self.kip(f"kip848-static-{n}", group, "--instance-id", f"static-{n}") for n in range(3)]
        held = self.wait_split(ms, settle_bound(3), "three static members forming a group", sizes=[4, 4, 4])
        marks = [len(m.snapshot()) for m in ms[:2]]
        before_close = len(ms[2].snapshot())
        self.close_member(ms[2])
        closed = self.ends[ms[2].name]
        # Closing, it gives up what it held (and only that: formation's moves came before).
        self.assertEqual(taken_from(ms[2], before_close, ("revoked",)), held[2], ms[2].describe())
        again = self.kip("kip848-static-2-again", group, "--instance-id", "static-2")
        self.wait_for("the restarted static member's assignment", lambda: held_by(again) == held[2] or None,
                      settle_bound())
        back = time.monotonic() - closed
        self.assertLess(back, self.SESSION, "the restart took longer than the session timeout: the scenario "
                        "needs a restart within it")
        figure(f"kafka kip848 static member back with its partitions {back:.1f} s after closing")
        # Time passes to show that nothing happens: a rebalance would reach the others within a
        # heartbeat interval and revoke before assigning.
        time.sleep(3 * HEARTBEAT_INTERVAL)
        for m, h, mark in zip(ms[:2], held[:2], marks):
            self.assertEqual(changes(m, mark), [], f"{m.name} saw its assignment change: {m.describe()}")
            self.assertEqual(held_by(m), h, m.describe())
        self.assertEqual([e["added"] for e in changes(again, 0)], [sorted(held[2])], again.describe())
        self.assertEqual(split_of(ms[:2] + [again], [4, 4, 4]), held)
        self.assert_no_errors(ms[:2] + [again])
        self.assert_ownership()

    def test_ownership_through_joins_leaves_and_controller_kill(self) -> None:
        """Members join and leave, and the group's controller is killed (SIGKILL) on the way; after
        each change the members split every partition, and at no moment do two members hold the
        same partition."""
        group = unique("K")
        ms = [self.kip(f"kip848-{n}", group) for n in range(2)]
        self.wait_split(ms, settle_bound(2), "two members forming a group", sizes=[6, 6])
        ms.append(self.kip("kip848-2", group))
        self.wait_split(ms, settle_bound(), "a third member joining", sizes=[4, 4, 4])
        ms.append(self.kip("kip848-3", group))
        self.wait_split(ms, settle_bound(), "a fourth member joining", sizes=[3, 3, 3, 3])
        self.close_member(ms[0])
        live = ms[1:]
        self.wait_split(live, settle_bound(), "three members after one left", sizes=[4, 4, 4])
        controller = self.controller_of(group)
        controller.kill9()
        killed = time.monotonic()
        live.append(self.kip("kip848-4", group))
        self.wait_split(live, failover_bound() + settle_bound(), "a member joining as the controller died",
                        sizes=[3, 3, 3, 3])
        figure(f"kafka kip848 four members split again {time.monotonic() - killed:.1f} s after the "
               f"controller's SIGKILL")
        self.close_member(live[0])
        live = live[1:]
        self.wait_split(live, settle_bound(), "three members after another left", sizes=[4, 4, 4])
        self.assert_no_errors(self.members)
        self.assert_ownership()
        figure(f"kafka kip848 ownership held over "
               f"{sum(len(changes(m, 0)) for m in self.members)} assignments, revocations and losses")


if __name__ == "__main__":
    unittest.main(verbosity=2)
