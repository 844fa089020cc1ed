#!/usr/bin/env python3
"""groupcoord's Kafka port driven by real Kafka clients: kafka-python,
confluent-kafka (librdkafka), KafkaJS and kcat.

Each test starts two groupcoordd servers with Kafka ports on 127.0.0.1
against the test ensemble (GROUPCOORD_TEST_ZK), under a ZooKeeper root of its
own, writes a topic of 6 partitions under the Kafka topics path with
`groupctl topic create`, and runs members as separate processes
(member_kafka_python.py, member_confluent.py, js/member.js; the Python ones
share member_common.py). A member prints one JSON line per event (assigned,
revoked, generation, committed, ...) and takes JSON commands on standard
input; the driver reads the lines and asserts.

Time (tests/README.md, "Time in tests"): every wait polls up to a bound
computed from the timeouts configured here (the members' session and
rebalance timeouts, the servers' ZooKeeper session, the claim fallback, the
join window) plus the scheduling allowance. Every process started here is
stopped here by its PID. Nothing is skipped: a missing server, client
library or ensemble fails the test.

AdminTest has each library's admin client list, describe and delete a group
(KafkaJS's through js/admin.js, one call a run, its result a JSON line).

SaslTest runs the servers with a credentials file and a permissions file:
every client speaks SASL_PLAINTEXT with SCRAM-SHA-256 (docs/kafka.md, "Security").

Run alone: python3 tests/kafka/driver.py [-k PATTERN] (tests/README.md).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
SOURCE_DIR = Path(os.environ.get("GROUPCOORD_SOURCE_DIR", HERE.parents[1]))
BUILD_DIR = Path(os.environ.get("GROUPCOORD_BUILD_DIR", SOURCE_DIR / "build"))
GROUPCOORDD = os.environ.get("GROUPCOORDD", str(BUILD_DIR / "server/groupcoordd"))
GROUPCTL = os.environ.get("GROUPCTL", str(BUILD_DIR / "client/groupctl"))
KCAT = os.environ.get("KCAT", shutil.which("kcat") or "/usr/bin/kcat")
NODE = os.environ.get("NODE", shutil.which("node") or "/usr/bin/node")
PYTHON = sys.executable
JS_DIR = HERE / "js"

# The client versions these tests pin (scripts/dev.sh installs them).
KAFKA_PYTHON_VERSION = "2.0.2"
LIBRDKAFKA_VERSION = "2.0.2"
KAFKAJS_VERSION = "2.2.4"

TOPIC_PARTITIONS = 6
ALL_PARTITIONS = set(range(TOPIC_PARTITIONS))


# ---- time ------------------------------------------------------------------------------

def scheduling_allowance() -> float:
    """20 s, or GROUPCOORD_TEST_ALLOWANCE_MS (tests/support/Timing.h says why)."""
    text = os.environ.get("GROUPCOORD_TEST_ALLOWANCE_MS", "")
    return int(text) / 1000.0 if text.isdigit() else 20.0


def design_bound(bound: float) -> float:
    """A bound the design gives, with the scheduling allowance added."""
    return bound + scheduling_allowance()


def eventually_within(deadline: float, state: Callable[[], Any], every: float = 0.05) -> Any:
    """Polls ``state`` until it returns something true or ``deadline`` seconds pass; looks once
    more after the last sleep."""
    until = time.monotonic() + deadline
    while True:
        value = state()
        if value or time.monotonic() >= until:
            return value
        time.sleep(every)


def figure(text: str) -> None:
    sys.stdout.write(f"\n[figure] {text}\n")
    sys.stdout.flush()


# The servers' bounds (docs/design.md), in seconds, as the servers here run.
ZK_SESSION_TIMEOUT = 4.0   # --zk-session-timeout-ms: a dead server's groups move after this
ZK_CONNECT_WAIT = 30.0     # --zk-connect-wait-ms: a server waits this long for a first session
CLAIM_FALLBACK = 3.0       # a group without a controller is claimed by any server after this
JOIN_WINDOW_MAX = 3.0      # group.join.window.max.ms: the longest a join waits in the batch
INITIAL_REBALANCE_DELAY = 1.0  # --kafka-group-initial-rebalance-delay-ms: a new Kafka group waits for more joins
# The members' timeouts, configured by every member this driver starts.
SESSION_TIMEOUT = 6.0      # session.timeout.ms / sessionTimeout
HEARTBEAT_INTERVAL = 1.0   # heartbeat.interval.ms / heartbeatInterval
REBALANCE_TIMEOUT = 10.0   # max.poll.interval.ms (the JoinGroup rebalance timeout) / rebalanceTimeout
STATIC_SESSION_TIMEOUT = 20.0  # the static members' session timeout (and rebalance timeout: librdkafka
                               # wants max.poll.interval.ms >= session.timeout.ms): a restart fits within it
# A command run here (groupctl, kcat -L) is a hang guard: no bound the design gives.
COMMAND_TIMEOUT = 20.0


def settle_bound() -> float:
    """A group settles after a change of its members within: the claim fallback (a new group
    without a controller), the join window's cap, the initial rebalance delay of a group with no
    member, one heartbeat interval for every member to learn of the rebalance, the rebalance
    timeout within which every member rejoins, and one more heartbeat interval for the sync."""
    return CLAIM_FALLBACK + JOIN_WINDOW_MAX + INITIAL_REBALANCE_DELAY + REBALANCE_TIMEOUT + 2 * HEARTBEAT_INTERVAL


def eviction_bound() -> float:
    """A member killed without leaving is evicted after its session timeout; the rest then
    settle as after any change."""
    return SESSION_TIMEOUT + settle_bound()


def failover_bound() -> float:
    """A dead controller's groups are claimed by another server within its ZooKeeper session
    plus the claim fallback."""
    return ZK_SESSION_TIMEOUT + CLAIM_FALLBACK


def failover_session_timeout() -> float:
    """The members' session timeout (and rebalance timeout) where their controller dies under them:
    longer than the failover's design bound plus a heartbeat interval, so that no session ends, at
    the client or at the new controller, before the member has heartbeated the new controller."""
    return design_bound(failover_bound() + HEARTBEAT_INTERVAL)


# KafkaJS's retry of a member's requests: js/member.js configures initialRetryTime 200 ms and 8
# retries, KafkaJS's defaults the rest (randomization factor 0.2, multiplier 2, maxRetryTime 30 s).
KAFKAJS_RETRY_INITIAL = 0.2
KAFKAJS_RETRIES = 8
KAFKAJS_RETRY_FACTOR = 0.2
KAFKAJS_RETRY_MULTIPLIER = 2.0
KAFKAJS_RETRY_MAX = 30.0


def kafkajs_restart_bound() -> float:
    """The longest a KafkaJS member's consumer retries a request that keeps failing before it gives
    up (a crash), plus the wait before KafkaJS restarts it: each wait is at most (1 + factor) times
    the one before times the multiplier, capped at maxRetryTime; there are as many as retries,
    and the restart waits one more."""
    wait, total = KAFKAJS_RETRY_INITIAL * (1 + KAFKAJS_RETRY_FACTOR), 0.0
    for _ in range(KAFKAJS_RETRIES + 1):
        total += wait
        wait = min(wait * (1 + KAFKAJS_RETRY_FACTOR) * KAFKAJS_RETRY_MULTIPLIER, KAFKAJS_RETRY_MAX)
    return total


# ---- the ensemble, names, commands -----------------------------------------------------------

def zk_base_port() -> int:
    return int(os.environ.get("GROUPCOORD_ZK_BASE_PORT") or 21800)


def zk_connect() -> str:
    b = zk_base_port()
    return os.environ.get("GROUPCOORD_TEST_ZK") or ",".join(f"127.0.0.1:{b + n}" for n in (1, 2, 3))


_counter = 0


def unique(prefix: str) -> str:
    """A valid groupcoord name unique to this process and call."""
    global _counter
    _counter += 1
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns() % 1_000_000_007}-{_counter}"


def run(args: list[str], timeout: float | None = None) -> subprocess.CompletedProcess:
    """Runs a command; fails loudly when it fails or hangs."""
    r = subprocess.run(args, capture_output=True, text=True,
                       timeout=design_bound(COMMAND_TIMEOUT) if timeout is None else timeout)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {r.returncode}: {r.stderr}{r.stdout}")
    return r


def missing_servers() -> list[str]:
    """The ensemble and the binaries, when missing, each with how to get it."""
    out = []
    r = subprocess.run(["bash", str(SOURCE_DIR / "scripts/zk-ensemble.sh"), "--base-port", str(zk_base_port()),
                        "leader"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or not r.stdout.strip().isdigit():
        out.append(f"no ZooKeeper ensemble serves at {zk_connect()}: start one with scripts/zk-ensemble.sh start, "
                   f"or run the tests with scripts/dev.sh test")
    for binary in (GROUPCOORDD, GROUPCTL):
        if not os.access(binary, os.X_OK):
            out.append(f"{binary} is not built: cmake --build build --target groupcoordd groupctl")
    return out


def missing_prerequisites() -> list[str]:
    """What this suite needs and does not find, each with how to get it."""
    out = missing_servers()
    for binary, package in ((KCAT, "kcat"), (NODE, "nodejs")):
        if not os.access(binary, os.X_OK):
            out.append(f"{binary} is missing: apt-get install {package} (scripts/dev.sh setup)")
    try:
        import kafka
        if kafka.__version__ != KAFKA_PYTHON_VERSION:
            out.append(f"kafka-python is {kafka.__version__}, not {KAFKA_PYTHON_VERSION} (python3-kafka)")
    except ImportError:
        out.append(f"{PYTHON} cannot import kafka: apt-get install python3-kafka (scripts/dev.sh setup)")
    try:
        import confluent_kafka
        if confluent_kafka.libversion()[0] != LIBRDKAFKA_VERSION:
            out.append(f"librdkafka is {confluent_kafka.libversion()[0]}, not {LIBRDKAFKA_VERSION}")
    except ImportError:
        out.append(f"{PYTHON} cannot import confluent_kafka: apt-get install python3-confluent-kafka "
                   f"(scripts/dev.sh setup)")
    try:
        version = json.loads((JS_DIR / "node_modules/kafkajs/package.json").read_text())["version"]
        if version != KAFKAJS_VERSION:
            out.append(f"kafkajs is {version}, not {KAFKAJS_VERSION}: (cd tests/kafka/js && npm ci)")
    except (OSError, ValueError, KeyError):
        out.append("kafkajs is not installed: (cd tests/kafka/js && npm ci), as scripts/dev.sh setup does")
    return out


# ---- Kafka requests by hand (standard library only) --------------------------------------------

def find_coordinator(port: int, group: str, timeout: float) -> tuple[int, int, str, int]:
    """FindCoordinator v0 to 127.0.0.1:port: (error_code, node_id, host, port)."""
    client_id = b"groupcoord-kafka-driver"
    body = (struct.pack(">hhih", 10, 0, 1, len(client_id)) + client_id +
            struct.pack(">h", len(group.encode())) + group.encode())
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(body)) + body)

        def read(n: int) -> bytes:
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk:
                    raise ConnectionError("the server closed the connection")
                data += chunk
            return data

        (size,) = struct.unpack(">i", read(4))
        frame = read(size)
    correlation, error, node = struct.unpack_from(">ihi", frame, 0)
    if correlation != 1:
        raise AssertionError(f"FindCoordinator answered correlation id {correlation}, not 1")
    (host_len,) = struct.unpack_from(">h", frame, 10)
    host = frame[12:12 + max(host_len, 0)].decode()
    (coord_port,) = struct.unpack_from(">i", frame, 12 + max(host_len, 0))
    return error, node, host, coord_port


class _TopicPartition(ctypes.Structure):
    """rd_kafka_topic_partition_t."""
    _fields_ = [("topic", ctypes.c_char_p), ("partition", ctypes.c_int32), ("offset", ctypes.c_int64),
                ("metadata", ctypes.c_void_p), ("metadata_size", ctypes.c_size_t), ("opaque", ctypes.c_void_p),
                ("err", ctypes.c_int), ("private", ctypes.c_void_p)]


class _TopicPartitionList(ctypes.Structure):
    """rd_kafka_topic_partition_list_t."""
    _fields_ = [("cnt", ctypes.c_int), ("size", ctypes.c_int), ("elems", ctypes.POINTER(_TopicPartition))]


class Rdkafka:
    """librdkafka's consumer group Admin API (ListConsumerGroups, DescribeConsumerGroups,
    DeleteGroups) through ctypes: confluent-kafka's Python binding as Debian ships it (1.7.0) has
    none of them, while the librdkafka under it (2.0.2) has all three."""

    EVENT_DELETEGROUPS_RESULT = 106
    EVENT_LISTCONSUMERGROUPS_RESULT = 0x2000
    EVENT_DESCRIBECONSUMERGROUPS_RESULT = 0x4000

    def __init__(self, bootstrap: str, library: str = "librdkafka.so.1") -> None:
        lib = ctypes.CDLL(library)
        vp, cp, sz, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int
        psz, pvp = ctypes.POINTER(sz), ctypes.POINTER(vp)
        for name, res, args in (
                ("rd_kafka_conf_new", vp, []), ("rd_kafka_conf_set", i, [vp, cp, cp, cp, sz]),
                ("rd_kafka_new", vp, [i, vp, cp, sz]), ("rd_kafka_destroy", None, [vp]),
                ("rd_kafka_queue_new", vp, [vp]), ("rd_kafka_queue_destroy", None, [vp]),
                ("rd_kafka_queue_poll", vp, [vp, i]),
                ("rd_kafka_AdminOptions_new", vp, [vp, i]), ("rd_kafka_AdminOptions_destroy", None, [vp]),
                ("rd_kafka_AdminOptions_set_request_timeout", i, [vp, i, cp, sz]),
                ("rd_kafka_event_type", i, [vp]), ("rd_kafka_event_error", i, [vp]),
                ("rd_kafka_event_error_string", cp, [vp]), ("rd_kafka_event_destroy", None, [vp]),
                ("rd_kafka_error_code", i, [vp]), ("rd_kafka_error_string", cp, [vp]),
                ("rd_kafka_consumer_group_state_name", cp, [i]),
                ("rd_kafka_DeleteGroup_new", vp, [cp]), ("rd_kafka_DeleteGroup_destroy", None, [vp]),
                ("rd_kafka_DeleteGroups", None, [vp, pvp, sz, vp, vp]),
                ("rd_kafka_event_DeleteGroups_result", vp, [vp]),
                ("rd_kafka_DeleteGroups_result_groups", pvp, [vp, psz]),
                ("rd_kafka_group_result_name", cp, [vp]), ("rd_kafka_group_result_error", vp, [vp]),
                ("rd_kafka_ListConsumerGroups", None, [vp, vp, vp]),
                ("rd_kafka_event_ListConsumerGroups_result", vp, [vp]),
                ("rd_kafka_ListConsumerGroups_result_valid", pvp, [vp, psz]),
                ("rd_kafka_ListConsumerGroups_result_errors", pvp, [vp, psz]),
                ("rd_kafka_ConsumerGroupListing_group_id", cp, [vp]),
                ("rd_kafka_ConsumerGroupListing_state", i, [vp]),
                ("rd_kafka_DescribeConsumerGroups", None, [vp, ctypes.POINTER(cp), sz, vp, vp]),
                ("rd_kafka_event_DescribeConsumerGroups_result", vp, [vp]),
                ("rd_kafka_DescribeConsumerGroups_result_groups", pvp, [vp, psz]),
                ("rd_kafka_ConsumerGroupDescription_group_id", cp, [vp]),
                ("rd_kafka_ConsumerGroupDescription_error", vp, [vp]),
                ("rd_kafka_ConsumerGroupDescription_partition_assignor", cp, [vp]),
                ("rd_kafka_ConsumerGroupDescription_state", i, [vp]),
                ("rd_kafka_ConsumerGroupDescription_coordinator", vp, [vp]),
                ("rd_kafka_ConsumerGroupDescription_member_count", sz, [vp]),
                ("rd_kafka_ConsumerGroupDescription_member", vp, [vp, sz]),
                ("rd_kafka_MemberDescription_client_id", cp, [vp]),
                ("rd_kafka_MemberDescription_consumer_id", cp, [vp]),
                ("rd_kafka_MemberDescription_host", cp, [vp]),
                ("rd_kafka_MemberDescription_assignment", vp, [vp]),
                ("rd_kafka_MemberAssignment_partitions", ctypes.POINTER(_TopicPartitionList), [vp]),
                ("rd_kafka_Node_id", i, [vp]), ("rd_kafka_Node_host", cp, [vp]), ("rd_kafka_Node_port", ctypes.c_uint16, [vp])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.lib = lib
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        if lib.rd_kafka_conf_set(conf, b"bootstrap.servers", bootstrap.encode(), errstr, 512) != 0:
            raise AssertionError(errstr.value.decode())
        self.rk = lib.rd_kafka_new(0, conf, errstr, 512)  # a producer handle serves the Admin API
        if not self.rk:
            raise AssertionError(f"rd_kafka_new: {errstr.value.decode()}")

    def _call(self, what: str, start: Callable[[Any, Any], None], event_type: int, timeout: float,
              read: Callable[[Any], Any]) -> Any:
        """Starts one Admin call with a request timeout of ``timeout`` and reads its result event."""
        lib = self.lib
        q = lib.rd_kafka_queue_new(self.rk)
        options = lib.rd_kafka_AdminOptions_new(self.rk, 0)  # RD_KAFKA_ADMIN_OP_ANY
        errstr = ctypes.create_string_buffer(512)
        lib.rd_kafka_AdminOptions_set_request_timeout(options, int(timeout * 1000), errstr, 512)
        try:
            start(options, q)
            ev = lib.rd_kafka_queue_poll(q, int((timeout + 5) * 1000))
            if not ev:
                raise AssertionError(f"{what}: no answer within {timeout + 5:.1f} s")
            try:
                if lib.rd_kafka_event_error(ev) != 0:
                    raise AssertionError(f"{what}: error {lib.rd_kafka_event_error(ev)} "
                                         f"{(lib.rd_kafka_event_error_string(ev) or b'').decode()}")
                if lib.rd_kafka_event_type(ev) != event_type:
                    raise AssertionError(f"{what}: unexpected event type {lib.rd_kafka_event_type(ev)}")
                return read(ev)
            finally:
                lib.rd_kafka_event_destroy(ev)
        finally:
            lib.rd_kafka_AdminOptions_destroy(options)
            lib.rd_kafka_queue_destroy(q)

    def _error(self, err: Any) -> tuple[int, str]:
        if not err:
            return 0, ""
        return self.lib.rd_kafka_error_code(err), (self.lib.rd_kafka_error_string(err) or b"").decode()

    def list_groups(self, timeout: float) -> dict[str, str]:
        """ListConsumerGroups: group id -> state name; fails on any broker's error."""
        lib = self.lib

        def read(ev: Any) -> dict[str, str]:
            res = lib.rd_kafka_event_ListConsumerGroups_result(ev)
            n = ctypes.c_size_t(0)
            errors = lib.rd_kafka_ListConsumerGroups_result_errors(res, ctypes.byref(n))
            if n.value:
                raise AssertionError(f"ListConsumerGroups: {[self._error(errors[k]) for k in range(n.value)]}")
            valid = lib.rd_kafka_ListConsumerGroups_result_valid(res, ctypes.byref(n))
            return {lib.rd_kafka_ConsumerGroupListing_group_id(valid[k]).decode():
                    lib.rd_kafka_consumer_group_state_name(lib.rd_kafka_ConsumerGroupListing_state(valid[k])).decode()
                    for k in range(n.value)}

        return self._call("ListConsumerGroups", lambda o, q: lib.rd_kafka_ListConsumerGroups(self.rk, o, q),
                          self.EVENT_LISTCONSUMERGROUPS_RESULT, timeout, read)

    def describe_group(self, group: str, timeout: float) -> dict:
        """DescribeConsumerGroups of one group: error, state, assignor, coordinator, members."""
        lib = self.lib
        names = (ctypes.c_char_p * 1)(group.encode())

        def read(ev: Any) -> dict:
            res = lib.rd_kafka_event_DescribeConsumerGroups_result(ev)
            n = ctypes.c_size_t(0)
            groups = lib.rd_kafka_DescribeConsumerGroups_result_groups(res, ctypes.byref(n))
            if n.value != 1:
                raise AssertionError(f"DescribeConsumerGroups({group}) answered {n.value} groups")
            d = groups[0]
            node = lib.rd_kafka_ConsumerGroupDescription_coordinator(d)
            members = []
            for k in range(lib.rd_kafka_ConsumerGroupDescription_member_count(d)):
                m = lib.rd_kafka_ConsumerGroupDescription_member(d, k)
                plist = lib.rd_kafka_MemberAssignment_partitions(lib.rd_kafka_MemberDescription_assignment(m))
                partitions = []
                if plist:
                    partitions = [(plist.contents.elems[x].topic.decode(), plist.contents.elems[x].partition)
                                  for x in range(plist.contents.cnt)]
                members.append({"client_id": lib.rd_kafka_MemberDescription_client_id(m).decode(),
                                "consumer_id": lib.rd_kafka_MemberDescription_consumer_id(m).decode(),
                                "host": lib.rd_kafka_MemberDescription_host(m).decode(),
                                "partitions": partitions})
            return {
                "group": lib.rd_kafka_ConsumerGroupDescription_group_id(d).decode(),
                "error": self._error(lib.rd_kafka_ConsumerGroupDescription_error(d)),
                "state": lib.rd_kafka_consumer_group_state_name(lib.rd_kafka_ConsumerGroupDescription_state(d)).decode(),
                "assignor": (lib.rd_kafka_ConsumerGroupDescription_partition_assignor(d) or b"").decode(),
                "coordinator": ((lib.rd_kafka_Node_id(node), (lib.rd_kafka_Node_host(node) or b"").decode(),
                                 lib.rd_kafka_Node_port(node)) if node else None),
                "members": members,
            }

        return self._call(f"DescribeConsumerGroups({group})",
                          lambda o, q: lib.rd_kafka_DescribeConsumerGroups(self.rk, names, 1, o, q),
                          self.EVENT_DESCRIBECONSUMERGROUPS_RESULT, timeout, read)

    def delete_group(self, group: str, timeout: float) -> tuple[int, str]:
        """(error code, error text) of DeleteGroups for one group; 0 on success."""
        lib = self.lib
        g = lib.rd_kafka_DeleteGroup_new(group.encode())
        arr = (ctypes.c_void_p * 1)(g)

        def read(ev: Any) -> tuple[int, str]:
            res = lib.rd_kafka_event_DeleteGroups_result(ev)
            n = ctypes.c_size_t(0)
            groups = lib.rd_kafka_DeleteGroups_result_groups(res, ctypes.byref(n))
            if n.value != 1 or lib.rd_kafka_group_result_name(groups[0]).decode() != group:
                raise AssertionError(f"DeleteGroups({group}) answered {n.value} groups")
            return self._error(lib.rd_kafka_group_result_error(groups[0]))

        try:
            return self._call(f"DeleteGroups({group})", lambda o, q: lib.rd_kafka_DeleteGroups(self.rk, arr, 1, o, q),
                              self.EVENT_DELETEGROUPS_RESULT, timeout, read)
        finally:
            lib.rd_kafka_DeleteGroup_destroy(g)

    def close(self) -> None:
        if self.rk:
            self.lib.rd_kafka_destroy(self.rk)
            self.rk = None


# ---- processes -----------------------------------------------------------------------------------

class Server:
    """A groupcoordd on 127.0.0.1 with a binary port and a Kafka port, both of its choosing."""

    def __init__(self, root: str, topics_path: str, server_id: int, extra: list[str] | None = None) -> None:
        self.id = server_id
        self.dir = tempfile.mkdtemp(prefix="groupcoord-kafka-server-")
        self.log_path = os.path.join(self.dir, "groupcoordd.log")
        self.port_file = os.path.join(self.dir, "port")
        self.kafka_port_file = os.path.join(self.dir, "kafka-port")
        self.args = [GROUPCOORDD, "--listen-address=127.0.0.1", "--listen-port=0", f"--port-file={self.port_file}",
                     "--kafka-listen-port=0", f"--kafka-port-file={self.kafka_port_file}",
                     f"--kafka-group-initial-rebalance-delay-ms={round(INITIAL_REBALANCE_DELAY * 1000)}",
                     f"--zk-connect={zk_connect()}", f"--zk-root={root}", f"--zk-topics-path={topics_path}",
                     f"--server-id={server_id}", f"--zk-session-timeout-ms={round(ZK_SESSION_TIMEOUT * 1000)}",
                     f"--zk-connect-wait-ms={round(ZK_CONNECT_WAIT * 1000)}", "--io-threads=1", "--http-port=0",
                     *(extra or [])]
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.kafka_port = 0

    def start(self) -> "Server":
        """Starts it; it writes its port files once it has a ZooKeeper session, which it waits for
        at most ZK_CONNECT_WAIT."""
        with open(self.log_path, "ab") as log:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORDD_")}
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=log, env=env)

        def port_of(path: str) -> int:
            try:
                text = Path(path).read_text().strip()
                return int(text) if text.isdigit() else 0
            except OSError:
                return 0

        def listening() -> bool:
            self.port, self.kafka_port = port_of(self.port_file), port_of(self.kafka_port_file)
            return (self.port > 0 and self.kafka_port > 0) or self.proc.poll() is not None

        eventually_within(design_bound(ZK_CONNECT_WAIT), listening)
        if self.port > 0 and self.kafka_port > 0:
            return self
        raise AssertionError(f"groupcoordd (server {self.id}) did not write both port files "
                             f"(binary {self.port}, Kafka {self.kafka_port}); its log:\n{self.log()[-4000:]}")

    @property
    def kafka_address(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        if self.running():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM; SIGKILL if it has not exited within its shutdown grace plus the allowance."""
        if self.running():
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=design_bound(5.0))
            except subprocess.TimeoutExpired:
                self.kill9()

    def log(self) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""


class Member:
    """One member process (a client library's member script); its JSON lines are kept in order,
    anything else it prints on stdout is kept as {"event":"raw"}; stderr goes to a file."""

    def __init__(self, lib: str, name: str, bootstrap: str, group: str, topic: str, scratch: str,
                 extra: list[str] | None = None, session_timeout: float = SESSION_TIMEOUT,
                 rebalance_timeout: float = REBALANCE_TIMEOUT, partitions: int = TOPIC_PARTITIONS,
                 env: dict[str, str] | None = None) -> None:
        self.lib, self.name = lib, name
        common = ["--bootstrap", bootstrap, "--group", group, "--topic", topic,
                  "--partitions", str(partitions), "--client-id", name,
                  "--session-timeout-ms", str(round(session_timeout * 1000)),
                  "--heartbeat-ms", str(round(HEARTBEAT_INTERVAL * 1000)),
                  "--rebalance-timeout-ms", str(round(rebalance_timeout * 1000)), *(extra or [])]
        self.args = member_command(lib) + common
        self.stderr_path = os.path.join(scratch, f"{name}.stderr")
        self.lock = threading.Lock()
        self.events: list[dict] = []
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         text=True, bufsize=1, cwd=str(HERE),
                                         env=None if env is None else {**os.environ, **env})
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "raw", "text": line}
            event["at"] = time.monotonic()
            with self.lock:
                self.events.append(event)

    def snapshot(self) -> list[dict]:
        with self.lock:
            return list(self.events)

    def holdings(self) -> set[int] | None:
        """What it owns after its latest events; None before its first assignment."""
        held: set[int] | None = None
        for e in self.snapshot():
            if e["event"] == "assigned":
                held = set(e["partitions"])
            elif e["event"] in ("revoked", "lost") and held is not None:
                held -= set(e["partitions"])
        return held

    def membership(self) -> tuple[int, str] | None:
        """(generation, member id) as it reported them last since its latest assignment (every
        member reports them after each assignment: the Python ones at once, KafkaJS with its next
        heartbeat); None before that, or while it holds no membership."""
        last = None
        for e in self.snapshot():
            if e["event"] == "assigned":
                last = None
            elif e["event"] == "generation":
                last = (e["generation"], e["member_id"]) if e["generation"] >= 0 and e["member_id"] else None
        return last

    def generation(self) -> int | None:
        got = self.membership()
        return got[0] if got else None

    def has(self, kind: str, since: int = 0) -> dict | None:
        for e in self.snapshot()[since:]:
            if e["event"] == kind:
                return e
        return None

    def send(self, command: dict) -> None:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def close(self, wait: float) -> int:
        """Asks it to close (it leaves the group) and waits for it to exit; its exit code."""
        self.send({"cmd": "close"})
        try:
            return self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.kill9()
            raise AssertionError(f"{self.name} did not close within {wait:.1f} s; {self.describe()}")

    def kill9(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def release(self) -> None:
        """Once it has exited: its pipes closed, its output read to the end."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass  # it is gone: what was left unsent does not matter
        self.reader.join(timeout=10)
        self.proc.stdout.close()

    def stderr(self) -> str:
        try:
            return Path(self.stderr_path).read_text(errors="replace")
        except OSError:
            return ""

    def describe(self) -> str:
        events = [{k: v for k, v in e.items() if k != "at"} for e in self.snapshot()]
        return (f"{self.name} ({self.lib}, pid {self.proc.pid}, exit {self.proc.poll()}): events {events}; "
                f"stderr tail: {self.stderr()[-1500:]!r}")


def member_command(lib: str) -> list[str]:
    if lib == "kafka-python":
        return [PYTHON, str(HERE / "member_kafka_python.py")]
    if lib == "confluent":
        return [PYTHON, str(HERE / "member_confluent.py")]
    if lib == "kip848":  # confluent-kafka on librdkafka 2.15.1, group.protocol=consumer (kip848.py)
        return [PYTHON, str(HERE / "member_kip848.py")]
    if lib == "kafkajs":
        return [NODE, str(JS_DIR / "member.js")]
    raise ValueError(lib)


def split_of(members: list[Member], sizes: list[int] | None = None) -> list[set[int]] | None:
    """The members' holdings when they split all partitions: each holds some, none twice, all
    held, and every member has told the generation of its latest assignment, the same for all."""
    held = [m.holdings() for m in members]
    if any(h is None or not h for h in held):
        return None
    if sum(len(h) for h in held) != TOPIC_PARTITIONS or set().union(*held) != ALL_PARTITIONS:
        return None
    if sizes is not None and [len(h) for h in held] != sizes:
        return None
    generations = [m.generation() for m in members]
    if any(g is None for g in generations) or len(set(generations)) != 1:
        return None
    return held


# ---- the test case -----------------------------------------------------------------------------------

class KafkaPortTest(unittest.TestCase):
    """Two servers with Kafka ports and a topic of 6 partitions per test, on a root of its own."""

    # The topic's partitions (a subclass may want more).
    PARTITIONS = TOPIC_PARTITIONS

    def missing_prerequisites(self) -> list[str]:
        return missing_prerequisites()

    def member_env(self) -> dict[str, str] | None:
        """What a member process gets in its environment besides this process's."""
        return None

    def setUp(self) -> None:
        missing = self.missing_prerequisites()
        if missing:
            self.fail("the Kafka client tests cannot run:\n  " + "\n  ".join(missing))
        self.scratch = tempfile.mkdtemp(prefix="groupcoord-kafka-test-")
        self.members: list[Member] = []
        self.servers: list[Server] = []
        self.started = time.monotonic()
        # A cleanup, not tearDown: it runs when setUp fails half way too.
        self.addCleanup(self.stop_everything)
        self.root = "/" + unique("kafkaport")
        self.topics_path = self.root + "-topics"
        self.next_server_id = 1
        for _ in range(2):
            self.start_server()
        self.topic = unique("T")
        run([GROUPCTL, "topic", "create", self.topic, "--partitions", str(self.PARTITIONS), "--zookeeper",
             zk_connect(), "--topics-path", self.topics_path])

    def stop_everything(self) -> None:
        """Every member and server this test started, by its PID."""
        for m in self.members:
            m.kill9()
            m.release()
        for s in self.servers:
            s.stop()
        if self.failed():
            for s in self.servers:
                sys.stderr.write(f"\n--- server {s.id} log tail ({s.log_path}) ---\n{s.log()[-4000:]}\n")
        for s in self.servers:
            shutil.rmtree(s.dir, ignore_errors=True)
        shutil.rmtree(self.scratch, ignore_errors=True)
        figure(f"kafka {self.id().split('.', 1)[1]}: {time.monotonic() - self.started:.1f} s")

    def failed(self) -> bool:
        """Whether this test has failed so far. From Python 3.11 unittest reports a failure to the
        result at once and leaves the outcome's success flag alone: both are looked at."""
        outcome = getattr(self, "_outcome", None)
        if outcome is None:
            return False
        if not getattr(outcome, "success", True):
            return True
        result = getattr(outcome, "result", None)
        return any(test is self for test, _ in getattr(result, "failures", []) + getattr(result, "errors", []))

    def server_args(self) -> list[str]:
        """Options every server of this test gets besides the common ones."""
        return []

    def start_server(self) -> Server:
        s = Server(self.root, self.topics_path, self.next_server_id, self.server_args())
        self.next_server_id += 1
        self.servers.append(s)
        return s.start()

    def bootstrap(self, servers: list[Server] | None = None) -> str:
        return ",".join(s.kafka_address for s in (servers or [s for s in self.servers if s.running()]))

    def member(self, lib: str, name: str, group: str, extra: list[str] | None = None,
               bootstrap: str | None = None, session_timeout: float = SESSION_TIMEOUT,
               rebalance_timeout: float = REBALANCE_TIMEOUT) -> Member:
        m = Member(lib, name, bootstrap or self.bootstrap(), group, self.topic, self.scratch, extra, session_timeout,
                   rebalance_timeout, self.PARTITIONS, self.member_env())
        self.members.append(m)
        return m

    def wait_for(self, what: str, state: Callable[[], Any], bound: float) -> Any:
        """Polls ``state`` up to design_bound(bound); fails saying what it waited for."""
        deadline = design_bound(bound)
        value = eventually_within(deadline, state)
        if value:
            return value
        self.fail(f"timed out after {deadline:.1f} s waiting for {what}\n" +
                  "\n".join(m.describe() for m in self.members))

    def wait_split(self, members: list[Member], bound: float, what: str,
                   sizes: list[int] | None = None) -> list[set[int]]:
        return self.wait_for(f"{what}: {[m.name for m in members]} to split all {TOPIC_PARTITIONS} partitions",
                             lambda: split_of(members, sizes), bound)

    def assert_clean_exit(self, m: Member, wait: float) -> None:
        code = m.close(wait)
        self.assertEqual(code, 0, m.describe())
        self.assertIsNotNone(m.has("closed"), m.describe())

    def groupctl_describe(self, group: str) -> dict:
        boot = ",".join(f"127.0.0.1:{s.port}" for s in self.servers if s.running())
        r = run([GROUPCTL, "--bootstrap", boot, "--output", "json", "describe", group],
                timeout=design_bound(failover_bound() + COMMAND_TIMEOUT))
        return json.loads(r.stdout)

    def controller_of(self, group: str) -> Server:
        """The server FindCoordinator names for the group, asked of each running server: both
        must name the same one, by its server id and Kafka port."""
        answers = set()
        for s in self.servers:
            if not s.running():
                continue
            error, node, host, port = find_coordinator(s.kafka_port, group, design_bound(ZK_SESSION_TIMEOUT))
            self.assertEqual(error, 0, f"FindCoordinator({group}) at server {s.id} answered error {error}")
            answers.add((node, host, port))
        self.assertEqual(len(answers), 1, f"the servers name different coordinators: {answers}")
        node, host, port = answers.pop()
        self.assertEqual(host, "127.0.0.1")
        by_port = [s for s in self.servers if s.kafka_port == port]
        self.assertEqual(len(by_port), 1, f"the coordinator's port {port} is no server's Kafka port")
        self.assertEqual(by_port[0].id, node, "the coordinator's node id is not its server id")
        return by_port[0]


# ---- scenarios for each client library ----------------------------------------------------------------

class GroupScenarios:
    """The group scenarios every client library runs; LIB names the member script."""

    LIB = ""
    # Whether the library's members, their controller killed, rejoin as new members (a rebalance)
    # rather than going on with the server that resumes their generation.
    REJOINS_AFTER_CONTROLLER_KILL = False

    def test_three_members_split(self) -> None:
        group = unique("G")
        ms = [self.member(self.LIB, f"{self.LIB}-{n}", group) for n in range(3)]
        held = self.wait_split(ms, settle_bound(), "three members forming a group", sizes=[2, 2, 2])
        figure(f"kafka {self.LIB} three members formed: {[sorted(h) for h in held]}")

    def test_graceful_leave(self) -> None:
        group = unique("G")
        ms = [self.member(self.LIB, f"{self.LIB}-{n}", group) for n in range(3)]
        self.wait_split(ms, settle_bound(), "three members forming a group")
        left = time.monotonic()
        self.assert_clean_exit(ms[2], design_bound(REBALANCE_TIMEOUT))
        held = self.wait_split(ms[:2], settle_bound(), "two members after the third left", sizes=[3, 3])
        figure(f"kafka {self.LIB} rebalanced after a leave in {time.monotonic() - left:.1f} s: "
               f"{[sorted(h) for h in held]}")

    def test_sigkill_member(self) -> None:
        group = unique("G")
        ms = [self.member(self.LIB, f"{self.LIB}-{n}", group) for n in range(3)]
        self.wait_split(ms, settle_bound(), "three members forming a group")
        killed = time.monotonic()
        ms[0].kill9()
        held = self.wait_split(ms[1:], eviction_bound(), "two members after the third was killed (SIGKILL)",
                               sizes=[3, 3])
        took = time.monotonic() - killed
        figure(f"kafka {self.LIB} rebalanced after SIGKILL in {took:.1f} s: {[sorted(h) for h in held]}")
        # The session timeout is a lower bound the protocol promises: no allowance.
        self.assertGreaterEqual(took, SESSION_TIMEOUT - HEARTBEAT_INTERVAL,
                                "the killed member's partitions moved before its session timeout")

    def test_offsets_survive_controller_kill(self) -> None:
        group = unique("G")
        m = self.member(self.LIB, f"{self.LIB}-committer", group)
        self.wait_split([m], settle_bound(), "one member owning every partition")
        offsets = {str(p): 100 + 7 * p for p in range(TOPIC_PARTITIONS)}
        before = len(m.snapshot())
        m.send({"cmd": "commit", "offsets": offsets})
        self.wait_for("the commit to be answered",
                      lambda: m.has("committed", before) or m.has("error", before), ZK_SESSION_TIMEOUT)
        self.assertIsNotNone(m.has("committed", before), m.describe())
        controller = self.controller_of(group)
        survivor = [s for s in self.servers if s is not controller][0]
        controller.kill9()
        killed = time.monotonic()
        got = self.read_committed(group, survivor, failover_bound())
        self.assertEqual(got, offsets, f"offsets read back from server {survivor.id} after killing "
                                       f"server {controller.id}, the group's controller")
        figure(f"kafka {self.LIB} committed offsets read from the survivor {time.monotonic() - killed:.1f} s "
               f"after the controller's SIGKILL")

    def test_controller_kill_steady_members(self) -> None:
        """Three members heartbeat in a stable group; its controller is killed (SIGKILL). They find
        the other server (NOT_COORDINATOR, then FindCoordinator), which resumes the saved generation,
        and go on in the same generation with the same partitions: no member is told of a rebalance
        (docs/kafka.md, "Failover without a rebalance"). A library that cannot
        (REJOINS_AFTER_CONTROLLER_KILL) is held to what it does instead: rejoin_after_controller_kill."""
        group = unique("G")
        session = failover_session_timeout()
        ms = [self.member(self.LIB, f"{self.LIB}-steady-{n}", group, session_timeout=session,
                          rebalance_timeout=session) for n in range(3)]
        # Their rebalance timeout is the longer session timeout, not REBALANCE_TIMEOUT.
        held = self.wait_split(ms, settle_bound() - REBALANCE_TIMEOUT + session, "three members forming a group",
                               sizes=[2, 2, 2])
        before = self.groupctl_describe(group)
        ids = sorted(m["id"] for m in before["members"])
        self.assertEqual(sorted(m["client_id"] for m in before["members"]), sorted(m.name for m in ms), before)

        def memberships() -> list[tuple[int, str]] | None:
            got = [m.membership() for m in ms]
            if any(x is None for x in got) or sorted(i for _, i in got) != ids or len({g for g, _ in got}) != 1:
                return None
            return got
        # The split waited for every member's generation; their member ids are the described ones.
        joined = self.wait_for(f"every member to report one generation and the member ids {ids}", memberships,
                               HEARTBEAT_INTERVAL)
        marks = [len(m.snapshot()) for m in ms]
        controller = self.controller_of(group)
        self.assertEqual((before["controller"] or {}).get("id"), controller.id, before)
        survivor = [s for s in self.servers if s is not controller][0]
        controller.kill9()
        killed = time.monotonic()
        if self.REJOINS_AFTER_CONTROLLER_KILL:
            return self.rejoin_after_controller_kill(group, ms, marks, joined, controller, survivor, session)

        def resumed() -> dict | None:
            try:
                d = self.groupctl_describe(group)
            except (AssertionError, ValueError, subprocess.TimeoutExpired):
                return None  # no controller yet
            ok = ((d.get("controller") or {}).get("id") == survivor.id and d["generation"] == before["generation"]
                  and sorted(m["id"] for m in d["members"]) == ids)
            return d if ok else None
        # The survivor claims the group within the failover bound; it reads the saved generation on
        # the first Kafka request for it, which a member sends within a heartbeat interval.
        self.wait_for(f"server {survivor.id} to control the group with generation {before['generation']} and "
                      f"the members {ids}", resumed, failover_bound() + HEARTBEAT_INTERVAL)
        took = time.monotonic() - killed
        # Time passes to show that nothing happens. A member that does not heartbeat the survivor is
        # dropped when the session the survivor gave it on resuming ends, or its client gives up
        # its membership when its own session timer ends; the others then hear of the rebalance
        # within a heartbeat interval and the join window.
        time.sleep(session + HEARTBEAT_INTERVAL + JOIN_WINDOW_MAX)
        for m, mark, h, j in zip(ms, marks, held, joined):
            after = [e for e in m.snapshot()[mark:] if e["event"] in ("assigned", "revoked", "lost", "generation")]
            self.assertEqual(after, [], f"{m.name} saw its membership change after the controller's SIGKILL: "
                                        f"{m.describe()}")
            self.assertEqual(m.membership(), j, m.describe())
            self.assertEqual(m.holdings(), h, m.describe())
            self.assertTrue(m.proc.poll() is None, m.describe())
        after = self.groupctl_describe(group)
        self.assertEqual((after["controller"] or {}).get("id"), survivor.id, after)
        self.assertEqual(after["generation"], before["generation"], after)
        self.assertEqual(sorted(m["id"] for m in after["members"]), ids, after)
        held_after = {m["id"]: sorted(p["partition"] for p in m["held"]) for m in after["members"]}
        held_before = {m["id"]: sorted(p["partition"] for p in m["held"]) for m in before["members"]}
        self.assertEqual(held_after, held_before, after)
        figure(f"kafka {self.LIB} three members went on without a rebalance; server {survivor.id} resumed "
               f"their generation {took:.1f} s after the controller's SIGKILL")

    def rejoin_after_controller_kill(self, group: str, ms: list[Member], marks: list[int],
                                     joined: list[tuple[int, str]], controller: Server, survivor: Server,
                                     session: float) -> None:
        """KafkaJS (2.2.4) heartbeats the coordinator it found when it joined, and looks for another
        only when it joins again: with that server dead, its consumer retries, gives up with the
        connection refused (a crash) and is restarted by KafkaJS as a new member, without its member
        id. The group then rebalances once at the survivor: the new members split every partition
        in a new generation, and the old ones, which never come back, are dropped."""
        killed = time.monotonic()
        old_ids = [i for _, i in joined]
        dead = f"127.0.0.1:{controller.kafka_port}"
        for m, mark in zip(ms, marks):
            crash = self.wait_for(f"{m.name} to give up on the dead controller",
                                  lambda m=m, mark=mark: m.has("crash", mark), kafkajs_restart_bound())
            self.assertIn(dead, crash["error"], f"{m.name}'s first crash after the SIGKILL: {m.describe()}")
        # The restarted members join the survivor; the old members are dropped after their rebalance
        # timeout (the session timeout here) or when their sessions end, whichever comes first. A
        # member tells its generation with its next heartbeat.
        def rejoined() -> tuple[list[tuple[int, str]], list[set[int]]] | None:
            if any(m.has("assigned", mark) is None for m, mark in zip(ms, marks)):
                return None
            got = [m.membership() for m in ms]
            if any(x is None or x[1] in old_ids for x in got) or len({g for g, _ in got}) != 1:
                return None
            held = split_of(ms, [2, 2, 2])
            return (got, held) if held else None
        now, held = self.wait_for("the restarted members to split every partition again in one generation, "
                                  "each under a new member id", rejoined,
                                  settle_bound() - REBALANCE_TIMEOUT + session + HEARTBEAT_INTERVAL)
        self.assertNotEqual(now[0][0], joined[0][0], "the rejoin made no new generation")
        d = self.groupctl_describe(group)
        self.assertEqual((d["controller"] or {}).get("id"), survivor.id, d)
        self.assertEqual(sorted(m["id"] for m in d["members"]), sorted(i for _, i in now), d)
        figure(f"kafka {self.LIB} members rejoined as new members after the controller's SIGKILL and split "
               f"{[sorted(h) for h in held]} within {time.monotonic() - killed:.1f} s")

    def read_committed(self, group: str, server: Server, bound: float) -> dict:
        """The group's committed offsets as the library reads them through ``server`` alone,
        retried until design_bound(bound) passes; a reader is stopped by its PID at the deadline."""
        until = time.monotonic() + design_bound(bound)
        last = ""
        while time.monotonic() < until:
            left = max(1.0, until - time.monotonic())
            args = member_command(self.LIB) + [
                "--bootstrap", server.kafka_address, "--group", group, "--topic", self.topic,
                "--partitions", str(TOPIC_PARTITIONS), "--client-id", f"{self.LIB}-reader",
                "--read-committed"]
            if self.LIB != "kafka-python":
                args += ["--deadline-s", f"{left:.1f}"]
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(HERE))
            try:
                out, err = proc.communicate(timeout=left + 5)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                out, err = proc.communicate(timeout=10)
                last = f"the reader did not answer; stderr {err[-1500:]!r}"
                continue
            for line in out.splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("event") == "committed_offsets":
                    return {k: v for k, v in e["offsets"].items()}
                last = line
            last = f"{last}; exit {proc.returncode}; stderr {err[-1500:]!r}"
        self.fail(f"no committed offsets read within {design_bound(bound):.1f} s: {last}")


class KafkaPythonGroupTest(GroupScenarios, KafkaPortTest):
    LIB = "kafka-python"


class ConfluentGroupTest(GroupScenarios, KafkaPortTest):
    LIB = "confluent"


class KafkaJsGroupTest(GroupScenarios, KafkaPortTest):
    LIB = "kafkajs"
    REJOINS_AFTER_CONTROLLER_KILL = True


# ---- admin ------------------------------------------------------------------------------------------

class AdminTest(KafkaPortTest):

    def two_members(self, lib: str, group: str) -> list[Member]:
        ms = [self.member(lib, f"{lib}-admin-{n}", group) for n in range(2)]
        self.wait_split(ms, settle_bound(), "two members forming a group")
        return ms

    def test_kafka_python_admin(self) -> None:
        from kafka.admin import KafkaAdminClient
        group = unique("G")
        ms = self.two_members("kafka-python", group)
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap().split(","), client_id="kafka-python-admin",
                                 request_timeout_ms=round(design_bound(ZK_SESSION_TIMEOUT) * 1000))
        try:
            listed = admin.list_consumer_groups()
            self.assertIn((group, "consumer"), listed)
            (d,) = admin.describe_consumer_groups([group])
            self.assertEqual((d.error_code, d.group, d.state, d.protocol_type, d.protocol),
                             (0, group, "Stable", "consumer", "range"))
            self.assertEqual(sorted(m.client_id for m in d.members), ["kafka-python-admin-0", "kafka-python-admin-1"])
            assigned = []
            for m in d.members:
                for topic, partitions in m.member_assignment.assignment:
                    self.assertEqual(topic, self.topic)
                    assigned += partitions
            self.assertEqual(sorted(assigned), sorted(ALL_PARTITIONS), "the described assignments")
            # A group with members is not deleted.
            (result,) = admin.delete_consumer_groups([group])
            self.assertEqual(result[0], group)
            self.assertEqual(result[1].errno, 68, f"deleting a group with members: {result[1]}")
            for m in ms:
                self.assert_clean_exit(m, design_bound(REBALANCE_TIMEOUT))
            self.wait_for("the group to be Empty after its members left",
                          lambda: admin.describe_consumer_groups([group])[0].state == "Empty", settle_bound())
            (result,) = admin.delete_consumer_groups([group])
            self.assertEqual((result[0], result[1].errno), (group, 0), f"deleting the empty group: {result[1]}")
            self.assertNotIn(group, [g for g, _ in admin.list_consumer_groups()])
        finally:
            admin.close()

    def test_confluent_admin(self) -> None:
        """The binding's list_groups (librdkafka's ListGroups then DescribeGroups), and librdkafka
        2.0.2's ListConsumerGroups, DescribeConsumerGroups and DeleteGroups."""
        from confluent_kafka.admin import AdminClient
        group = unique("G")
        ms = self.two_members("confluent", group)
        admin = AdminClient({"bootstrap.servers": self.bootstrap(), "client.id": "confluent-admin"})
        rd = Rdkafka(self.bootstrap())
        timeout = design_bound(ZK_SESSION_TIMEOUT)
        try:
            self.assertIn(group, [g.id for g in admin.list_groups(timeout=timeout)])
            (g,) = admin.list_groups(group=group, timeout=timeout)
            self.assertEqual((g.id, g.error, g.state, g.protocol_type, g.protocol),
                             (group, None, "Stable", "consumer", "range"))
            self.assertEqual(sorted(m.client_id for m in g.members), ["confluent-admin-0", "confluent-admin-1"])

            # ListGroups up to version 2 carries no state (version 4 does): librdkafka lists the
            # group with state Unknown.
            self.assertIn(group, rd.list_groups(timeout))
            d = rd.describe_group(group, timeout)
            self.assertEqual((d["group"], d["error"], d["state"], d["assignor"]), (group, (0, ""), "Stable", "range"))
            controller = self.controller_of(group)
            self.assertEqual(d["coordinator"], (controller.id, "127.0.0.1", controller.kafka_port))
            self.assertEqual(sorted(m["client_id"] for m in d["members"]), ["confluent-admin-0", "confluent-admin-1"])
            assigned = sorted(p for m in d["members"] for t, p in m["partitions"] if t == self.topic)
            self.assertEqual(assigned, sorted(ALL_PARTITIONS), f"the described assignments: {d}")

            code, text = rd.delete_group(group, timeout)
            self.assertEqual(code, 68, f"deleting a group with members: {code} {text}")
            for m in ms:
                self.assert_clean_exit(m, design_bound(REBALANCE_TIMEOUT))
            self.wait_for("the group to be Empty after its members left",
                          lambda: rd.describe_group(group, timeout)["state"] == "Empty", settle_bound())
            self.assertEqual(admin.list_groups(group=group, timeout=timeout)[0].state, "Empty")
            code, text = rd.delete_group(group, timeout)
            self.assertEqual(code, 0, f"deleting the empty group: {code} {text}")
            self.assertNotIn(group, rd.list_groups(timeout))
            self.assertNotIn(group, [x.id for x in admin.list_groups(timeout=timeout)])
        finally:
            rd.close()

    def kafkajs_admin(self, op: str, *groups: str) -> dict:
        """One call of KafkaJS's admin client (js/admin.js: list, describe or delete) through the
        running servers: its JSON result, or {"error", "name", "code", "type", ...} when KafkaJS
        threw. Each request is bounded as the other admin clients' are; each of its 1 + 1 tries
        (--retries 1) may take that long, and the run as a whole is a hang guard besides."""
        request = design_bound(ZK_SESSION_TIMEOUT)
        args = [NODE, str(JS_DIR / "admin.js"), "--bootstrap", self.bootstrap(), "--client-id", "kafkajs-admin",
                "--request-timeout-ms", str(round(request * 1000)), "--retries", "1", op, *groups]
        r = subprocess.run(args, capture_output=True, text=True, cwd=str(HERE),
                           timeout=2 * request + design_bound(COMMAND_TIMEOUT))
        lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
        if r.returncode not in (0, 2) or len(lines) != 1:
            raise AssertionError(f"admin.js {op} {' '.join(groups)} exited {r.returncode}: "
                                 f"{r.stdout}{r.stderr[-1500:]}")
        got = json.loads(lines[0])
        self.assertEqual(got["op"], op, got)
        self.assertEqual("error" in got, r.returncode == 2, got)
        return got

    def test_kafkajs_admin(self) -> None:
        """KafkaJS 2.2.4's admin client (js/admin.js): listGroups, describeGroups and deleteGroups.
        KafkaJS's consumers use its round-robin assignor, protocol name "RoundRobinAssigner"."""
        group = unique("G")
        ms = self.two_members("kafkajs", group)
        # A server lists the groups it controls; KafkaJS asks every broker and merges the answers:
        # the group is listed once.
        listed = self.kafkajs_admin("list")
        self.assertNotIn("error", listed)
        self.assertEqual([g for g in listed["groups"] if g["group_id"] == group],
                         [{"group_id": group, "protocol_type": "consumer"}], listed)

        described = self.kafkajs_admin("describe", group)
        self.assertEqual(len(described.get("groups", [])), 1, described)
        d = described["groups"][0]
        self.assertEqual((d["error_code"], d["group_id"], d["state"], d["protocol_type"], d["protocol"]),
                         (0, group, "Stable", "consumer", "RoundRobinAssigner"), d)
        self.assertEqual(sorted(m["client_id"] for m in d["members"]), ["kafkajs-admin-0", "kafkajs-admin-1"], d)
        # The described members are the ones the members say they are, each subscribed to the topic
        # and assigned what it owns.
        owned = {m.membership()[1]: sorted(m.holdings()) for m in ms}
        self.assertEqual({m["member_id"]: m["assignment"].get(self.topic) for m in d["members"]}, owned, d)
        for m in d["members"]:
            self.assertEqual(m["topics"], [self.topic], d)
            self.assertEqual(sorted(m["assignment"]), [self.topic], d)

        # A group with members is not deleted: KafkaJS throws KafkaJSDeleteGroupsError, the group
        # refused with NON_EMPTY_GROUP (68).
        refused = self.kafkajs_admin("delete", group)
        self.assertEqual(refused.get("name"), "KafkaJSDeleteGroupsError", f"deleting a group with members: {refused}")
        self.assertEqual(refused.get("groups"), [{"group_id": group, "error_code": 68, "type": "NON_EMPTY_GROUP"}],
                         f"deleting a group with members: {refused}")
        for m in ms:
            self.assert_clean_exit(m, design_bound(REBALANCE_TIMEOUT))

        def empty() -> dict | None:
            got = self.kafkajs_admin("describe", group)
            return got if [(g["state"], g["members"]) for g in got.get("groups", [])] == [("Empty", [])] else None
        self.wait_for("the group to be Empty after its members left", empty, settle_bound())
        deleted = self.kafkajs_admin("delete", group)
        self.assertEqual(deleted, {"op": "delete", "results": [{"group_id": group, "error_code": 0}]},
                         "deleting the empty group")
        # Looking a group up makes nothing: the deleted group, and a name never used, are
        # described Dead (KafkaJS asks FindCoordinator first) and listed by no server after.
        typo = group + "-typo"
        gone = self.kafkajs_admin("describe", group, typo)
        self.assertEqual(sorted((g["group_id"], g["error_code"], g["state"]) for g in gone.get("groups", [])),
                         sorted([(group, 0, "Dead"), (typo, 0, "Dead")]), gone)
        listed = self.kafkajs_admin("list")
        self.assertNotIn("error", listed)
        self.assertNotIn(group, [g["group_id"] for g in listed["groups"]])
        self.assertNotIn(typo, [g["group_id"] for g in listed["groups"]])


# ---- mixed groups, assignors, static members, kcat --------------------------------------------------------

class MixedTest(KafkaPortTest):

    def test_mixed_range_group(self) -> None:
        """librdkafka and kafka-python members in one group, both with the "range" assignor: each
        member holds a contiguous range of 2 partitions."""
        group = unique("G")
        ms = [self.member("kafka-python", "mixed-kafka-python-0", group),
              self.member("confluent", "mixed-confluent-1", group, ["--assignor", "range"]),
              self.member("kafka-python", "mixed-kafka-python-2", group)]
        held = self.wait_split(ms, settle_bound(), "a mixed group forming", sizes=[2, 2, 2])
        for h in held:
            lo = min(h)
            self.assertEqual(sorted(h), [lo, lo + 1], f"range assigns contiguous partitions: {held}")

    def test_cooperative_sticky(self) -> None:
        """A third cooperative-sticky member takes only what must move; the others keep the rest
        without revoking it."""
        group = unique("G")
        coop = ["--assignor", "cooperative-sticky"]
        first = [self.member("confluent", f"coop-{n}", group, coop) for n in range(2)]
        before = self.wait_split(first, settle_bound(), "two cooperative members forming", sizes=[3, 3])
        marks = [len(m.snapshot()) for m in first]
        third = self.member("confluent", "coop-2", group, coop)
        after = self.wait_split(first + [third], 2 * settle_bound(), "the third cooperative member joining",
                                sizes=[2, 2, 2])
        for m, b, a, mark in zip(first, before, after, marks):
            self.assertTrue(a <= b, f"{m.name} gained partitions it did not own: {sorted(b)} -> {sorted(a)}")
            events = m.snapshot()[mark:]
            revoked = set()
            for e in events:
                self.assertNotEqual(e["event"], "lost", m.describe())
                if e["event"] == "revoked":
                    revoked |= set(e["partitions"])
            self.assertEqual(revoked, b - a, f"{m.name} revoked more than moved: {m.describe()}")
        self.assertIsNone(third.has("revoked"), third.describe())

    def test_static_member_restart(self) -> None:
        """A static member (group.instance.id) restarted within its session timeout gets its
        partitions back in the same generation; the others see no rebalance."""
        group = unique("G")
        static = dict(session_timeout=STATIC_SESSION_TIMEOUT, rebalance_timeout=STATIC_SESSION_TIMEOUT)
        # Their rebalance timeout is the static session timeout, not REBALANCE_TIMEOUT.
        bound = settle_bound() - REBALANCE_TIMEOUT + STATIC_SESSION_TIMEOUT
        ms = [self.member("confluent", f"static-{n}", group, ["--instance-id", f"static-{n}"], **static)
              for n in range(3)]
        held = self.wait_split(ms, bound, "three static members forming", sizes=[2, 2, 2])
        generation = self.groupctl_describe(group)["generation"]
        marks = [len(m.snapshot()) for m in ms[:2]]
        closed = time.monotonic()
        self.assert_clean_exit(ms[2], design_bound(REBALANCE_TIMEOUT))
        again = self.member("confluent", "static-2-again", group, ["--instance-id", "static-2"], **static)
        self.wait_for("the restarted static member's assignment", lambda: again.holdings(), bound)
        back = time.monotonic() - closed
        self.assertLess(back, STATIC_SESSION_TIMEOUT, "the restart took longer than the session timeout: "
                        "the scenario needs a restart within it")
        self.assertEqual(again.holdings(), held[2], again.describe())
        # Time passes to show that nothing happens: a rebalance would reach the others within a
        # heartbeat interval plus the join window.
        time.sleep(JOIN_WINDOW_MAX + 2 * HEARTBEAT_INTERVAL)
        for m, mark in zip(ms[:2], marks):
            self.assertEqual(m.snapshot()[mark:], [], f"{m.name} saw a rebalance: {m.describe()}")
        self.assertEqual(self.groupctl_describe(group)["generation"], generation)
        figure(f"kafka static member back with its partitions {back:.1f} s after closing")

    def test_kcat_quickstart(self) -> None:
        """kcat -L lists both servers as brokers and the topic; kcat -G forms a group that owns
        every partition."""
        meta = json.loads(run([KCAT, "-b", self.servers[0].kafka_address, "-L", "-J",
                               "-m", str(round(design_bound(ZK_SESSION_TIMEOUT)))]).stdout)
        brokers = {(b["id"], b["name"]) for b in meta["brokers"]}
        self.assertEqual(brokers, {(s.id, s.kafka_address) for s in self.servers})
        topics = {t["topic"]: t for t in meta["topics"]}
        self.assertIn(self.topic, topics)
        self.assertEqual(sorted(p["partition"] for p in topics[self.topic]["partitions"]), sorted(ALL_PARTITIONS))

        group = unique("kcat")
        lines: list[str] = []
        proc = subprocess.Popen([KCAT, "-b", self.servers[0].kafka_address, "-G", group, self.topic],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
        try:
            def assigned_all() -> bool:
                for line in list(lines):
                    if "rebalanced" in line and "assigned:" in line:
                        got = {int(x) for x in re.findall(r"\[(\d+)\]", line.split("assigned:", 1)[1])}
                        if got == ALL_PARTITIONS:
                            return True
                return False
            if not eventually_within(design_bound(settle_bound()), assigned_all):
                self.fail(f"kcat -G did not get all partitions; its stderr: {''.join(lines)[-3000:]}")
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=design_bound(REBALANCE_TIMEOUT))
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
        self.assertEqual(proc.returncode, 0, f"kcat exited {proc.returncode}: {''.join(lines)[-3000:]}")

    def test_invalid_group_id(self) -> None:
        """A group id that is no valid groupcoord name is refused with INVALID_GROUP_ID (24)."""
        for bad in ("bad group", "a/b", "..", "x" * 250):
            error, _, _, _ = find_coordinator(self.servers[0].kafka_port, bad, design_bound(ZK_SESSION_TIMEOUT))
            self.assertEqual(error, 24, f"FindCoordinator({bad!r})")


# ---- SASL on the Kafka port ------------------------------------------------------------------------

SASL_LIBS = ("kafka-python", "confluent", "kafkajs")
# The permissions file: each team's user may use only its own prefix (docs/kafka.md, "Security";
# README, "Many teams on one fleet"). FindCoordinator is judged as CreateGroup, hence "create".
SASL_RULES = ("allow user:teamA-svc join,commit,fetch,describe,create prefix:teamA-\n"
              "allow user:teamB-svc join,commit,fetch,describe,create prefix:teamB-\n")
GROUP_AUTHORIZATION_FAILED = 30


# How each library reports a wrong secret. librdkafka and KafkaJS use SaslAuthenticate, so they
# get SASL_AUTHENTICATION_FAILED with groupcoord's ErrorMessage: librdkafka through its error
# callback as _AUTHENTICATION (-169), KafkaJS by throwing KafkaJSSASLAuthenticationError from
# connect(). kafka-python 2.0.2 sends the SCRAM tokens as bare frames (SaslHandshake v0), after which
# a refused client-final is closed without an answer (docs/protocol.md, "Security on the Kafka
# port"): kafka-python logs the connection lost while it was authenticating, and retries.
AUTH_ERRORS = {
    "kafka-python": re.compile(r"<authenticating>.*Error receiving reply from server|AuthenticationFailed"),
    "confluent": re.compile(r"_AUTHENTICATION.*Authentication failed: invalid credentials with SASL mechanism "
                            r"SCRAM-SHA-256"),
    "kafkajs": re.compile(r"KafkaJSSASLAuthenticationError.*Authentication failed: invalid credentials with SASL "
                          r"mechanism SCRAM-SHA-256"),
}


def auth_error(m: Member) -> dict | None:
    """The member's first report of a refused SASL exchange, in its library's form (AUTH_ERRORS)."""
    for e in m.snapshot():
        if e["event"] in ("error", "crash") and AUTH_ERRORS[m.lib].search(str(e.get("error", ""))):
            return e
    return None


def group_refusal(m: Member) -> dict | None:
    """The member's first report of GROUP_AUTHORIZATION_FAILED (30), by code."""
    for e in m.snapshot():
        if e["event"] in ("error", "crash") and e.get("code") == GROUP_AUTHORIZATION_FAILED:
            return e
    return None


class TlsTest(KafkaPortTest):
    """Both servers with TLS (--tls-certificate-file, --tls-key-file): the Kafka port speaks TLS as
    the binary port does, and every client connects with SSL, trusting the test's CA."""

    def setUp(self) -> None:
        self.tls_dir = tempfile.mkdtemp(prefix="groupcoord-kafka-tls-")
        self.addCleanup(shutil.rmtree, self.tls_dir, True)
        d = self.tls_dir
        Path(d, "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        for step in (
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/ca.key", "-out",
                 f"{d}/ca.pem", "-days", "2", "-subj", "/CN=groupcoord Kafka test CA"],
                ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/server.key", "-out",
                 f"{d}/server.csr", "-subj", "/CN=127.0.0.1"],
                ["openssl", "x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
                 "-CAcreateserial", "-out", f"{d}/server.pem", "-days", "2", "-extfile", f"{d}/san.cnf"]):
            r = subprocess.run(step, capture_output=True, text=True, timeout=design_bound(COMMAND_TIMEOUT))
            if r.returncode != 0:
                self.fail(f"{' '.join(step)} exited {r.returncode}: {r.stderr}")
        super().setUp()

    def server_args(self) -> list[str]:
        return [f"--tls-certificate-file={self.tls_dir}/server.pem", f"--tls-key-file={self.tls_dir}/server.key"]

    def test_each_client_over_tls(self) -> None:
        """Each library speaks SSL to the Kafka port; its member alone gets every partition."""
        started = time.monotonic()
        ms = [self.member(lib, f"{lib}-tls", unique(f"tls-{lib}"), ["--ssl-ca", f"{self.tls_dir}/ca.pem"])
              for lib in SASL_LIBS]
        for m in ms:
            self.wait_split([m], settle_bound(), f"{m.lib} over TLS")
        figure(f"kafka tls: {[m.lib for m in ms]} each got all {TOPIC_PARTITIONS} partitions within "
               f"{time.monotonic() - started:.1f} s")
        for m in ms:
            self.assert_clean_exit(m, design_bound(REBALANCE_TIMEOUT))

    def test_plaintext_client_gets_nowhere(self) -> None:
        """A client that does not speak TLS to the TLS port never gets an assignment, and the
        servers carry on."""
        m = self.member("confluent", "confluent-plaintext", unique("tls-plain"))
        # The time a new group takes to form (claim, join window, initial delay) to get an
        # assignment it must not get.
        time.sleep(CLAIM_FALLBACK + JOIN_WINDOW_MAX + INITIAL_REBALANCE_DELAY)
        self.assertIsNone(m.has("assigned"), m.describe())
        for s in self.servers:
            self.assertTrue(s.running(), f"server {s.id} exited: {s.log()[-2000:]}")


class SaslTest(KafkaPortTest):
    """Both servers with --auth-credentials-file and --auth-permissions-file: every client speaks
    SASL_PLAINTEXT with SCRAM-SHA-256 (docs/protocol.md, "Security on the Kafka port")."""

    USERS = {"teamA-svc": "teamA-secret-1", "teamB-svc": "teamB-secret-2"}

    def setUp(self) -> None:
        self.auth_dir = tempfile.mkdtemp(prefix="groupcoord-kafka-sasl-")
        self.addCleanup(shutil.rmtree, self.auth_dir, True)
        lines = []
        for user, secret in self.USERS.items():
            # Fewer PBKDF2 iterations than the default keep each SCRAM exchange quick here.
            r = subprocess.run([GROUPCTL, "auth", "hash", "--user", user, "--role", "member", "--iterations", "10000"],
                               input=secret + "\n", capture_output=True, text=True, timeout=design_bound(COMMAND_TIMEOUT))
            if r.returncode != 0:
                self.fail(f"groupctl auth hash exited {r.returncode}: {r.stderr}")
            lines.append(r.stdout.strip())
        Path(self.auth_dir, "credentials").write_text("\n".join(lines) + "\n")
        Path(self.auth_dir, "permissions").write_text(SASL_RULES)
        super().setUp()

    def server_args(self) -> list[str]:
        return [f"--auth-credentials-file={self.auth_dir}/credentials",
                f"--auth-permissions-file={self.auth_dir}/permissions"]

    def sasl_member(self, lib: str, name: str, group: str, user: str, secret: str) -> Member:
        return self.member(lib, name, group, ["--sasl-mechanism", "SCRAM-SHA-256", "--sasl-username", user,
                                              "--sasl-password", secret])

    def test_scram_each_client(self) -> None:
        """Each library authenticates with SCRAM-SHA-256; its member alone gets every partition."""
        started = time.monotonic()
        ms = [self.sasl_member(lib, f"{lib}-scram", unique(f"teamA-{lib}"), "teamA-svc", self.USERS["teamA-svc"])
              for lib in SASL_LIBS]
        for m in ms:
            self.wait_split([m], settle_bound(), f"{m.lib} with SCRAM-SHA-256")
            self.assertIsNone(auth_error(m), m.describe())
        figure(f"kafka sasl SCRAM-SHA-256: {[m.lib for m in ms]} each got all {TOPIC_PARTITIONS} partitions "
               f"within {time.monotonic() - started:.1f} s")
        for m in ms:
            self.assert_clean_exit(m, design_bound(REBALANCE_TIMEOUT))

    def test_wrong_secret_refused(self) -> None:
        """A wrong secret: SASL_AUTHENTICATION_FAILED and the connection closes; the member reports
        an authentication error and never gets an assignment."""
        ms = [self.sasl_member(lib, f"{lib}-wrong", unique(f"teamA-{lib}"), "teamA-svc", "not-the-secret")
              for lib in SASL_LIBS]
        # Refusals from one address are throttled (at most 5 s between checks): the bound is a
        # settle, which covers several of them.
        for m in ms:
            got = self.wait_for(f"{m.lib} to report an authentication error", lambda m=m: auth_error(m),
                                settle_bound())
            figure(f"kafka sasl wrong secret: {m.lib} reported {got.get('op')}: {got.get('error')}; all its errors: "
                   f"{[e.get('error') for e in m.snapshot() if e['event'] in ('error', 'crash')][:6]}")
        # A refused member holds nothing, however long it keeps trying: it is given the time a new
        # group takes to form (claim, join window, initial delay) to get an assignment it must not get.
        time.sleep(CLAIM_FALLBACK + JOIN_WINDOW_MAX + INITIAL_REBALANCE_DELAY)
        for m in ms:
            self.assertIsNone(m.has("assigned"), m.describe())
        for s in self.servers:
            self.assertTrue(s.running(), f"server {s.id} exited: {s.log()[-2000:]}")

    def test_other_tenants_group_refused(self) -> None:
        """teamA-svc may use only teamA- groups: a teamB- group is answered GROUP_AUTHORIZATION_FAILED
        (30), while its own group forms."""
        own = self.sasl_member("kafka-python", "teamA-own", unique("teamA-x"), "teamA-svc", self.USERS["teamA-svc"])
        others = [self.sasl_member(lib, f"{lib}-trespasser", unique("teamB-x"), "teamA-svc",
                                   self.USERS["teamA-svc"]) for lib in SASL_LIBS]
        for m in others:
            got = self.wait_for(f"{m.lib} to report GROUP_AUTHORIZATION_FAILED", lambda m=m: group_refusal(m),
                                settle_bound())
            figure(f"kafka sasl other tenant's group: {m.lib} reported {got.get('op') or got['event']}: "
                   f"{got.get('error')}")
        self.wait_split([own], settle_bound(), "teamA-svc's member of its own teamA- group")
        for m in others:
            self.assertIsNone(m.has("assigned"), m.describe())
            self.assertIsNone(auth_error(m), m.describe())


if __name__ == "__main__":
    unittest.main(verbosity=2)
