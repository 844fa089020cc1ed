"""The member's state machine, sans I/O: what a consumer sends next and what
it makes of each answer, with time passed in by the caller.

It knows no socket and no clock. A driver (:class:`groupcoord.Consumer`,
:class:`groupcoord.AsyncConsumer`, or a test with a fake clock) asks
:meth:`Member.next_send` what to send, sends it to the bootstrap servers or
to the group's controller as the :class:`Send` says, and reports the answer
(:meth:`Member.on_response`) or its absence (:meth:`Member.on_failure`). The
callbacks the application sees come out of :meth:`Member.take_events`.

The rules, as in the C++ client:

* ListGroups finds the group's session timeout and controller; NOT_CONTROLLER
  or a lost connection sends the member back to it, after a backoff.
* A registration reports what the member holds; what it held and was not
  granted again is revoked before the heartbeat that acknowledges the
  release: that heartbeat is not offered until the events are taken.
* The member fences itself (``lost``) once the session timeout has passed
  since the send time of the last successful heartbeat or registration: the
  controller cannot evict it and grant its partitions elsewhere sooner.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Union

from .errors import ErrorCode, GroupcoordError, is_retriable
from .protocol import (ApiKey, CommitOffsetsRequest, CommitOffsetsResponse, GroupInfo, HeartbeatRequest,
                       HeartbeatResponse, LeaveGroupRequest, ListGroupsRequest, ListGroupsResponse,
                       PartitionOffset, RegisterConsumerRequest, RegisterConsumerResponse, Request, Response,
                       TopicPartition, max_version, response_error)

BACKOFF_FIRST = 0.05
BACKOFF_CAP = 1.0


class Target(enum.Enum):
    """Where a request goes."""

    BOOTSTRAP = "any bootstrap server"
    CONTROLLER = "the group's controller"


@dataclass
class Send:
    """One request the driver is to send now."""

    target: Target
    request: Request
    #: The version to send it at (RegisterConsumer: the newest the controller speaks).
    version: int = 0
    #: A heartbeat the controller may hold this many seconds (version 1,
    #: docs/protocol.md §20): its answer comes the moment something changes
    #: for the member, or when that time runs out. The driver does not block
    #: on it: it waits for the answer alongside everything else.
    held: float = 0.0


@dataclass
class Assigned:
    """Newly granted partitions, each with the group's committed offset (-1: none)."""

    partitions: list[PartitionOffset]


@dataclass
class Revoked:
    """Partitions to stop using; the release is acknowledged only after this."""

    partitions: list[TopicPartition]


@dataclass
class Lost:
    """Partitions already lost (fenced or evicted): committing them fails."""

    partitions: list[TopicPartition]


Event = Union[Assigned, Revoked, Lost]


@dataclass
class MemberConfig:
    """What the state machine needs to know of the consumer's configuration."""

    group: str
    #: Join under this id (a restart keeps its membership); None: the server makes one.
    consumer_id: str | None = None
    #: Seconds between heartbeats; None: the group's session timeout / 3.
    heartbeat_interval: float | None = None
    #: One request's wait for its answer, in seconds.
    request_timeout: float = 3.0


@dataclass
class _State:
    member_id: str = ""
    generation: int = -1
    held: dict[TopicPartition, int] = field(default_factory=dict)
    need_register: bool = True
    group_loaded: bool = False
    session_timeout: float = 0.0
    heartbeat_interval: float = 0.0
    last_success_sent: float = 0.0
    next_heartbeat: float = 0.0
    backoff_until: float = 0.0
    backoff_step: float = 0.0
    controller: tuple[str, int] | None = None
    # The newest RegisterConsumer version, until the controller answers that
    # it does not speak it (then one older); a new controller is asked the
    # newest again.
    register_version: int = max_version(ApiKey.REGISTER_CONSUMER)
    # Heartbeats of version 1 (held at the controller) until it answers that
    # it does not speak it; a new controller is asked version 1 again.
    heartbeat_version: int = max_version(ApiKey.HEARTBEAT)
    version_for: tuple[str, int] | None = None
    closed: bool = False
    left: bool = False


class Member:
    """One member of one consumer group, driven by its caller. Not thread-safe."""

    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self._s = _State(member_id=config.consumer_id or "")
        self._events: list[Event] = []
        self._in_flight: Send | None = None
        #: The last problem met (a retriable one while the member keeps trying).
        self.last_error: GroupcoordError | None = None
        #: A problem that retrying cannot fix; set, the member sends nothing more.
        self.fatal: GroupcoordError | None = None

    # ---- what the application sees -------------------------------------------------

    @property
    def member_id(self) -> str:
        """The member's id ("" until the first registration is answered)."""
        return self._s.member_id

    @property
    def generation(self) -> int:
        """The generation the member is at: its last registration's, or a newer one a
        version-2 heartbeat brought (docs/protocol.md §21); -1 when not a member."""
        return self._s.generation

    @property
    def controller(self) -> tuple[str, int] | None:
        """The controller's (host, port) as ListGroups last named it."""
        return self._s.controller

    @property
    def session_timeout(self) -> float:
        """The group's session timeout in seconds (0 before ListGroups answered)."""
        return self._s.session_timeout

    @property
    def heartbeat_interval(self) -> float:
        """Seconds between heartbeats."""
        return self._s.heartbeat_interval

    def assignment(self) -> list[TopicPartition]:
        """The partitions held now, sorted."""
        return sorted(self._s.held)

    def is_member(self) -> bool:
        """True while registered and not due to register again."""
        return self._s.generation >= 0 and not self._s.need_register and not self._s.closed

    def lease_expiry(self) -> float:
        """The instant by which the member stops using its partitions unless a
        heartbeat sent before it succeeds (last successful send + session timeout)."""
        return self._s.last_success_sent + self._s.session_timeout

    def request_timeout(self) -> float:
        """A request's wait: capped so a stuck request cannot outlive the lease by much."""
        t = self.config.request_timeout
        if self._s.session_timeout > 0:
            t = min(t, max(self._s.session_timeout / 2, 0.1))
        return t

    def take_events(self) -> list[Event]:
        """The callbacks due, in order; the driver runs them before asking for more."""
        events, self._events = self._events, []
        return events

    # ---- what to do next -----------------------------------------------------------

    def check_lease(self, now: float) -> None:
        """Fences the member when its lease ran out: everything held is lost."""
        if self._s.held and now >= self.lease_expiry():
            self._lose_all()
            self._s.need_register = True

    def next_send(self, now: float) -> Send | None:
        """The request due at ``now``, or None (nothing due, one in flight,
        events not yet taken, in backoff, closed or failed)."""
        self.check_lease(now)
        s = self._s
        if self._in_flight or self.fatal or s.closed or now < s.backoff_until:
            return None
        send: Send | None = None
        if not s.group_loaded or s.controller is None:
            send = Send(Target.BOOTSTRAP, ListGroupsRequest([self.config.group]))
        elif s.need_register:
            send = Send(Target.CONTROLLER, RegisterConsumerRequest(self.config.group, s.member_id, self.assignment()),
                        s.register_version)
        elif now >= s.next_heartbeat and not self._events:
            # A heartbeat acknowledges releases: never before the application
            # has been told of them (take_events). Held at the controller for
            # up to one interval when it speaks version 1 or 2.
            wait = s.heartbeat_interval if s.heartbeat_version >= 1 else 0.0
            wait_ms = min(int(wait * 1000), 2**31 - 1)  # an int32 on the wire
            send = Send(Target.CONTROLLER, HeartbeatRequest(self.config.group, s.member_id, s.generation, wait_ms),
                        s.heartbeat_version, wait)
        self._in_flight = send
        return send

    def next_wake(self, now: float) -> float:
        """When :meth:`next_send` may next have something to do."""
        s = self._s
        if self._in_flight or self.fatal or s.closed:
            t = float("inf")
        elif not s.group_loaded or s.controller is None or s.need_register:
            t = now
        else:
            t = s.next_heartbeat
        t = max(t, s.backoff_until)
        if s.held:
            t = min(t, self.lease_expiry())
        return t

    # ---- answers -------------------------------------------------------------------

    def on_response(self, send: Send, response: Response, sent_at: float, now: float) -> None:
        """Reports the answer to ``send`` (sent at ``sent_at``)."""
        self._in_flight = None
        code = response_error(response)
        if isinstance(send.request, HeartbeatRequest) and send.held > 0 and (
                self._s.closed or self._s.need_register or send.request.generation != self._s.generation):
            # A held heartbeat's answer read after the member moved on (it
            # closed, fenced itself, or must register again): about a
            # generation it no longer acts on.
            if code == ErrorCode.NOT_CONTROLLER:
                self._s.controller = None
            return
        if isinstance(send.request, ListGroupsRequest):
            self._on_list(response, now)
            return
        if code == ErrorCode.NOT_CONTROLLER:
            self._retry(now, code, f"server at {self._where()} is not the controller of group {self.config.group}",
                        forget_controller=True)
            return
        if isinstance(send.request, RegisterConsumerRequest) and isinstance(response, RegisterConsumerResponse):
            self._on_register(response, sent_at, now)
        elif (isinstance(send.request, RegisterConsumerRequest) and code == ErrorCode.UNSUPPORTED_VERSION
              and self._s.register_version > 0):
            # A server of an older release: speak the version before to it.
            self._s.register_version -= 1
            self._done()
        elif isinstance(send.request, HeartbeatRequest) and isinstance(response, HeartbeatResponse):
            self._on_heartbeat(response, sent_at, now, send.version)
        elif (isinstance(send.request, HeartbeatRequest) and code == ErrorCode.UNSUPPORTED_VERSION
              and self._s.heartbeat_version > 0):
            # A controller of an older release: one version lower (a release
            # without version 2 holds version 1; one without either answers
            # version 0 at once, at the interval).
            self._s.heartbeat_version = max(0, send.version - 1)
            self._s.next_heartbeat = now
            self._done()
        elif code != ErrorCode.NONE:
            # An error-only answer: the server could not read the request.
            self._fail(code, f"{type(send.request).__name__} refused by {self._where()}")
        else:
            self._retry(now, ErrorCode.UNKNOWN_SERVER_ERROR, f"unexpected answer {type(response).__name__}")

    def on_failure(self, send: Send, now: float, detail: str, unreachable: bool = False) -> None:
        """Reports that ``send`` got no answer (connection lost, refused or
        timed out): back to ListGroups, after a backoff."""
        self._in_flight = None
        self._retry(now, ErrorCode.CONTROLLER_NOT_AVAILABLE, detail, forget_controller=True, unreachable=unreachable)

    def forget_controller(self) -> None:
        """The controller answered NOT_CONTROLLER or could not be reached
        outside :meth:`next_send` (a commit, a leave): find it again."""
        self._s.controller = None

    def list_request(self) -> Send:
        """A ListGroups for the driver to send between polls, to find the
        controller for a commit or a leave; report it with :meth:`on_response`."""
        return Send(Target.BOOTSTRAP, ListGroupsRequest([self.config.group]))

    def on_refused(self, send: Send, error: GroupcoordError) -> None:
        """Reports a failure retrying cannot fix (credentials refused, say)."""
        self._in_flight = None
        self.fatal = self.last_error = error

    # ---- commits and leaving -------------------------------------------------------

    def commit_request(self, offsets: list[PartitionOffset]) -> CommitOffsetsRequest:
        """The CommitOffsets request for ``offsets``; raises when not a member."""
        if self._s.left:
            raise GroupcoordError(ErrorCode.UNKNOWN_CONSUMER, f"the consumer of group {self.config.group} is closed")
        if self._s.generation < 0:
            raise GroupcoordError(ErrorCode.UNKNOWN_CONSUMER, f"not a member of group {self.config.group} yet")
        return CommitOffsetsRequest(self.config.group, self._s.member_id, self._s.generation, list(offsets))

    def on_commit_response(self, offsets: list[PartitionOffset], response: CommitOffsetsResponse) -> None:
        """Takes a CommitOffsets answer of NONE; raises the first partition's refusal."""
        for r in response.results:
            if r.error != ErrorCode.NONE:
                raise GroupcoordError(r.error, f"commit of {r.topic}/{r.partition} in group {self.config.group}")
        # What this member committed: a later grant with another offset is a rewind.
        for o in offsets:
            if o.tp in self._s.held:
                self._s.held[o.tp] = o.offset

    def close(self) -> LeaveGroupRequest | None:
        """Stops the member: everything held is revoked (take_events; the
        revoked partitions can still be committed until :meth:`left`), and
        the LeaveGroup to send comes back (None when it never registered)."""
        if self._s.closed:
            return None
        if self._s.held:
            self._events.append(Revoked(self.assignment()))
            self._s.held.clear()
        self._s.closed = True
        if self._s.generation < 0 or not self._s.member_id:
            self.left()
            return None
        return LeaveGroupRequest(self.config.group, self._s.member_id)

    def left(self) -> None:
        """The LeaveGroup was answered (or given up on): no more commits."""
        self._s.left = True
        self._s.generation = -1

    # ---- internals -----------------------------------------------------------------

    def _where(self) -> str:
        c = self._s.controller
        return f"{c[0]}:{c[1]}" if c else "(no controller)"

    def _fail(self, code: int, detail: str) -> None:
        self.fatal = self.last_error = GroupcoordError(code, detail)

    def _retry(self, now: float, code: int, detail: str, forget_controller: bool = False,
               unreachable: bool = False) -> None:
        self.last_error = GroupcoordError(code, detail, unreachable=unreachable)
        if forget_controller:
            self._s.controller = None
        cap = BACKOFF_CAP
        if self._s.heartbeat_interval > 0:
            cap = min(cap, max(self._s.heartbeat_interval / 2, 0.02))
        s = self._s
        s.backoff_step = BACKOFF_FIRST if s.backoff_step == 0 else min(s.backoff_step * 2, cap)
        s.backoff_until = now + s.backoff_step

    def _done(self) -> None:
        self._s.backoff_step = 0.0
        self.last_error = None

    def _lose_all(self) -> None:
        if self._s.held:
            self._events.append(Lost(self.assignment()))
            self._s.held.clear()

    def _on_list(self, response: Response, now: float) -> None:
        group = self.config.group
        if not isinstance(response, ListGroupsResponse):
            self._fail(response_error(response), f"ListGroups of group {group}")
            return
        if response.error != ErrorCode.NONE or len(response.groups) != 1:
            code = response.error if response.error != ErrorCode.NONE else ErrorCode.UNKNOWN_SERVER_ERROR
            if is_retriable(code):
                self._retry(now, code, f"ListGroups of group {group}")
            else:
                self._fail(code, f"ListGroups of group {group}")
            return
        info: GroupInfo = response.groups[0]
        if info.error != ErrorCode.NONE:
            if is_retriable(info.error):
                self._retry(now, info.error, f"group {group}")
            else:
                self._fail(info.error, f"group {group}")
            return
        s = self._s
        s.session_timeout = info.session_timeout_ms / 1000.0
        hb = self.config.heartbeat_interval
        s.heartbeat_interval = hb if hb is not None else s.session_timeout / 3
        s.group_loaded = True
        if info.controller.is_none():
            s.controller = None
            self._retry(now, ErrorCode.CONTROLLER_NOT_AVAILABLE, f"group {group} has no controller yet")
            return
        s.controller = (info.controller.host or "127.0.0.1", info.controller.port)
        if s.version_for != s.controller:
            s.register_version = max_version(ApiKey.REGISTER_CONSUMER)
            s.heartbeat_version = max_version(ApiKey.HEARTBEAT)
            s.version_for = s.controller
        self._done()

    def _on_register(self, r: RegisterConsumerResponse, sent_at: float, now: float) -> None:
        s = self._s
        if r.error != ErrorCode.NONE:
            # UNKNOWN_CONSUMER: a leave or an eviction overtook the registration.
            if is_retriable(r.error) or r.error == ErrorCode.UNKNOWN_CONSUMER:
                self._retry(now, r.error, f"RegisterConsumer of group {self.config.group} at {self._where()}")
            else:
                self._fail(r.error, f"RegisterConsumer of group {self.config.group} at {self._where()}")
            return
        # The lease may have run out while the answer was on its way.
        self.check_lease(now)
        s.member_id = r.consumer_id
        s.generation = r.generation
        if r.mode != 0:
            # From version 1 a client-mode group answers with its member list
            # and no partition: this client takes server-mode groups only.
            self._fail(ErrorCode.UNSUPPORTED_VERSION,
                       f"group {self.config.group} assigns in client mode (its members share the work out "
                       f"themselves); this client takes server-mode groups only: close() leaves it")
            return
        s.last_success_sent = sent_at
        s.need_register = False
        granted = {p.tp: p.offset for p in r.partitions}
        revoked = [tp for tp in sorted(s.held) if tp not in granted]
        for tp in revoked:
            del s.held[tp]
        # New partitions, and held ones whose offset someone else moved (a rewind).
        assigned = [PartitionOffset(tp.topic, tp.partition, off) for tp, off in sorted(granted.items())
                    if s.held.get(tp) != off]
        s.held.update(granted)
        if revoked:
            self._events.append(Revoked(revoked))
        if assigned:
            self._events.append(Assigned(assigned))
        # The heartbeat that acknowledges this generation goes at once: it
        # releases what was revoked, tells the controller this member is in
        # step, and learns at once of a partition released meanwhile.
        s.next_heartbeat = now
        self._done()

    def _on_heartbeat(self, r: HeartbeatResponse, sent_at: float, now: float, version: int = 0) -> None:
        s = self._s
        if r.error == ErrorCode.NONE:
            s.last_success_sent = sent_at
            if version >= 2 and r.generation > s.generation:
                # The group moved and left this member as it was
                # (docs/protocol.md §21): it holds what it held, at the new
                # generation, without registering again.
                s.generation = r.generation
            # A held heartbeat answered when its wait ran out: the next goes
            # at once; one answered sooner with nothing to do, one interval
            # after this one's send.
            s.next_heartbeat = sent_at + s.heartbeat_interval
            self._done()
        elif r.error == ErrorCode.REBALANCE_NEEDED:
            # Still a member as of this send: the lease is renewed.
            s.last_success_sent = sent_at
            s.need_register = True
            self._done()
        elif r.error == ErrorCode.UNKNOWN_CONSUMER:
            # Evicted, or a controller that never saw it: nothing held is its own.
            self._lose_all()
            s.generation = -1
            if not self.config.consumer_id:
                s.member_id = ""
            s.need_register = True
            self._done()
        elif is_retriable(r.error):
            self._retry(now, r.error, f"Heartbeat of group {self.config.group} at {self._where()}")
        else:
            self._fail(r.error, f"Heartbeat of group {self.config.group} at {self._where()}")

