"""Python, asyncio and C++ consumers in one group across two groupcoordd
servers: they split the partitions and never share one, through a SIGKILL
of the group's controller. Grants and releases are recorded with their
CLOCK_MONOTONIC times, as the C++ failover tests record them."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import threading
import time

from groupcoord import Admin, AsyncConsumer, Consumer, ConsumerConfig
from tests.support import (CLAIM_FALLBACK, CLIENT_RETRY, HANDOVER_SETTLE, PROBE, REQUEST_TIMEOUT, ZK_SESSION_TIMEOUT,
                           LiveTestCase, OwnershipRecord, create_topic, design_bound, figure, retry_budget,
                           settle_bound)
from tests.test_consumer_live import PollingThread, recording

PARTITIONS = 6
ALL = {("alpha", n) for n in range(PARTITIONS)}

# The group's session timeout, shorter than the servers' ZooKeeper session (ZK_SESSION_TIMEOUT):
# every member fences itself before the survivor can take the group over. The members poll on
# threads of their own all along; one that a busy machine fences anyway only loses its partitions
# and is granted them again, which the record's checks allow.
SESSION_TIMEOUT = 2.0
HEARTBEAT_INTERVAL = SESSION_TIMEOUT / 3  # the members' default
# Rules with bounds the design gives, each polled up to its bound plus the allowance:
# - the three members settle; the group may be handed over once meanwhile, when the first server
#   has been live for the settle delay and the second not yet;
SETTLE_FIRST = design_bound(HANDOVER_SETTLE + settle_bound(HEARTBEAT_INTERVAL))
# - after the SIGKILL, the controller's ZooKeeper session expires, and the survivor claims the
#   group (at once as its target, at the latest after the claim fallback);
TAKEOVER = design_bound(ZK_SESSION_TIMEOUT + CLAIM_FALLBACK)
# - then the members, fenced by then, reconnect, join it there and settle; the new controller
#   grants what nobody reports holding once the members' session has passed.
SETTLE_AGAIN = design_bound(SESSION_TIMEOUT + settle_bound(HEARTBEAT_INTERVAL))
# How long the C++ member runs unless stopped: it must outlive the test, which stops it; twice
# every wait after its start.
PROBE_SECONDS = math.ceil(2 * (SETTLE_FIRST + TAKEOVER + SETTLE_AGAIN))
# Stopping a member: its last poll ends within one request timeout, then it leaves, retrying
# its LeaveGroup for CLIENT_RETRY.
STOP_WAIT = design_bound(REQUEST_TIMEOUT + CLIENT_RETRY)


class CppProbe:
    """The C++ client in a process of its own, its grants and releases read
    from its standard output into the record."""

    def __init__(self, bootstrap: str, group: str, record: OwnershipRecord) -> None:
        if not os.access(PROBE, os.X_OK):
            raise AssertionError(f"{PROBE} is not built (target groupcoord_consumer_probe)")
        self.record = record
        self.proc = subprocess.Popen([PROBE, "--bootstrap", bootstrap, "--group", group, "--client-id", "cpp",
                                      "--seconds", str(PROBE_SECONDS)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            f = line.split()
            if len(f) >= 4 and f[1] in ("grant", "release"):
                self.record.add("cpp", (f[2], int(f[3])), f[1] == "grant", int(f[0]))

    def stop(self) -> None:
        """SIGTERM (it closes and leaves), SIGKILL after STOP_WAIT."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_WAIT)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        # Its last lines: the pipe is read to its end (a hang guard, with the allowance).
        self.reader.join(timeout=design_bound(5.0))


class AsyncInThread:
    """An AsyncConsumer polled by an event loop on its own thread."""

    def __init__(self, consumer: AsyncConsumer) -> None:
        self.consumer = consumer
        self.stop = threading.Event()
        self.errors: list[Exception] = []
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.thread.start()

    async def _run(self) -> None:
        try:
            while not self.stop.is_set():
                await self.consumer.poll(0.05)
        except Exception as e:  # recorded, the test fails on it
            self.errors.append(e)
        await self.consumer.close()

    def join(self) -> None:
        self.stop.set()
        self.thread.join(timeout=STOP_WAIT)


class MixedFailoverTest(LiveTestCase):
    def test_python_asyncio_and_cpp_members_never_share_a_partition_through_a_controller_sigkill(self) -> None:
        create_topic(self.topics_path, "alpha", PARTITIONS)
        servers = [self.start_server(server_id=1), self.start_server(server_id=2)]
        bootstrap = [s.endpoint for s in servers]
        admin = Admin(bootstrap, retry_budget=retry_budget())
        self.addCleanup(admin.close)
        admin.create_group("mixed", SESSION_TIMEOUT, ["alpha"])
        record = OwnershipRecord()

        py = Consumer(ConsumerConfig(bootstrap, "mixed", client_id="py"), recording(record, "py"))
        aio = AsyncConsumer(ConsumerConfig(bootstrap, "mixed", client_id="aio"), recording(record, "aio"))
        py_thread, aio_thread = PollingThread(py), AsyncInThread(aio)
        cpp = CppProbe(",".join(f"{h}:{p}" for h, p in bootstrap), "mixed", record)
        self.addCleanup(cpp.stop)

        def settled() -> bool:
            held = record.holders()
            owners = set(held.values())
            return set(held) == ALL and owners == {"py", "aio", "cpp"} and all(
                sum(1 for w in held.values() if w == o) == 2 for o in owners)
        self.wait_for("the three members to hold two partitions each", settled, SETTLE_FIRST)
        self.assertEqual(record.overlaps(), [])

        # SIGKILL the group's controller; the survivor takes the group over.
        controller = admin.list_groups(["mixed"])[0].controller
        victim = next(s for s in servers if s.port == controller.port)
        survivor = next(s for s in servers if s is not victim)
        killed_at = time.monotonic()
        victim.kill9()
        self.wait_for("the survivor to control the group",
                      lambda: admin.list_groups(["mixed"])[0].controller.port == survivor.port, TAKEOVER, 0.2)
        taken_over = time.monotonic() - killed_at

        def moved() -> bool:
            return all(c.member.controller == survivor.endpoint and c.member.is_member() for c in (py, aio))
        self.wait_for("the members to settle on the survivor", lambda: moved() and settled(), SETTLE_AGAIN, 0.1)
        # Measures of speed: reported, not asserted (tests/README.md, "Time in tests").
        figure(f"python mixed failover: the survivor controlled the group {taken_over:.1f} s after the SIGKILL, "
               f"settled {time.monotonic() - killed_at:.1f} s after it, {len(record.events)} grants and releases "
               f"recorded")
        self.assertEqual(record.overlaps(), [])
        self.assertEqual(py_thread.errors + aio_thread.errors, [])

        py_thread.join()
        py.close()
        aio_thread.join()
        cpp.stop()
        self.assertIn("closed", cpp.lines[-1], "\n".join(cpp.lines))
        self.assertEqual(record.holders(), {}, "every member released everything when it left")
        self.assertEqual(record.overlaps(), [])
