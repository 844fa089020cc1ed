"""Administrative calls: create, delete, list and describe groups, fetch
and rewind offsets, drain servers and see how groups are placed on them.
Blocking, one thread at a time."""

from __future__ import annotations

import time
from typing import Sequence

from .connection import Connection, Security, TransportError
from .errors import ErrorCode, GroupcoordError, is_retriable
from .protocol import (Broker, CreateGroupRequest, DeleteGroupRequest, DescribeGroupRequest,
                       DescribeGroupResponse, DescribeServersRequest, DescribeServersResponse,
                       DrainServerRequest, FetchOffsetsRequest, GroupInfo,
                       ListGroupsRequest, PartitionError, PartitionOffset, Request, Response,
                       RewindConsumerRequest, api_name, response_error)

Endpoint = tuple[str, int]


class Admin:
    """Finds a server that answers among the bootstrap servers, and the
    group's controller (through ListGroups) for the calls only it serves.
    NOT_CONTROLLER, CONTROLLER_NOT_AVAILABLE and unreachable servers are
    retried for ``retry_budget`` seconds; then the call raises."""

    def __init__(self, bootstrap: Sequence[Endpoint], *, client_id: str = "groupcoord-admin",
                 request_timeout: float = 5.0, retry_budget: float = 10.0,
                 security: Security | None = None) -> None:
        self.bootstrap = list(bootstrap)
        self.request_timeout = request_timeout
        self.retry_budget = retry_budget
        self._conn = Connection(client_id, security)
        self._connected_to: Endpoint | None = None
        self._next = 0

    def close(self) -> None:
        """Closes the connection."""
        self._conn.close()
        self._connected_to = None

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- calls ---------------------------------------------------------------------

    def create_group(self, group: str, session_timeout: float, topics: Sequence[str],
                     ephemeral: bool = False) -> Broker:
        """Creates a group (the same settings again change nothing); returns
        its controller (the "no controller" Broker if none claimed it yet)."""
        r = self._call_any(CreateGroupRequest(group, round(session_timeout * 1000), list(topics), ephemeral))
        return r.controller  # type: ignore[union-attr]

    def delete_group(self, group: str) -> None:
        """Deletes an empty group with its offsets."""
        self._call_controller(group, DeleteGroupRequest(group))

    def list_groups(self, names: Sequence[str] = ()) -> list[GroupInfo]:
        """Every group, or the ones named (an unknown one has UNKNOWN_GROUP in its GroupInfo)."""
        return self._call_any(ListGroupsRequest(list(names))).groups  # type: ignore[union-attr]

    def describe_group(self, group: str) -> DescribeGroupResponse:
        """Everything the group's controller knows: state, members with what
        they hold and wait for, committed offsets, the recent history."""
        r = self._call_controller(group, DescribeGroupRequest(group))
        assert isinstance(r, DescribeGroupResponse)
        return r

    def fetch_offsets(self, group: str, topics: Sequence[str] = ()) -> list[PartitionOffset]:
        """Committed offsets of the group (no topics: every topic)."""
        return self._call_any(FetchOffsetsRequest(group, list(topics))).offsets  # type: ignore[union-attr]

    def rewind(self, group: str, offsets: Sequence[PartitionOffset]) -> list[PartitionError]:
        """Overwrites committed offsets; every member registers again and gets them."""
        r = self._call_controller(group, RewindConsumerRequest(group, list(offsets)))
        return r.results  # type: ignore[union-attr]

    def drain_server(self, server_id: int, drain: bool = True) -> None:
        """Marks a server drained (it hands its groups over) or undrained."""
        self._call_any(DrainServerRequest(server_id, drain))

    def describe_servers(self) -> DescribeServersResponse:
        """The fleet's placement as the server that answers computes it
        (DescribeServers, docs/protocol.md "12 DescribeServers"): each live
        server's state, load and load once the groups that should move have
        moved, the bound, and those groups. A server older than the call
        raises UNKNOWN_API."""
        r = self._call_any(DescribeServersRequest())
        assert isinstance(r, DescribeServersResponse)
        return r

    # ---- routing -------------------------------------------------------------------

    def _call_on(self, server: Endpoint, request: Request) -> Response:
        """One call; raises GroupcoordError for an answer other than NONE and
        TransportError when there was no answer."""
        if not self._conn.is_open or self._connected_to != server:
            self._connected_to = None
            self._conn.connect(server[0], server[1], self.request_timeout)
            self._connected_to = server
        try:
            response = self._conn.call(request, self.request_timeout)
        except TransportError:
            self._connected_to = None
            raise
        code = response_error(response)
        if code != ErrorCode.NONE:
            group = getattr(request, "group", "")
            what = f"{api_name(request.API)} of group {group}" if group else api_name(request.API)
            if isinstance(request, DrainServerRequest):
                what = f"{'draining' if request.drain else 'undraining'} server {request.server_id}"
            raise GroupcoordError(code, f"{what} at {server[0]}:{server[1]}")
        return response

    def _call_any(self, request: Request) -> Response:
        if not self.bootstrap:
            raise GroupcoordError(ErrorCode.CONTROLLER_NOT_AVAILABLE, "no bootstrap server given")
        deadline = time.monotonic() + self.retry_budget
        step = 0.05
        while True:
            last: GroupcoordError | None = None
            for i in range(len(self.bootstrap)):
                k = (self._next + i) % len(self.bootstrap)
                try:
                    response = self._call_on(self.bootstrap[k], request)
                    self._next = k
                    return response
                except TransportError as e:
                    last = GroupcoordError(ErrorCode.CONTROLLER_NOT_AVAILABLE, str(e), unreachable=True)
                except GroupcoordError as e:
                    if e.code != ErrorCode.CONTROLLER_NOT_AVAILABLE:
                        self._next = k
                        raise
                    last = e
            step = _backoff(step, deadline, last)

    def _call_controller(self, group: str, request: Request) -> Response:
        deadline = time.monotonic() + self.retry_budget
        step = 0.05
        while True:
            info = self._call_any(ListGroupsRequest([group])).groups  # type: ignore[union-attr]
            if len(info) != 1:
                raise GroupcoordError(ErrorCode.UNKNOWN_SERVER_ERROR, f"ListGroups answered no GroupInfo for {group}")
            if info[0].error != ErrorCode.NONE:
                raise GroupcoordError(info[0].error, f"group {group}")
            controller = info[0].controller
            if controller.is_none():
                last = GroupcoordError(ErrorCode.CONTROLLER_NOT_AVAILABLE, f"group {group} has no controller yet")
            else:
                try:
                    return self._call_on((controller.host or "127.0.0.1", controller.port), request)
                except TransportError as e:
                    last = GroupcoordError(ErrorCode.CONTROLLER_NOT_AVAILABLE, str(e))
                except GroupcoordError as e:
                    if not is_retriable(e.code):
                        raise
                    last = e
            step = _backoff(step, deadline, last)


def _backoff(step: float, deadline: float, last: GroupcoordError | None) -> float:
    """Sleeps one step of a bounded exponential backoff, or raises ``last``
    when the budget is spent."""
    now = time.monotonic()
    if now >= deadline:
        assert last is not None
        raise last
    time.sleep(min(step, deadline - now))
    return min(step * 2, 1.0)
