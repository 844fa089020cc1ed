"""The blocking consumer: :meth:`Consumer.poll` does what is due and runs
the callbacks on the caller's thread, as the C++ client's Consumer does."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .connection import Connection, Security, TransportError
from .errors import ErrorCode, GroupcoordError, is_retriable
from .member import Assigned, Event, Lost, Member, MemberConfig, Revoked, Send, Target
from .protocol import CommitOffsetsResponse, PartitionOffset, Request, Response, TopicPartition, response_error

Endpoint = tuple[str, int]


def parse_bootstrap(text: str) -> list[Endpoint]:
    """``host:port[,host:port...]`` as a list of endpoints."""
    out: list[Endpoint] = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bootstrap server {item!r} is not HOST:PORT")
        out.append((host, int(port)))
    return out


@dataclass
class ConsumerConfig:
    """A consumer's settings; the same as the C++ ConsumerConfig."""

    bootstrap: Sequence[Endpoint]
    group: str
    client_id: str = "groupcoord-consumer"
    #: Join under this id (a restart keeps its membership); None: the server makes one.
    consumer_id: str | None = None
    #: Seconds between heartbeats; None: the group's session timeout / 3.
    heartbeat_interval: float | None = None
    #: One request's wait for its answer, in seconds.
    request_timeout: float = 3.0
    #: Credentials and TLS, applied on every (re)connect.
    security: Security = field(default_factory=Security)

    def member_config(self) -> MemberConfig:
        """The part the state machine needs."""
        return MemberConfig(self.group, self.consumer_id, self.heartbeat_interval, self.request_timeout)


@dataclass
class Callbacks:
    """What the application is told; each runs on the thread that polls."""

    #: Newly granted partitions, each with the group's committed offset (-1: none).
    on_assigned: Callable[[list[PartitionOffset]], None] | None = None
    #: Partitions to stop using, before the release is acknowledged: they can still be committed.
    on_revoked: Callable[[list[TopicPartition]], None] | None = None
    #: Partitions already lost (fenced or evicted): committing them fails.
    on_lost: Callable[[list[TopicPartition]], None] | None = None

    def for_event(self, event: Event) -> Callable[[Any], Any] | None:
        """The callback an event calls for, if the application set one."""
        if isinstance(event, Assigned):
            return self.on_assigned
        if isinstance(event, Revoked):
            return self.on_revoked
        return self.on_lost if isinstance(event, Lost) else None

    def run(self, events: list[Event]) -> None:
        """Runs the callback of each event, in order."""
        for e in events:
            fn = self.for_event(e)
            if fn is not None:
                fn(e.partitions)


class MemberFrontEnd:
    """What both consumers show of their member, and how both judge a commit's answer."""

    config: ConsumerConfig
    member: Member

    @property
    def member_id(self) -> str:
        """The member's id ("" until registered)."""
        return self.member.member_id

    @property
    def generation(self) -> int:
        """The generation the member is at: its last registration's, or a newer one a
        version-2 heartbeat brought (docs/protocol.md §21); -1 when not a member."""
        return self.member.generation

    def assignment(self) -> list[TopicPartition]:
        """The partitions this member holds now."""
        return self.member.assignment()

    def _raise_if_fatal(self) -> None:
        if self.member.fatal is not None:
            raise self.member.fatal

    def _commit_answer(self, offsets: list[PartitionOffset], response: Response, where: str) -> GroupcoordError | None:
        """None when the commit is durable; the retriable error otherwise.
        Raises what retrying cannot fix. NOT_CONTROLLER means the caller
        drops its controller connection."""
        code = response_error(response)
        if code == ErrorCode.NONE and isinstance(response, CommitOffsetsResponse):
            self.member.on_commit_response(offsets, response)
            return None
        error = GroupcoordError(code, f"CommitOffsets of group {self.config.group} at {where}")
        if not is_retriable(code):
            raise error
        return error


class Consumer(MemberFrontEnd):
    """A member of a consumer group, single-threaded and driven by :meth:`poll`."""

    def __init__(self, config: ConsumerConfig, callbacks: Callbacks | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.callbacks = callbacks or Callbacks()
        self.member = Member(config.member_config())
        self._clock = clock
        self._conn = Connection(config.client_id, config.security)
        self._conn_to: Endpoint | None = None
        self._next_bootstrap = 0
        # The held heartbeat on the controller's connection (docs/design.md,
        # "Held heartbeats"): its Send, correlation id and send time.
        self._held: tuple[Send, int, float] | None = None

    def poll(self, timeout: float) -> bool:
        """Does what is due for ``timeout`` seconds: registers, heartbeats,
        follows rebalances and the controller, runs the callbacks. True while
        a member; False while not yet or no more (it keeps trying: see
        ``member.last_error``). Raises GroupcoordError for what retrying
        cannot fix (UNKNOWN_GROUP, NOT_AUTHORIZED, INVALID_*)."""
        deadline = self._clock() + timeout
        while True:
            self._raise_if_fatal()
            now = self._clock()
            send = self.member.next_send(now)
            self.callbacks.run(self.member.take_events())
            if send is not None:
                self._exchange(send)
                self.callbacks.run(self.member.take_events())
                # Past the deadline, poll returns even while requests keep
                # falling due (a heartbeat interval shorter than a round trip);
                # it goes on only to finish a join that is making progress.
                if self._clock() < deadline or (not self.member.is_member() and self.member.last_error is None
                                             and self.member.fatal is None):
                    continue
                break
            now = self._clock()
            if now >= deadline:
                break
            wake = min(self.member.next_wake(now), deadline)
            if self._held is not None:
                # Waits on the held heartbeat's answer instead of sleeping: it
                # comes the moment the controller has news for this member.
                # It also wakes at the lease's end: next_send() fences the
                # member then, whether or not the answer has come.
                self._await_held(min(deadline, self._held_limit(), self.member.next_wake(now)) - now)
                self.callbacks.run(self.member.take_events())
                continue
            if wake > now:
                time.sleep(wake - now)
        self._raise_if_fatal()
        return self.member.is_member()

    def commit(self, offsets: Sequence[PartitionOffset]) -> None:
        """Commits offsets of partitions this member holds; returns once they
        are durable. Raises GroupcoordError: NOT_OWNER for a partition not
        held, and the last problem when retries end with the lease."""
        offsets = list(offsets)
        request = self.member.commit_request(offsets)
        deadline = min(self._clock() + 10.0, self.member.lease_expiry())
        step = 0.05
        while True:
            try:
                error = self._commit_answer(offsets, self._call_controller(request), self._conn.where)
                if error is None:
                    return
                if error.code == ErrorCode.NOT_CONTROLLER:
                    self._lost_controller()
            except TransportError as e:
                error = GroupcoordError(ErrorCode.CONTROLLER_NOT_AVAILABLE, str(e))
                self._lost_controller()
            if self._clock() + step >= deadline:
                raise error
            time.sleep(step)
            step = min(step * 2, 1.0)

    def close(self) -> None:
        """Leaves the group: on_revoked for what it holds, then LeaveGroup."""
        leave = self.member.close()
        self.callbacks.run(self.member.take_events())
        if leave is not None:
            deadline = self._clock() + 10.0
            step = 0.05
            while True:
                try:
                    if not is_retriable(response_error(self._call_controller(leave))):
                        break
                except TransportError:
                    pass
                except GroupcoordError:
                    break
                self._lost_controller()
                if self._clock() + step >= deadline:
                    break
                time.sleep(step)
                step = min(step * 2, 1.0)
        self.member.left()
        self._held = None
        self._conn.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- I/O -----------------------------------------------------------------------

    def _drop_controller(self) -> None:
        self._conn.close()
        self._conn_to = None
        self._held_failed("its connection was closed")

    def _held_limit(self) -> float:
        """When the held heartbeat's answer is overdue: its wait and one request's timeout."""
        assert self._held is not None
        send, _, sent_at = self._held
        return sent_at + send.held + self.member.request_timeout()

    def _held_failed(self, detail: str) -> None:
        if self._held is None:
            return
        send, _, _ = self._held
        self._held = None
        self.member.forget_controller()
        self.member.on_failure(send, self._clock(), f"held Heartbeat: {detail}")

    def _await_held(self, timeout: float) -> None:
        """Takes the held heartbeat's answer if it comes within ``timeout``."""
        assert self._held is not None
        send, cid, sent_at = self._held
        try:
            body = self._conn.poll_frame(max(timeout, 0.0))
            if body is None:
                if self._clock() >= self._held_limit():
                    self._drop_controller()  # overdue: the connection is done with
                return
            response = self._conn.decode(send.request, cid, body)
        except TransportError:
            self._drop_controller()
            return
        self._held = None
        if response_error(response) == ErrorCode.NOT_CONTROLLER:
            self._drop_controller()
        self.member.on_response(send, response, sent_at, self._clock())

    def _lost_controller(self) -> None:
        """Outside poll: a NOT_CONTROLLER or a failed call; ask ListGroups again."""
        self._drop_controller()
        self.member.forget_controller()

    def _call_controller(self, request: Request, version: int = 0) -> Response:
        """One call on the controller's connection; finds it with ListGroups when unknown."""
        if self.member.controller is None:
            send = self.member.list_request()
            sent_at = self._clock()
            self.member.on_response(send, self._list_on_bootstrap(send), sent_at, self._clock())
            self._raise_if_fatal()
        self._connect_to_controller()
        if self._held is None:
            return self._conn.call(request, self.member.request_timeout(), version)
        # A heartbeat is held at the controller: this request, once read
        # there, makes it answer that heartbeat first; its answer is taken,
        # then this request's.
        cid = self._conn.send(request, version)
        self._await_held(self.member.request_timeout())
        if self._held is not None or not self._conn.is_open:
            self._drop_controller()
            raise TransportError(f"{type(request).__name__} to {self._conn.where} failed behind a held heartbeat")
        return self._conn.decode(request, cid, self._conn.receive_frame(self.member.request_timeout()))

    def _exchange(self, send: Send) -> None:
        sent_at = self._clock()
        try:
            if send.target is Target.BOOTSTRAP:
                response = self._list_on_bootstrap(send)
            elif send.held > 0:
                # Sent, not waited for: poll() and every call take its answer.
                self._send_held(send, sent_at)
                return
            else:
                response = self._call_controller(send.request, send.version)
        except GroupcoordError as e:  # credentials refused
            self.member.on_refused(send, e)
            return
        except _Unreachable as e:
            self._drop_controller()
            self.member.on_failure(send, self._clock(), str(e), unreachable=True)
            return
        except TransportError as e:
            self._drop_controller()
            self.member.on_failure(send, self._clock(), str(e))
            return
        if response_error(response) == ErrorCode.NOT_CONTROLLER:
            self._drop_controller()
        self.member.on_response(send, response, sent_at, self._clock())

    def _connect_to_controller(self) -> None:
        """The connection to the controller ListGroups named last, opened
        when it is not (a heartbeat held on an earlier one is given up)."""
        target = self.member.controller
        if target is None:
            raise TransportError(f"group {self.config.group} has no controller now")
        if not self._conn.is_open or self._conn_to != target:
            self._held_failed("the controller moved")
            self._conn.connect(target[0], target[1], self.config.request_timeout)
            self._conn_to = target

    def _send_held(self, send: Send, sent_at: float) -> None:
        self._connect_to_controller()
        self._held = (send, self._conn.send(send.request, send.version), sent_at)

    def _list_on_bootstrap(self, send: Send) -> Response:
        """ListGroups on a bootstrap server, the next one when one cannot be reached."""
        servers = list(self.config.bootstrap)
        last = "no bootstrap server given"
        for i in range(len(servers)):
            k = (self._next_bootstrap + i) % len(servers)
            host, port = servers[k]
            conn = Connection(self.config.client_id, self.config.security)
            try:
                conn.connect(host, port, self.config.request_timeout)
                response = conn.call(send.request, self.config.request_timeout)
            except TransportError as e:
                last = str(e)
                continue
            finally:
                conn.close()
            self._next_bootstrap = k
            return response
        raise _Unreachable(last)


class _Unreachable(TransportError):
    """No bootstrap server could be reached."""
