#!/usr/bin/env python3
"""One kafka-python consumer in a group on groupcoord's Kafka port, driven by
tests/kafka/driver.py. Standard output carries one JSON line per event:

  {"event":"assigned","partitions":[...],"generation":N}   after every assignment
  {"event":"revoked","partitions":[...]}                    before a rebalance takes them
  {"event":"committed","offsets":{"P":O,...}}              a commit the driver asked for succeeded
  {"event":"committed_offsets","offsets":{"P":O|null,...}}  --read-committed: what the group committed
  {"event":"error","op":...,"error":...}                    something the driver asked for failed
  {"event":"closed"}                                        after a graceful close

Standard input takes one JSON command a line: {"cmd":"commit","offsets":{"P":O}}
or {"cmd":"close"}. SIGTERM closes too. With --read-committed it joins no
group: it reads the group's committed offsets of every partition once
(OffsetFetch through committed()) and exits.

--sasl-mechanism SCRAM-SHA-256 (or PLAIN) connects with SASL_PLAINTEXT as
--sasl-username, the secret from --sasl-password or $GROUPCOORD_SASL_PASSWORD.
With SASL, errors kafka-python only logs (a connection lost while authenticating among
them) come as {"event":"error","op":"log"}, each distinct one once; errors
poll() raises (GroupAuthorizationFailedError) as {"event":"error","op":"poll",
"code":N}, and the member keeps polling.
"""

from __future__ import annotations

import argparse
import json
import os
import logging
import queue
import signal
import sys
import threading
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.structs import OffsetAndMetadata

ASSIGNORS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


class ErrorLog(logging.Handler):
    """kafka-python logs what goes wrong on a connection (a refused SASL exchange among it) and
    retries: each distinct error line becomes one {"event":"error","op":"log"}."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.seen: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:  # noqa: A003 - logging's name
        text = record.getMessage()
        if text not in self.seen and len(self.seen) < 50:
            self.seen.add(text)
            emit(event="error", op="log", error=text)


def read_commands(commands: "queue.Queue[dict]") -> None:
    for line in sys.stdin:
        line = line.strip()
        if line:
            commands.put(json.loads(line))
    commands.put({"cmd": "close"})  # the driver went away: leave


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--client-id", default="kafka-python-member")
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--heartbeat-ms", type=int, default=1000)
    p.add_argument("--rebalance-timeout-ms", type=int, default=10000)
    p.add_argument("--assignor", default="range", choices=sorted(ASSIGNORS))
    p.add_argument("--read-committed", action="store_true")
    p.add_argument("--sasl-mechanism", default="", help="SCRAM-SHA-256 or PLAIN: SASL_PLAINTEXT with it")
    p.add_argument("--sasl-username", default="")
    p.add_argument("--sasl-password", default=os.environ.get("GROUPCOORD_SASL_PASSWORD", ""),
                   help="default: $GROUPCOORD_SASL_PASSWORD")
    a = p.parse_args()
    if a.sasl_mechanism:  # only then: other scenarios read "error" events as answers to their commands
        logging.getLogger("kafka").addHandler(ErrorLog())

    common = dict(bootstrap_servers=a.bootstrap.split(","), group_id=a.group, client_id=a.client_id,
                  enable_auto_commit=False, session_timeout_ms=a.session_timeout_ms,
                  heartbeat_interval_ms=a.heartbeat_ms, max_poll_interval_ms=a.rebalance_timeout_ms,
                  request_timeout_ms=a.session_timeout_ms + 5000, auto_offset_reset="earliest",
                  partition_assignment_strategy=[ASSIGNORS[a.assignor]])
    if a.sasl_mechanism:
        common.update(security_protocol="SASL_PLAINTEXT", sasl_mechanism=a.sasl_mechanism,
                      sasl_plain_username=a.sasl_username, sasl_plain_password=a.sasl_password)

    if a.read_committed:
        consumer = KafkaConsumer(**common)
        offsets = {}
        for n in range(a.partitions):
            offsets[str(n)] = consumer.committed(TopicPartition(a.topic, n))
        emit(event="committed_offsets", offsets=offsets)
        consumer.close(autocommit=False)
        return 0

    try:
        consumer = KafkaConsumer(**common)
    except Exception as e:  # noqa: BLE001 - the driver reads and asserts it
        emit(event="error", op="start", error=f"{type(e).__name__}: {e}", code=getattr(e, "errno", None))
        return 1

    def generation() -> int | None:
        try:  # kafka-python keeps the generation on its coordinator only
            return consumer._coordinator._generation.generation_id  # noqa: SLF001
        except AttributeError:
            return None

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit(event="revoked", partitions=sorted(tp.partition for tp in revoked if tp.topic == a.topic))

        def on_partitions_assigned(self, assigned):
            emit(event="assigned", partitions=sorted(tp.partition for tp in assigned if tp.topic == a.topic),
                 generation=generation())

    consumer.subscribe([a.topic], listener=Listener())
    commands: "queue.Queue[dict]" = queue.Queue()
    threading.Thread(target=read_commands, args=(commands,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: commands.put({"cmd": "close"}))

    last_poll_error = ""
    while True:
        try:
            consumer.poll(timeout_ms=100)
        except Exception as e:  # noqa: BLE001 - e.g. GroupAuthorizationFailedError; the driver asserts it
            if not a.sasl_mechanism:
                raise
            text = f"{type(e).__name__}: {e}"
            if text != last_poll_error:
                last_poll_error = text
                emit(event="error", op="poll", error=text, code=getattr(e, "errno", None))
            time.sleep(0.1)
        try:
            command = commands.get_nowait()
        except queue.Empty:
            continue
        if command["cmd"] == "close":
            consumer.close(autocommit=False)
            emit(event="closed")
            return 0
        if command["cmd"] == "commit":
            offsets = {TopicPartition(a.topic, int(k)): OffsetAndMetadata(int(v), "") for k, v in command["offsets"].items()}
            try:
                consumer.commit(offsets=offsets)
                emit(event="committed", offsets=command["offsets"])
            except Exception as e:  # noqa: BLE001 - the driver reads and asserts it
                emit(event="error", op="commit", error=f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    sys.exit(main())
