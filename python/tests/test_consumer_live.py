"""One consumer's full life against groupcoordd and the live ensemble, with
the blocking Consumer and with the AsyncConsumer."""

from __future__ import annotations

import asyncio
import threading
import time

from groupcoord import Admin, AsyncConsumer, Callbacks, Consumer, ConsumerConfig, PartitionOffset
from groupcoord.protocol import TopicPartition
from tests.support import (CLIENT_RETRY, REQUEST_TIMEOUT, LiveTestCase, OwnershipRecord, create_topic, design_bound,
                           retry_budget, settle_bound)

ALL = [TopicPartition("alpha", n) for n in range(4)]

# The group's session timeout. These tests pause between two polls of a member they still count
# on (a commit written to ZooKeeper, an admin call), so its lease has the scheduling allowance on
# top of the 2 s it had, and a busy machine does not fence it; the members heartbeat as often as
# in a 2 s session, so that rebalances take no longer.
SESSION_TIMEOUT = design_bound(2.0)
HEARTBEAT_INTERVAL = 2.0 / 3
# A change of members settles within settle_bound() (a rule with a bound the design gives): each
# wait for it polls up to that plus the allowance.
SETTLE = design_bound(settle_bound(HEARTBEAT_INTERVAL))
POLL_STEP = 0.05  # how long PollingThread's polls last


def recording(record: OwnershipRecord, who: str, log: list | None = None) -> Callbacks:
    """Callbacks that record grants and releases (and the events, in order)."""
    def assigned(ps: list[PartitionOffset]) -> None:
        for po in ps:
            record.add(who, (po.topic, po.partition), True)
        if log is not None:
            log.append(("assigned", ps))

    def released(kind: str):  # type: ignore[no-untyped-def]
        def f(ps: list[TopicPartition]) -> None:
            for tp in ps:
                record.add(who, (tp.topic, tp.partition), False)
            if log is not None:
                log.append((kind, ps))
        return f
    return Callbacks(assigned, released("revoked"), released("lost"))


class PollingThread:
    """Polls a blocking Consumer on a thread of its own until stopped."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.stop = threading.Event()
        self.errors: list[Exception] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.consumer.poll(POLL_STEP)
            except Exception as e:  # recorded, the test fails on it
                self.errors.append(e)
                return

    def join(self) -> None:
        """Stops it: its last poll ends within its step and one exchange's request timeout."""
        self.stop.set()
        self.thread.join(timeout=design_bound(POLL_STEP + REQUEST_TIMEOUT))


class ConsumerLifeTest(LiveTestCase):
    def setUp(self) -> None:
        super().setUp()
        create_topic(self.topics_path, "alpha", 4)
        self.server = self.start_server()
        self.admin = Admin([self.server.endpoint], retry_budget=retry_budget())
        self.admin.create_group("life", SESSION_TIMEOUT, ["alpha"])
        self.config = lambda name: ConsumerConfig([self.server.endpoint], "life", client_id=name,  # noqa: E731
                                                  heartbeat_interval=HEARTBEAT_INTERVAL)

    def tearDown(self) -> None:
        self.admin.close()
        super().tearDown()

    def test_join_commit_share_stall_fence_rejoin_and_leave(self) -> None:
        record = OwnershipRecord()
        log_a: list = []
        a = Consumer(self.config("py-a"), recording(record, "a", log_a))
        self.wait_for("a to hold all 4 partitions", lambda: a.poll(0.1) and a.assignment() == ALL, SETTLE)
        self.assertEqual(log_a[0], ("assigned", [PartitionOffset("alpha", n, -1) for n in range(4)]))
        self.assertTrue(a.member_id.startswith("py-a-"), a.member_id)
        a.commit([PartitionOffset("alpha", 0, 42), PartitionOffset("alpha", 3, 7)])
        offsets = {(o.topic, o.partition): o.offset for o in self.admin.fetch_offsets("life")}
        self.assertEqual(offsets, {("alpha", 0): 42, ("alpha", 3): 7})

        # A second member: a gives up two partitions before b is granted them.
        b = Consumer(self.config("py-b"), recording(record, "b"))
        pb = PollingThread(b)
        self.wait_for("a and b to hold two each", lambda: (a.poll(0.05) or True) and len(a.assignment()) == 2
                      and len(b.assignment()) == 2, SETTLE)
        pb.join()
        self.assertEqual(pb.errors, [])
        self.assertEqual(sorted(a.assignment() + b.assignment()), ALL)
        self.assertEqual([kind for kind, _ in log_a], ["assigned", "revoked"])
        self.assertEqual(record.overlaps(), [])

        # b stops polling for longer than the session timeout (a process
        # frozen): its lease runs out before the controller can give its
        # partitions to a, and its next poll tells it they are lost. The
        # controller evicts it a session timeout after it last heard from it,
        # then the group settles.
        given_b = b.assignment()
        split = len(record.events)
        self.wait_for("a to be given b's partitions", lambda: a.poll(0.1) and a.assignment() == ALL,
                      design_bound(SESSION_TIMEOUT + settle_bound(HEARTBEAT_INTERVAL)))
        b_events: list = []
        b.callbacks = recording(OwnershipRecord(), "b", b_events)
        lease_ns = int(b.member.lease_expiry() * 1e9)
        regrants = [at for at, who, p, grant in record.events[split:] if who == "a" and grant
                    and TopicPartition(*p) in given_b]
        self.assertEqual(len(regrants), 2)
        # A lower bound the protocol gives: strict, no allowance.
        self.assertGreaterEqual(min(regrants), lease_ns, "a was granted b's partitions inside b's lease")
        b.poll(0.0)
        self.assertEqual(b_events[0], ("lost", given_b))
        for tp in given_b:
            record.add("b", (tp.topic, tp.partition), False, lease_ns)
        self.assertEqual(record.overlaps(), [])

        # a leaves: on_revoked for everything, then b can be given it all.
        pb = PollingThread(b)
        a.close()
        self.assertEqual(log_a[-1], ("revoked", ALL))
        self.wait_for("b to hold all 4", lambda: b.assignment() == ALL, SETTLE)
        pb.join()
        self.assertEqual(pb.errors, [])
        committed = [e for e in b_events if e[0] == "assigned"][-1][1]
        self.assertIn(PartitionOffset("alpha", 0, 42), committed)
        b.close()
        self.assertEqual(record.overlaps(), [])
        # b's LeaveGroup is answered at once; had the answer been lost, b is evicted a session timeout later.
        self.wait_for("the group to be empty", lambda: self.admin.list_groups(["life"])[0].members == [],
                      design_bound(SESSION_TIMEOUT))

    def test_the_asyncio_consumer_lives_the_same_life(self) -> None:
        record = OwnershipRecord()

        async def scenario() -> None:
            a = AsyncConsumer(self.config("aio-a"), recording(record, "a"))
            b_log: list = []
            revoked_then_committed: list = []

            async def on_revoked(ps: list[TopicPartition]) -> None:
                # Still its own: the release is not acknowledged yet, so it commits.
                await b.commit([PartitionOffset(tp.topic, tp.partition, 100 + tp.partition) for tp in ps])
                revoked_then_committed.extend(ps)
                for tp in ps:
                    record.add("b", (tp.topic, tp.partition), False)
            b = AsyncConsumer(self.config("aio-b"), recording(record, "b", b_log))
            b.callbacks.on_revoked = on_revoked
            # Each wait polls up to SETTLE, and looks once more after its last poll.
            deadline = time.monotonic() + SETTLE
            while not b.assignment() == ALL:
                self.assertLess(time.monotonic(), deadline, "b never held all 4 partitions")
                await b.poll(0.1)
            deadline = time.monotonic() + SETTLE
            while not (len(a.assignment()) == 2 and len(b.assignment()) == 2):
                self.assertLess(time.monotonic(), deadline, "a and b never split the partitions")
                await asyncio.gather(a.poll(0.1), b.poll(0.1))
            self.assertEqual(len(revoked_then_committed), 2)
            offsets = {(o.topic, o.partition): o.offset for o in await asyncio.to_thread(
                self.admin.fetch_offsets, "life")}
            for tp in revoked_then_committed:
                self.assertEqual(offsets[(tp.topic, tp.partition)], 100 + tp.partition)
            # a was granted them with the offsets b committed while revoking.
            await a.close()
            await b.close()
        # A hang guard, longer than every wait inside: two settles, and the commits and closes,
        # which retry for CLIENT_RETRY each.
        asyncio.run(asyncio.wait_for(scenario(), 2 * SETTLE + design_bound(2 * CLIENT_RETRY)))
        self.assertEqual(record.overlaps(), [])
