#!/usr/bin/env python3
"""One kafka-python consumer in a group on groupcoord's Kafka port, driven by
tests/kafka/driver.py. Standard output carries one JSON line per event:

  {"event":"assigned","partitions":[...],"generation":N}   after every assignment
  {"event":"revoked","partitions":[...]}                    before a rebalance takes them
  {"event":"generation","generation":N,"member_id":...}     after every assignment and when kafka-python's
                                                            membership changes (member_common.py)
  {"event":"committed","offsets":{"P":O,...}}              a commit the driver asked for succeeded
  {"event":"committed_offsets","offsets":{"P":O|null,...}}  --read-committed: what the group committed
  {"event":"error","op":...,"error":...}                    something the driver asked for failed
  {"event":"closed"}                                        after a graceful close

Standard input takes one JSON command a line: {"cmd":"commit","offsets":{"P":O}}
or {"cmd":"close"}. SIGTERM closes too. With --read-committed it joins no
group: it reads the group's committed offsets of every partition once
(OffsetFetch through committed()) and exits.

--ssl-ca FILE speaks TLS (SSL, or SASL_SSL with SASL), trusting the CAs in FILE.
--sasl-mechanism SCRAM-SHA-256 (or PLAIN) connects with SASL_PLAINTEXT as
--sasl-username, the secret from --sasl-password or $GROUPCOORD_SASL_PASSWORD.
With SASL, errors kafka-python only logs (a connection lost while authenticating among
them) come as {"event":"error","op":"log"}, each distinct one once; errors
poll() raises (GroupAuthorizationFailedError) as {"event":"error","op":"poll",
"code":N}, and the member keeps polling.
"""

from __future__ import annotations

import logging
import sys
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.structs import OffsetAndMetadata

from member_common import DistinctErrors, Membership, command_loop, emit, parser

ASSIGNORS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}


class ErrorLog(logging.Handler):
    """kafka-python logs what goes wrong on a connection (a refused SASL exchange among it) and
    retries: each distinct error line becomes one {"event":"error","op":"log"}."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.errors = DistinctErrors()

    def emit(self, record: logging.LogRecord) -> None:  # noqa: A003 - logging's name
        self.errors.report("log", record.getMessage())


def main() -> int:
    p = parser("kafka-python-member")
    p.add_argument("--assignor", default="range", choices=sorted(ASSIGNORS))
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
    if a.ssl_ca:
        common.update(security_protocol="SASL_SSL" if a.sasl_mechanism else "SSL", ssl_cafile=a.ssl_ca,
                      ssl_check_hostname=True)

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

    def membership_now() -> tuple[int | None, str | None]:
        try:  # kafka-python keeps the generation and member id on its coordinator only
            g = consumer._coordinator._generation  # noqa: SLF001
            return g.generation_id, g.member_id
        except AttributeError:
            return None, None

    membership = Membership()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit(event="revoked", partitions=sorted(tp.partition for tp in revoked if tp.topic == a.topic))

        def on_partitions_assigned(self, assigned):
            emit(event="assigned", partitions=sorted(tp.partition for tp in assigned if tp.topic == a.topic),
                 generation=membership_now()[0])
            membership.observe(*membership_now(), force=True)

    consumer.subscribe([a.topic], listener=Listener())
    last_poll_error = ""

    def poll() -> None:
        nonlocal last_poll_error
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
        membership.observe(*membership_now())

    def commit(offsets: dict) -> None:
        wanted = {TopicPartition(a.topic, int(k)): OffsetAndMetadata(int(v), "") for k, v in offsets.items()}
        try:
            consumer.commit(offsets=wanted)
            emit(event="committed", offsets=offsets)
        except Exception as e:  # noqa: BLE001 - the driver reads and asserts it
            emit(event="error", op="commit", error=f"{type(e).__name__}: {e}")

    return command_loop(poll, commit, lambda: consumer.close(autocommit=False))


if __name__ == "__main__":
    sys.exit(main())
