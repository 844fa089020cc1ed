#!/usr/bin/env python3
"""One confluent-kafka (librdkafka) consumer in a group on groupcoord's Kafka
port, driven by tests/kafka/driver.py. Standard output carries one JSON line
per event:

  {"event":"assigned","partitions":[...],"added":[...]}   every assignment: what it owns now, what is new
  {"event":"revoked","partitions":[...],"remaining":[...]} a rebalance takes these (all of them unless cooperative)
  {"event":"lost","partitions":[...]}                     librdkafka declared them lost
  {"event":"generation","generation":N,"member_id":...}   after every assignment and when librdkafka's
                                                          membership changes (member_common.py)
  {"event":"committed","offsets":{"P":O,...}}             a commit the driver asked for succeeded
  {"event":"committed_offsets","offsets":{"P":O|null}}    --read-committed: what the group committed
  {"event":"error","op":...,"error":...}
  {"event":"closed"}

librdkafka tells the application its generation and member id only through
the consumer group metadata (consumer_group_metadata(), serialized by
rd_kafka_consumer_group_metadata_write): they are read from there after every
assignment and every poll. Standard input takes one JSON command a line: {"cmd":"commit","offsets":{"P":O}}
or {"cmd":"close"}; SIGTERM closes too. With --read-committed it joins no
group: it reads the committed offsets of every partition (OffsetFetch through
committed()), retrying until --deadline-s passes, and exits.

--ssl-ca FILE speaks TLS (SSL, or SASL_SSL with SASL), trusting the CAs in FILE.
--sasl-mechanism SCRAM-SHA-256 (or PLAIN) connects with SASL_PLAINTEXT as
--sasl-username, the secret from --sasl-password or $GROUPCOORD_SASL_PASSWORD.
With SASL, librdkafka's client errors (error_cb: _AUTHENTICATION, ...) and consumer errors
(poll: GROUP_AUTHORIZATION_FAILED, ...) come as {"event":"error","op":"client"
or "poll","code":N}, each distinct one once.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from member_common import DistinctErrors, Membership, command_loop, emit, membership_of, parser

def main() -> int:
    p = parser("confluent-member")
    p.add_argument("--assignor", default="range", help="partition.assignment.strategy")
    p.add_argument("--instance-id", default="", help="group.instance.id: a static member")
    p.add_argument("--deadline-s", type=float, default=30.0)
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
    if a.ssl_ca:
        conf.update({"security.protocol": "SASL_SSL" if a.sasl_mechanism else "SSL", "ssl.ca.location": a.ssl_ca})
    errors = DistinctErrors()

    def on_error(err) -> None:
        # librdkafka's client-level errors (a refused SASL exchange is _AUTHENTICATION), each once.
        errors.report("client", f"{err.name()}: {err.str()}", code=err.code())

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
    membership = Membership()

    def observe(force: bool = False) -> None:
        got = membership_of(consumer)
        if got is not None:
            membership.observe(*got, force=force)

    def on_assign(_c, partitions):
        added = sorted(tp.partition for tp in partitions if tp.topic == a.topic)
        owned.update(added)
        emit(event="assigned", partitions=sorted(owned), added=added)
        observe(force=True)

    def on_revoke(_c, partitions):
        gone = sorted(tp.partition for tp in partitions if tp.topic == a.topic)
        owned.difference_update(gone)
        emit(event="revoked", partitions=gone, remaining=sorted(owned))

    def on_lost(_c, partitions):
        gone = sorted(tp.partition for tp in partitions if tp.topic == a.topic)
        owned.difference_update(gone)
        emit(event="lost", partitions=gone)

    consumer.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    def poll() -> None:
        msg = consumer.poll(0.1)
        if a.sasl_mechanism and msg is not None and msg.error() is not None:
            # A consumer error (GROUP_AUTHORIZATION_FAILED among them), each once.
            err = msg.error()
            errors.report("poll", f"{err.name()}: {err.str()}", code=err.code())
        observe()

    def commit(offsets: dict) -> None:
        wanted = [TopicPartition(a.topic, int(k), int(v)) for k, v in offsets.items()]
        try:
            result = consumer.commit(offsets=wanted, asynchronous=False)
            failed = [str(tp.error) for tp in result or [] if tp.error is not None]
            if failed:
                emit(event="error", op="commit", error="; ".join(failed))
            else:
                emit(event="committed", offsets=offsets)
        except KafkaException as e:
            emit(event="error", op="commit", error=str(e))

    return command_loop(poll, commit, consumer.close)


if __name__ == "__main__":
    sys.exit(main())
