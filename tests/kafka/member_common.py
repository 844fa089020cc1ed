"""What the Python member scripts of tests/kafka share (member_confluent.py,
member_kafka_python.py): their options, their JSON events on standard output
and their loop of polls and commands from standard input.

Events are JSON objects, one a line, keys sorted. Commands are JSON objects,
one a line: {"cmd":"commit","offsets":{"P":O}} or {"cmd":"close"}. The end of
standard input and SIGTERM close too.

Both scripts report their group membership as the client sees it right after
every "assigned" event and whenever it changes (read after every poll):

  {"event":"generation","generation":N,"member_id":"..."}

(generation -1 and an empty member id: the client holds no membership, as
before its first join or after it dropped one). So the last such event after
an assignment names the generation it belongs to, and a failover the members
ride through without a rebalance shows none: the driver asserts on both.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import struct
import sys
import threading
from typing import Callable


def emit(**fields) -> None:
    """One event: a JSON line on standard output, flushed."""
    sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


def parser(client_id: str) -> argparse.ArgumentParser:
    """The options every member script takes; a script adds its own (the assignor among them)."""
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--client-id", default=client_id)
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--heartbeat-ms", type=int, default=1000)
    p.add_argument("--rebalance-timeout-ms", type=int, default=10000)
    p.add_argument("--read-committed", action="store_true")
    p.add_argument("--ssl-ca", default="", help="PEM CA file: TLS to the Kafka port, trusting it (SSL, or SASL_SSL)")
    p.add_argument("--sasl-mechanism", default="", help="SCRAM-SHA-256 or PLAIN: SASL_PLAINTEXT with it")
    p.add_argument("--sasl-username", default="")
    p.add_argument("--sasl-password", default=os.environ.get("GROUPCOORD_SASL_PASSWORD", ""),
                   help="default: $GROUPCOORD_SASL_PASSWORD")
    return p


class DistinctErrors:
    """Reports each distinct error text once as {"event":"error","op":...}, at most ``limit`` of
    them: a client that retries by itself repeats the same error for as long as it retries."""

    def __init__(self, limit: int = 50) -> None:
        self.seen: set[str] = set()
        self.limit = limit

    def report(self, op: str, text: str, **fields) -> None:
        if text not in self.seen and len(self.seen) < self.limit:
            self.seen.add(text)
            emit(event="error", op=op, error=text, **fields)


class Membership:
    """Emits {"event":"generation"} when the client's (generation, member id) changes, or always
    with ``force`` (after an assignment)."""

    def __init__(self) -> None:
        self.last: tuple[int, str] | None = None

    def observe(self, generation: int | None, member_id: str | None, force: bool = False) -> None:
        now = (-1 if generation is None else int(generation), member_id or "")
        if force or now != self.last:
            self.last = now
            emit(event="generation", generation=now[0], member_id=now[1])


def _read_commands(commands: "queue.Queue[dict]") -> None:
    for line in sys.stdin:
        line = line.strip()
        if line:
            commands.put(json.loads(line))
    commands.put({"cmd": "close"})  # the driver went away: leave


def command_loop(poll: Callable[[], None], commit: Callable[[dict], None], close: Callable[[], None],
                 others: dict[str, Callable[[dict], None]] | None = None) -> int:
    """Polls the consumer (``poll`` returns within about 100 ms) and serves the driver's commands
    between polls: ``commit`` gets a commit command's {"P":O} and emits what came of it; ``close``
    leaves the group, after which {"event":"closed"} is emitted and 0 returned. ``others`` serves
    a script's own commands by name, each handler given the whole command."""
    commands: "queue.Queue[dict]" = queue.Queue()
    threading.Thread(target=_read_commands, args=(commands,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: commands.put({"cmd": "close"}))
    while True:
        poll()
        try:
            command = commands.get_nowait()
        except queue.Empty:
            continue
        if command["cmd"] == "close":
            close()
            emit(event="closed")
            return 0
        if command["cmd"] == "commit":
            commit(command["offsets"])
        elif others and command["cmd"] in others:
            others[command["cmd"]](command)
        else:
            emit(event="error", op="command", error=f"unknown command {command['cmd']!r}")


# rd_kafka_consumer_group_metadata_write's layout (librdkafka 2.0.2 and 2.15.1): this magic, the
# generation id (with the consumer protocol, the member epoch) as a native int32, then the group id
# and the member id, each NUL-terminated (then the group instance id's null flag and text).
CGMD_MAGIC = b"CGMDv2:"


def membership_of(consumer) -> tuple[int, str] | None:
    """(generation or member epoch, member id) as librdkafka holds them now, from a
    confluent-kafka Consumer; None if the metadata is not in the layout this script knows."""
    data = consumer.consumer_group_metadata()
    if not isinstance(data, bytes) or not data.startswith(CGMD_MAGIC):
        return None
    at = len(CGMD_MAGIC)
    (generation,) = struct.unpack_from("=i", data, at)
    at += 4
    group_end = data.find(b"\0", at)
    member_end = data.find(b"\0", group_end + 1)
    if group_end < 0 or member_end < 0:
        return None
    return generation, data[group_end + 1:member_end].decode(errors="replace")
