"""What the Python client's integration tests share: the live ensemble,
groupcoordd processes, topics, credentials and certificates. Every process
is started here and ended here by its PID; only 127.0.0.1 is used."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any, Callable

SOURCE_DIR = Path(os.environ.get("GROUPCOORD_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("GROUPCOORD_BUILD_DIR", SOURCE_DIR / "build"))
GROUPCOORDD = os.environ.get("GROUPCOORDD", str(BUILD_DIR / "server/groupcoordd"))
GROUPCTL = os.environ.get("GROUPCTL", str(BUILD_DIR / "client/groupctl"))
PROBE = os.environ.get("GROUPCOORD_CONSUMER_PROBE", str(BUILD_DIR / "python/groupcoord_consumer_probe"))


# ---- time (tests/README.md, "Time in tests"; the rules of tests/support/Timing.h) -----------
#
# A test asserts time in two ways only: a rule on an injected clock (test_member.py), or a rule
# with a bound the design gives, waited for by polling up to that bound plus scheduling_allowance()
# (design_bound()). A measure of speed is printed as a figure() line and not asserted.

def scheduling_allowance() -> float:
    """What a deadline derived from the design's bounds adds for scheduling, in seconds: 20 s, or
    GROUPCOORD_TEST_ALLOWANCE_MS (tests/support/Timing.h says why). A busy machine (scripts/dev.sh
    test with GROUPCOORD_TEST_BUSY=2) holds back everything a test waits on, the ensemble's JVMs
    included."""
    text = os.environ.get("GROUPCOORD_TEST_ALLOWANCE_MS", "")
    return int(text) / 1000.0 if text.isdigit() else 20.0


def design_bound(bound: float) -> float:
    """A bound the design gives, in seconds, with the scheduling allowance added: the deadline for
    waiting on it and the limit for asserting it."""
    return bound + scheduling_allowance()


def eventually_within(deadline: float, state: Callable[[], Any], every: float = 0.02) -> Any:
    """Polls ``state`` every ``every`` seconds until it returns something true or ``deadline``
    seconds pass; returns that value, or the last one. Looks once more after the last sleep, so
    that a state reached during it counts."""
    until = time.monotonic() + deadline
    while True:
        value = state()
        if value or time.monotonic() >= until:
            return value
        time.sleep(every)


def figure(text: str) -> None:
    """One "[figure] ..." line on stdout: a measure of speed that a test reports and does not
    assert. It starts a line of its own (unittest -v leaves "test_name ... " open on stderr);
    scripts/dev.sh test gathers these lines into <build>/Testing/figures.txt."""
    sys.stdout.write(f"\n[figure] {text}\n")
    sys.stdout.flush()


# The design's bounds these tests rest on (docs/design.md), in seconds, as the servers here run.
ZK_SESSION_TIMEOUT = 4.0  # --zk-session-timeout-ms of every Server here
ZK_CONNECT_WAIT = 30.0    # --zk-connect-wait-ms: how long a Server waits at start for a ZooKeeper session
CLAIM_FALLBACK = 3.0      # "Claims": a group without a controller is claimed by any server after this
JOIN_WINDOW_MAX = 3.0     # group.join.window.max.ms: the longest a join waits in the batch ("Coalesced joins")
HANDOVER_SETTLE = 10.0    # handover.settle.ms: a server is nobody's preferred one until live this long
REQUEST_TIMEOUT = 3.0     # a consumer's wait for one answer (ConsumerConfig's default, the C++ client's too)
CLIENT_RETRY = 10.0       # how long a consumer's commit() and close() retry (the Python and C++ clients)


def settle_bound(heartbeat_interval: float) -> float:
    """How long the design gives a group to settle after a change of its members, before the
    allowance: a group just created or left without a controller is claimed within the claim
    fallback, a join waits in the batch at most the join window's cap, every member learns of the
    move within one heartbeat interval, and one due partitions still held elsewhere takes them at
    its first heartbeat after their release, so two intervals ("Claims", "Coalesced joins",
    "Acknowledged at once")."""
    return CLAIM_FALLBACK + JOIN_WINDOW_MAX + 2 * heartbeat_interval


def retry_budget() -> float:
    """The retry budget of an Admin whose calls must be answered: a group goes unanswered
    (CONTROLLER_NOT_AVAILABLE, NOT_CONTROLLER) at most until its controller's ZooKeeper session
    has ended and another server has claimed it, plus the allowance. A call is retried only while
    unanswered, so a long budget costs nothing when things go well."""
    return design_bound(ZK_SESSION_TIMEOUT + CLAIM_FALLBACK)


# A command run here (groupctl, openssl) takes well under a second: no bound the design gives.
# What it may take is a hang guard, with the allowance on top.
COMMAND_TIMEOUT = 20.0


def zk_base_port() -> int:
    """The test ensemble's base port (GROUPCOORD_ZK_BASE_PORT, default 21800)."""
    return int(os.environ.get("GROUPCOORD_ZK_BASE_PORT") or 21800)


def zk_connect() -> str:
    """The test ensemble's connect string."""
    b = zk_base_port()
    return os.environ.get("GROUPCOORD_TEST_ZK") or ",".join(f"127.0.0.1:{b + n}" for n in (1, 2, 3))


def ensemble(*args: str) -> subprocess.CompletedProcess:
    """Runs scripts/zk-ensemble.sh on the tests' base port."""
    return subprocess.run(["bash", str(SOURCE_DIR / "scripts/zk-ensemble.sh"), "--base-port", str(zk_base_port()),
                           *args], capture_output=True, text=True, timeout=60)


def require_ensemble(test: unittest.TestCase) -> None:
    """Fails (never skips) the test unless the live ensemble serves."""
    r = ensemble("leader")
    if r.returncode != 0 or not r.stdout.strip().isdigit():
        test.fail(f"no ZooKeeper ensemble serves at {zk_connect()}; start one with scripts/zk-ensemble.sh start, "
                  f"or run the tests with scripts/dev.sh test")
    for binary in (GROUPCOORDD, GROUPCTL):
        if not os.access(binary, os.X_OK):
            test.fail(f"{binary} is not built; build it first (cmake --build build --target groupcoordd groupctl)")


_counter = 0


def unique(prefix: str) -> str:
    """A name unique to this process and call, for roots, groups and topics."""
    global _counter
    _counter += 1
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns() % 1_000_000_007}-{_counter}"


def run(args: list[str], stdin: str | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Runs a command and fails loudly when it does (or takes longer than ``timeout``, by default
    COMMAND_TIMEOUT plus the allowance)."""
    if timeout is None:
        timeout = design_bound(COMMAND_TIMEOUT)
    r = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {r.returncode}: {r.stderr}{r.stdout}")
    return r


def create_topic(topics_path: str, topic: str, partitions: int) -> None:
    """Writes topic metadata under ``topics_path`` with groupctl."""
    run([GROUPCTL, "topic", "create", topic, "--partitions", str(partitions), "--zookeeper", zk_connect(),
         "--topics-path", topics_path])


class Server:
    """A groupcoordd process on 127.0.0.1 and a port of its choosing."""

    def __init__(self, root: str, topics_path: str, extra: list[str] | None = None, server_id: int = 1) -> None:
        self.dir = tempfile.mkdtemp(prefix="groupcoord-py-server-")
        self.log_path = os.path.join(self.dir, "groupcoordd.log")
        self.port_file = os.path.join(self.dir, "port")
        self.args = [GROUPCOORDD, "--listen-address=127.0.0.1", "--listen-port=0", f"--port-file={self.port_file}",
                     f"--zk-connect={zk_connect()}", f"--zk-root={root}", f"--zk-topics-path={topics_path}",
                     f"--server-id={server_id}", f"--zk-session-timeout-ms={round(ZK_SESSION_TIMEOUT * 1000)}",
                     f"--zk-connect-wait-ms={round(ZK_CONNECT_WAIT * 1000)}", "--io-threads=1",
                     "--http-port=0", *(extra or [])]
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self, wait: float | None = None) -> "Server":
        """Starts it and waits until it listens: it writes its port file once it has a ZooKeeper
        session, which it waits for at most ZK_CONNECT_WAIT (then it exits); by default the wait
        is that with the allowance, and ends as soon as the port is there or the process exits."""
        log = open(self.log_path, "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORDD_")}
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=log, env=env)
        log.close()

        def listening() -> bool:
            try:
                text = Path(self.port_file).read_text().strip()
                if text.isdigit() and int(text) > 0:
                    self.port = int(text)
                    return True
            except OSError:
                pass
            return self.proc is not None and self.proc.poll() is not None  # exited: nothing more to wait for

        eventually_within(design_bound(ZK_CONNECT_WAIT) if wait is None else wait, listening)
        if self.port > 0:
            return self
        raise AssertionError(f"groupcoordd did not start listening; its log:\n{self.log()}")

    @property
    def endpoint(self) -> tuple[str, int]:
        """(host, port) of its listener."""
        return ("127.0.0.1", self.port)

    def kill9(self) -> None:
        """SIGKILL, then reap."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM, SIGKILL after 15 s; the scratch directory goes too."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill9()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log(self) -> str:
        """Its log so far."""
        try:
            return Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""


class LiveTestCase(unittest.TestCase):
    """A root and topics path of its own per test; servers stopped after it."""

    def setUp(self) -> None:
        require_ensemble(self)
        self.root = "/" + unique("pyclient")
        self.topics_path = self.root + "-topics"
        self.servers: list[Server] = []
        self.scratch = tempfile.mkdtemp(prefix="groupcoord-py-test-")

    def tearDown(self) -> None:
        for s in self.servers:
            s.stop()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def start_server(self, extra: list[str] | None = None, server_id: int = 1) -> Server:
        """A groupcoordd on this test's root."""
        s = Server(self.root, self.topics_path, extra, server_id)
        self.servers.append(s)
        return s.start()

    def wait_for(self, what: str, predicate, timeout: float, step: float = 0.05):  # type: ignore[no-untyped-def]
        """Polls ``predicate`` until it returns something true; fails after ``timeout`` seconds (a
        deadline derived from the design's bounds: design_bound())."""
        value = eventually_within(timeout, predicate, step)
        if value:
            return value
        self.fail(f"timed out after {timeout:.1f} s waiting for {what}; server logs:\n" +
                  "\n".join(s.log()[-3000:] for s in self.servers))

    # ---- credentials and certificates ----------------------------------------------

    def credentials_file(self, users: dict[str, tuple[str, str]]) -> str:
        """A credentials file made by ``groupctl auth hash``; users: name -> (role, secret)."""
        lines = []
        for name, (role, secret) in users.items():
            r = run([GROUPCTL, "auth", "hash", "--user", name, "--role", role, "--iterations", "10000"],
                    stdin=secret + "\n")
            lines.append(r.stdout.strip())
        path = os.path.join(self.scratch, "credentials")
        Path(path).write_text("# test users\n" + "\n".join(lines) + "\n")
        return path

    def certificates(self) -> dict[str, str]:
        """A CA, a server certificate for localhost and 127.0.0.1, a client
        certificate, and a second CA that signed nothing; made with openssl."""
        d = self.scratch
        Path(d, "san.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        steps = [
            f"openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=groupcoord-py-ca -keyout {d}/ca.key -out {d}/ca.pem",
            f"openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=groupcoord-py-other -keyout {d}/other.key -out {d}/other.pem",
            f"openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout {d}/server.key -out {d}/server.csr",
            f"openssl x509 -req -in {d}/server.csr -CA {d}/ca.pem -CAkey {d}/ca.key -CAcreateserial -days 2 "
            f"-extfile {d}/san.cnf -out {d}/server.pem",
            f"openssl req -newkey rsa:2048 -nodes -subj /CN=groupcoord-py-client -keyout {d}/client.key -out {d}/client.csr",
            f"openssl x509 -req -in {d}/client.csr -CA {d}/ca.pem -CAkey {d}/ca.key -CAcreateserial -days 2 -out {d}/client.pem",
        ]
        for step in steps:
            run(step.split())
        return {name: f"{d}/{name}" for name in
                ("ca.pem", "other.pem", "server.pem", "server.key", "client.pem", "client.key")}


class OwnershipRecord:
    """Grants and releases of every member, stamped with CLOCK_MONOTONIC, as
    the C++ failover tests record them; overlaps() lists any partition held
    by two members at once."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str, tuple[str, int], bool]] = []

    def add(self, who: str, partition: tuple[str, int], grant: bool, at_ns: int | None = None) -> None:
        """Records one grant (grant=True) or release."""
        self.events.append((time.monotonic_ns() if at_ns is None else at_ns, who, partition, grant))

    def overlaps(self) -> list[str]:
        """One line per grant made while another member held the partition."""
        by_partition: dict[tuple[str, int], list[tuple[int, str, bool]]] = {}
        for at, who, p, grant in self.events:
            by_partition.setdefault(p, []).append((at, who, grant))
        out = []
        for p, events in sorted(by_partition.items()):
            events.sort(key=lambda e: e[0])  # stable: same-instant events keep their order
            holder = ""
            for at, who, grant in events:
                if grant:
                    if holder and holder != who:
                        out.append(f"{p[0]}-{p[1]} granted to {who} while {holder} held it")
                    holder = who
                elif holder == who:
                    holder = ""
        return out

    def holders(self) -> dict[tuple[str, int], str]:
        """Who holds each partition at the end of the record."""
        held: dict[tuple[str, int], str] = {}
        for at, who, p, grant in sorted(self.events, key=lambda e: e[0]):
            if grant:
                held[p] = who
            elif held.get(p) == who:
                del held[p]
        return held
