#!/usr/bin/env python3
"""One confluent-kafka consumer on librdkafka 2.15.1 with KIP-848's consumer
group protocol (group.protocol=consumer) in a group on groupcoord's Kafka
port, driven by tests/kafka/kip848.py. The driver starts it with
LD_LIBRARY_PATH naming librdkafka 2.15.1's directory (scripts/librdkafka.sh
path): Debian's python3-confluent-kafka then runs on it.

With this protocol the server sets the session timeout and the heartbeat
interval (kafka.group.consumer.session.timeout.ms and
kafka.group.consumer.heartbeat.interval.ms) and computes the assignment;
librdkafka refuses session.timeout.ms, heartbeat.interval.ms and
partition.assignment.strategy, so the options member_common.py gives for
them are taken and not used. Assignments are incremental: on_assign and
on_revoke get only what is added or taken, and this script calls
incremental_assign and incremental_unassign itself.

Standard output carries one JSON line per event, each with "t", the
time.monotonic() of this process (CLOCK_MONOTONIC, the same clock as the
driver's) at which it happened:

  {"event":"assigned","added":[...],"partitions":[...]}     taken from the start of on_assign
  {"event":"revoked","partitions":[...],"remaining":[...]}  taken after incremental_unassign returned
  {"event":"lost","partitions":[...],"remaining":[...]}     the same, when librdkafka declared them lost
  {"event":"generation","generation":E,"member_id":"..."}   librdkafka's member epoch and member id (the
                                                            consumer group metadata), after every
                                                            assignment and whenever they change
  {"event":"committed","offsets":{"P":O}}                   a commit the driver asked for succeeded
  {"event":"committed_offsets","offsets":{"P":O|null}}      answer to {"cmd":"read_committed"}: committed()
                                                            of every partition, through this consumer
  {"event":"error","op":"client"|"poll"|"commit"|"committed"|...,"error":...,"code":N}
                                                            ("fatal":true: the consumer is unusable)
  {"event":"closed"}

So a member holds a partition from its "assigned" event's "t" until the "t"
of the "revoked" or "lost" event that takes it (or until it dies). Standard
input takes one JSON command a line: {"cmd":"commit","offsets":{"P":O}},
{"cmd":"read_committed"}, {"cmd":"close"} (SIGTERM and the end of standard
input close too); close() revokes everything through on_revoke and leaves
the group (a static member leaves with the epoch that keeps its
assignment).

Options besides member_common.py's: --instance-id (group.instance.id: a
static member), --rack (client.rack), --remote-assignor
(group.remote.assignor, e.g. uniform or range; unset: the server's default).
GROUPCOORD_RDKAFKA_DEBUG (e.g. cgrp,protocol) turns librdkafka's debug log on,
on standard error, which the driver keeps and quotes in a failure.
"""

from __future__ import annotations

import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from member_common import DistinctErrors, Membership, command_loop, emit, membership_of, parser

def main() -> int:
    p = parser("kip848-member")
    p.add_argument("--instance-id", default="", help="group.instance.id: a static member")
    p.add_argument("--rack", default="", help="client.rack")
    p.add_argument("--remote-assignor", default="", help="group.remote.assignor (uniform, range)")
    p.add_argument("--request-timeout-s", type=float, default=30.0,
                   help="the longest a commit or committed() may take")
    a = p.parse_args()

    errors = DistinctErrors()

    def on_error(err) -> None:
        errors.report("client", f"{err.name()}: {err.str()}", code=err.code(), fatal=bool(err.fatal()),
                      t=time.monotonic())

    conf = {
        "bootstrap.servers": a.bootstrap,
        "group.id": a.group,
        "client.id": a.client_id,
        "group.protocol": "consumer",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "error_cb": on_error,
    }
    if os.environ.get("GROUPCOORD_RDKAFKA_DEBUG"):  # e.g. cgrp,protocol: librdkafka's log, on stderr
        conf["debug"] = os.environ["GROUPCOORD_RDKAFKA_DEBUG"]
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    if a.rack:
        conf["client.rack"] = a.rack
    if a.remote_assignor:
        conf["group.remote.assignor"] = a.remote_assignor
    if a.sasl_mechanism:
        conf.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": a.sasl_mechanism,
                     "sasl.username": a.sasl_username, "sasl.password": a.sasl_password})
    if a.ssl_ca:
        conf.update({"security.protocol": "SASL_SSL" if a.sasl_mechanism else "SSL", "ssl.ca.location": a.ssl_ca})

    try:
        consumer = Consumer(conf)
    except KafkaException as e:
        emit(event="error", op="create", error=str(e), t=time.monotonic())
        return 1
    owned: set[int] = set()
    membership = Membership()

    def observe(force: bool = False) -> None:
        got = membership_of(consumer)
        if got is not None:
            membership.observe(*got, force=force)

    def ours(partitions) -> list[int]:
        return sorted(tp.partition for tp in partitions if tp.topic == a.topic)

    def on_assign(c, partitions):
        t = time.monotonic()  # held from here on: before the client starts fetching them
        c.incremental_assign(partitions)
        added = ours(partitions)
        owned.update(added)
        emit(event="assigned", added=added, partitions=sorted(owned), t=t)
        observe(force=True)

    def taken(kind: str):
        def callback(c, partitions):
            c.incremental_unassign(partitions)
            gone = ours(partitions)
            owned.difference_update(gone)
            emit(event=kind, partitions=gone, remaining=sorted(owned), t=time.monotonic())  # held until here
        return callback

    consumer.subscribe([a.topic], on_assign=on_assign, on_revoke=taken("revoked"), on_lost=taken("lost"))

    def poll() -> None:
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is not None:
            err = msg.error()
            # _FATAL: the consumer is unusable from here on (a refused heartbeat, a fenced static member).
            errors.report("poll", f"{err.name()}: {err.str()}", code=err.code(),
                          fatal=bool(err.fatal()) or err.code() == KafkaError._FATAL, t=time.monotonic())
        observe()

    def commit(offsets: dict) -> None:
        wanted = [TopicPartition(a.topic, int(k), int(v)) for k, v in offsets.items()]
        try:
            result = consumer.commit(offsets=wanted, asynchronous=False)
            failed = [str(tp.error) for tp in result or [] if tp.error is not None]
            if failed:
                emit(event="error", op="commit", error="; ".join(failed), t=time.monotonic())
            else:
                emit(event="committed", offsets=offsets, t=time.monotonic())
        except KafkaException as e:
            emit(event="error", op="commit", error=str(e), t=time.monotonic())

    def read_committed(_command: dict) -> None:
        try:
            got = consumer.committed([TopicPartition(a.topic, n) for n in range(a.partitions)],
                                     timeout=a.request_timeout_s)
        except KafkaException as e:
            emit(event="error", op="committed", error=str(e), t=time.monotonic())
            return
        bad = [str(tp.error) for tp in got if tp.error is not None]
        if bad:
            emit(event="error", op="committed", error="; ".join(bad), t=time.monotonic())
            return
        emit(event="committed_offsets", offsets={str(tp.partition): (tp.offset if tp.offset >= 0 else None)
                                                 for tp in got}, t=time.monotonic())

    return command_loop(poll, commit, consumer.close, {"read_committed": read_committed})


if __name__ == "__main__":
    sys.exit(main())
