#!/usr/bin/env python3
"""One confluent-kafka (librdkafka) consumer in a group on groupcoord's Kafka
port, driven by tests/kafka/driver.py. Standard output carries one JSON line
per event:

  {"event":"assigned","partitions":[...],"added":[...]}   every assignment: what it owns now, what is new
  {"event":"revoked","partitions":[...],"remaining":[...]} a rebalance takes these (all of them unless cooperative)
  {"event":"lost","partitions":[...]}                     librdkafka declared them lost
  {"event":"committed","offsets":{"P":O,...}}             a commit the driver asked for succeeded
  {"event":"committed_offsets","offsets":{"P":O|null}}    --read-committed: what the group committed
  {"event":"error","op":...,"error":...}
  {"event":"closed"}

librdkafka does not expose the group's generation to the application.
Standard input takes one JSON command a line: {"cmd":"commit","offsets":{"P":O}}
or {"cmd":"close"}; SIGTERM closes too. With --read-committed it joins no
group: it reads the committed offsets of every partition (OffsetFetch through
committed()), retrying until --deadline-s passes, and exits.

--sasl-mechanism SCRAM-SHA-256 (or PLAIN) connects with SASL_PLAINTEXT as
--sasl-username, the secret from --sasl-password or $GROUPCOORD_SASL_PASSWORD.
With SASL, librdkafka's client errors (error_cb: _AUTHENTICATION, ...) and consumer errors
(poll: GROUP_AUTHORIZATION_FAILED, ...) come as {"event":"error","op":"client"
or "poll","code":N}, each distinct one once.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


def read_commands(commands: "queue.Queue[dict]") -> None:
    for line in sys.stdin:
        line = line.strip()
        if line:
            commands.put(json.loads(line))
    commands.put({"cmd": "close"})


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--client-id", default="confluent-member")
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--heartbeat-ms", type=int, default=1000)
    p.add_argument("--rebalance-timeout-ms", type=int, default=10000)
    p.add_argument("--assignor", default="range", help="partition.assignment.strategy")
    p.add_argument("--instance-id", default="", help="group.instance.id: a static member")
    p.add_argument("--read-committed", action="store_true")
    p.add_argument("--deadline-s", type=float, default=30.0)
    p.add_argument("--sasl-mechanism", default="", help="SCRAM-SHA-256 or PLAIN: SASL_PLAINTEXT with it")
    p.add_argument("--sasl-username", default="")
    p.add_argument("--sasl-password", default=os.environ.get("GROUPCOORD_SASL_PASSWORD", ""),
                   help="default: $GROUPCOORD_SASL_PASSWORD")
    a = p.parse_args()

    conf = {
        "bootstrap.servers": a.bootstrap,
        "group.id": a.group,
        "client.id": a.client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": a.session_timeout_ms,
        "heartbeat.interval.ms": a.heartbeat_ms,
        "max.poll.interval.ms": a.rebalance_timeout_ms,
        "partition.assignment.strategy": a.assignor,
    }
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    if a.sasl_mechanism:
        conf.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": a.sasl_mechanism,
                     "sasl.username": a.sasl_username, "sasl.password": a.sasl_password})
    seen_errors: set[str] = set()

    def on_error(err) -> None:
        # librdkafka's client-level errors (a refused SASL exchange is _AUTHENTICATION), each once.
        text = f"{err.name()}: {err.str()}"
        if text not in seen_errors and len(seen_errors) < 50:
            seen_errors.add(text)
            emit(event="error", op="client", error=text, code=err.code())

    if a.sasl_mechanism:  # only then: other scenarios read "error" events as answers to their commands
        conf["error_cb"] = on_error

    if a.read_committed:
        consumer = Consumer(conf)
        until = time.monotonic() + a.deadline_s
        last = ""
        while time.monotonic() < until:
            try:
                got = consumer.committed([TopicPartition(a.topic, n) for n in range(a.partitions)],
                                         timeout=max(1.0, min(10.0, until - time.monotonic())))
            except KafkaException as e:
                last = str(e)
                continue
            bad = [tp for tp in got if tp.error is not None]
            if bad:
                last = str(bad[0].error)
                continue
            emit(event="committed_offsets",
                 offsets={str(tp.partition): (tp.offset if tp.offset >= 0 else None) for tp in got})
            consumer.close()
            return 0
        emit(event="error", op="committed", error=last or "deadline passed")
        consumer.close()
        return 1

    consumer = Consumer(conf)
    owned: set[int] = set()

    def on_assign(_c, partitions):
        added = sorted(tp.partition for tp in partitions if tp.topic == a.topic)
        owned.update(added)
        emit(event="assigned", partitions=sorted(owned), added=added)

    def on_revoke(_c, partitions):
        gone = sorted(tp.partition for tp in partitions if tp.topic == a.topic)
        owned.difference_update(gone)
        emit(event="revoked", partitions=gone, remaining=sorted(owned))

    def on_lost(_c, partitions):
        gone = sorted(tp.partition for tp in partitions if tp.topic == a.topic)
        owned.difference_update(gone)
        emit(event="lost", partitions=gone)

    consumer.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    commands: "queue.Queue[dict]" = queue.Queue()
    threading.Thread(target=read_commands, args=(commands,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: commands.put({"cmd": "close"}))

    while True:
        msg = consumer.poll(0.1)
        if a.sasl_mechanism and msg is not None and msg.error() is not None:
            # A consumer error (GROUP_AUTHORIZATION_FAILED among them), each once.
            err = msg.error()
            text = f"{err.name()}: {err.str()}"
            if text not in seen_errors and len(seen_errors) < 50:
                seen_errors.add(text)
                emit(event="error", op="poll", error=text, code=err.code())
        try:
            command = commands.get_nowait()
        except queue.Empty:
            continue
        if command["cmd"] == "close":
            consumer.close()
            emit(event="closed")
            return 0
        if command["cmd"] == "commit":
            offsets = [TopicPartition(a.topic, int(k), int(v)) for k, v in command["offsets"].items()]
            try:
                result = consumer.commit(offsets=offsets, asynchronous=False)
                errors = [str(tp.error) for tp in result or [] if tp.error is not None]
                if errors:
                    emit(event="error", op="commit", error="; ".join(errors))
                else:
                    emit(event="committed", offsets=command["offsets"])
            except KafkaException as e:
                emit(event="error", op="commit", error=str(e))


if __name__ == "__main__":
    sys.exit(main())
