"""What the Python client's integration tests share: the live ensemble,
groupcoordd processes, topics, credentials and certificates. Every process
is started here and ended here by its PID; only 127.0.0.1 is used."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("GROUPCOORD_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("GROUPCOORD_BUILD_DIR", SOURCE_DIR / "build"))
GROUPCOORDD = os.environ.get("GROUPCOORDD", str(BUILD_DIR / "server/groupcoordd"))
GROUPCTL = os.environ.get("GROUPCTL", str(BUILD_DIR / "client/groupctl"))
PROBE = os.environ.get("GROUPCOORD_CONSUMER_PROBE", str(BUILD_DIR / "python/groupcoord_consumer_probe"))


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


def run(args: list[str], stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    """Runs a command and fails loudly when it does."""
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
                     f"--server-id={server_id}", "--zk-session-timeout-ms=4000", "--io-threads=1",
                     "--http-port=0", *(extra or [])]
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self, wait: float = 20.0) -> "Server":
        """Starts it and waits until it listens."""
        log = open(self.log_path, "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORDD_")}
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=log, env=env)
        log.close()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                text = Path(self.port_file).read_text().strip()
                if text.isdigit() and int(text) > 0:
                    self.port = int(text)
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
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
        """Polls ``predicate`` until it returns something true; fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(step)
        self.fail(f"timed out after {timeout} s waiting for {what}; server logs:\n" +
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
