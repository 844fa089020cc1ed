"""The asyncio consumer: the same state machine as :class:`groupcoord.Consumer`,
driven by coroutines, for asyncio services. Callbacks may be plain
functions or coroutine functions; they run in the task that polls."""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any, Sequence

from .connection import Authenticator, Security, TransportError, decode_answer
from .consumer import Callbacks, ConsumerConfig, Endpoint, MemberFrontEnd
from .errors import ErrorCode, GroupcoordError, is_retriable
from .member import Event, Member, Send, Target
from .protocol import (MIN_RESPONSE_BODY, AuthenticateRequest, FrameStatus, PartitionOffset, Request, Response,
                       api_name, decode_response, encode_request, peek_frame, response_error)

MAX_FRAME_BYTES = 64 << 20


class AsyncConnection:
    """One asyncio connection, one request at a time."""

    def __init__(self, client_id: str | None, security: Security) -> None:
        self.client_id = client_id
        self.security = security
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._next_id = 1
        self._ctx = None
        self.where = ""

    @property
    def is_open(self) -> bool:
        """True while connected."""
        return self._writer is not None

    async def connect(self, host: str, port: int, timeout: float) -> None:
        """Connects, makes the TLS handshake and authenticates; raises like
        :meth:`groupcoord.connection.Connection.connect`."""
        self.close()
        self.where = f"{host}:{port}"
        kwargs: dict[str, Any] = {}
        if self.security.tls:
            if self._ctx is None:
                self._ctx = self.security.ssl_context()
            kwargs = {"ssl": self._ctx, "server_hostname": self.security.server_name(host)}
        try:
            self._reader, self._writer = await asyncio.wait_for(asyncio.open_connection(host, port, **kwargs),
                                                                timeout)
        except (OSError, asyncio.TimeoutError) as e:
            raise TransportError(f"cannot connect to {self.where}: {e or 'timed out'}") from None
        if self.security.user:
            auth = Authenticator(self.security, self.where)
            step: tuple[AuthenticateRequest, int] | None = auth.start()
            while step is not None:
                r = await self.call(step[0], max(timeout, 1.0), step[1])
                try:
                    step = auth.answer(r)
                except GroupcoordError:
                    self.close()
                    raise

    def close(self) -> None:
        """Closes the connection."""
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def call(self, request: Request, timeout: float, version: int = 0) -> Response:
        """Sends ``request`` and returns its decoded answer; TransportError otherwise."""
        if self._writer is None or self._reader is None:
            raise TransportError("not connected")
        cid = self._next_id
        self._next_id += 1
        try:
            self._writer.write(encode_request(request, cid, self.client_id, version))
            body = await asyncio.wait_for(self._read_frame(self._reader), timeout)
            decoded = decode_response(int(request.API), body)
        except asyncio.TimeoutError:
            self.close()
            raise TransportError(f"no whole response from {self.where} within {timeout:.3f} s") from None
        except (OSError, asyncio.IncompleteReadError, Exception) as e:
            self.close()
            if isinstance(e, TransportError):
                raise
            raise TransportError(f"{api_name(request.API)} to {self.where} failed: {e!r}") from None
        if decoded.header.correlation_id != cid:
            self.close()
            raise TransportError(f"response correlation id {decoded.header.correlation_id}, expected {cid}")
        return decoded.response

    def send(self, request: Request, version: int = 0) -> int:
        """Sends ``request`` without waiting for its answer; its correlation id."""
        if self._writer is None:
            raise TransportError("not connected")
        cid = self._next_id
        self._next_id += 1
        self._writer.write(encode_request(request, cid, self.client_id, version))
        return cid

    def read_next(self) -> "asyncio.Task[bytes]":
        """A task reading the next response frame's body: awaited without
        being cancelled, so that a wait that ends first loses no byte."""
        if self._reader is None:
            raise TransportError("not connected")
        return asyncio.ensure_future(self._read_frame(self._reader))

    def decode(self, request: Request, cid: int, body: bytes) -> Response:
        """The answer to ``request`` (correlation id ``cid``) in ``body``;
        TransportError, with the connection closed, when it is not."""
        try:
            return decode_answer(request, cid, body, self.where)
        except TransportError:
            self.close()
            raise

    async def _read_frame(self, reader: asyncio.StreamReader) -> bytes:
        prefix = await reader.readexactly(4)
        status, size = peek_frame(prefix + b"\0" * MIN_RESPONSE_BODY, MAX_FRAME_BYTES, MIN_RESPONSE_BODY)
        if status in (FrameStatus.TOO_SMALL, FrameStatus.TOO_LARGE):
            raise TransportError(f"response frame size {size} from {self.where} cannot be trusted")
        return await reader.readexactly(size)


class AsyncConsumer(MemberFrontEnd):
    """A member of a consumer group for asyncio: ``await poll(timeout)``."""

    def __init__(self, config: ConsumerConfig, callbacks: Callbacks | None = None) -> None:
        self.config = config
        self.callbacks = callbacks or Callbacks()
        self.member = Member(config.member_config())
        self._conn = AsyncConnection(config.client_id, config.security)
        self._conn_to: Endpoint | None = None
        self._next_bootstrap = 0
        # The held heartbeat (docs/design.md, "Held heartbeats"): its Send,
        # correlation id, send time, and the task reading its answer.
        self._held: tuple[Send, int, float, asyncio.Task[bytes]] | None = None
        # One exchange at a time on the connection (a poll() and a commit()
        # may run in two tasks): the held heartbeat's read is the only one
        # outstanding outside it.
        self._io = asyncio.Lock()

    async def poll(self, timeout: float) -> bool:
        """Does what is due for ``timeout`` seconds, as :meth:`groupcoord.Consumer.poll`."""
        loop_clock = time.monotonic
        deadline = loop_clock() + timeout
        while True:
            self._raise_if_fatal()
            send = self.member.next_send(loop_clock())
            await self._run(self.member.take_events())
            if send is not None:
                await self._exchange(send)
                await self._run(self.member.take_events())
                # Past the deadline, poll returns even while requests keep
                # falling due (a heartbeat interval shorter than a round trip);
                # it goes on only to finish a join that is making progress.
                if loop_clock() < deadline or (not self.member.is_member() and self.member.last_error is None
                                             and self.member.fatal is None):
                    continue
                break
            now = loop_clock()
            if now >= deadline:
                break
            if self._held is not None:
                # Waits on the held heartbeat's answer: it comes the moment
                # the controller has news for this member.
                # It also wakes at the lease's end: next_send() fences the
                # member then, whether or not the answer has come.
                await self._await_held(min(deadline, self._held_limit(), self.member.next_wake(now)) - now)
                await self._run(self.member.take_events())
                continue
            wake = min(self.member.next_wake(now), deadline)
            await asyncio.sleep(max(wake - now, 0))
        self._raise_if_fatal()
        return self.member.is_member()

    async def commit(self, offsets: Sequence[PartitionOffset]) -> None:
        """Commits offsets of partitions this member holds, as :meth:`groupcoord.Consumer.commit`."""
        offsets = list(offsets)
        request = self.member.commit_request(offsets)
        deadline = min(time.monotonic() + 10.0, self.member.lease_expiry())
        step = 0.05
        while True:
            try:
                error = self._commit_answer(offsets, await self._call_controller(request), self._conn.where)
                if error is None:
                    return
                if error.code == ErrorCode.NOT_CONTROLLER:
                    self._lost_controller()
            except TransportError as e:
                error = GroupcoordError(ErrorCode.CONTROLLER_NOT_AVAILABLE, str(e))
                self._lost_controller()
            if time.monotonic() + step >= deadline:
                raise error
            await asyncio.sleep(step)
            step = min(step * 2, 1.0)

    async def close(self) -> None:
        """Leaves the group: on_revoked for what it holds, then LeaveGroup."""
        leave = self.member.close()
        await self._run(self.member.take_events())
        if leave is not None:
            deadline = time.monotonic() + 10.0
            step = 0.05
            while True:
                try:
                    if not is_retriable(response_error(await self._call_controller(leave))):
                        break
                except TransportError:
                    pass
                except GroupcoordError:
                    break
                self._lost_controller()
                if time.monotonic() + step >= deadline:
                    break
                await asyncio.sleep(step)
                step = min(step * 2, 1.0)
        self.member.left()
        if self._held is not None:
            self._held[3].cancel()
            self._held = None
        self._conn.close()

    async def __aenter__(self) -> "AsyncConsumer":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- internals -----------------------------------------------------------------

    async def _run(self, events: list[Event]) -> None:
        for e in events:
            fn = self.callbacks.for_event(e)
            if fn is not None:
                result = fn(e.partitions)
                if inspect.isawaitable(result):
                    await result

    def _drop_controller(self) -> None:
        self._conn.close()
        self._conn_to = None
        self._held_failed("its connection was closed")

    def _held_limit(self) -> float:
        """When the held heartbeat's answer is overdue: its wait and one request's timeout."""
        assert self._held is not None
        send, _, sent_at, _ = self._held
        return sent_at + send.held + self.member.request_timeout()

    def _held_failed(self, detail: str) -> None:
        if self._held is None:
            return
        send, _, _, task = self._held
        self._held = None
        task.cancel()
        self.member.forget_controller()
        self.member.on_failure(send, time.monotonic(), f"held Heartbeat: {detail}")

    async def _await_held(self, timeout: float) -> None:
        """Takes the held heartbeat's answer if it comes within ``timeout``
        (another task may take it meanwhile: then nothing is done here)."""
        held = self._held
        assert held is not None
        send, cid, sent_at, task = held
        done, _ = await asyncio.wait({task}, timeout=max(timeout, 0.0))
        if self._held is not held:
            return  # taken (or given up) by another task while this one waited
        if not done:
            if time.monotonic() >= self._held_limit():
                self._drop_controller()  # overdue: the connection is done with
            return
        try:
            response = self._conn.decode(send.request, cid, task.result())
        except (Exception, asyncio.CancelledError):  # a read that failed or was cut: the connection is done with
            self._drop_controller()
            return
        self._held = None
        if response_error(response) == ErrorCode.NOT_CONTROLLER:
            self._drop_controller()
        self.member.on_response(send, response, sent_at, time.monotonic())

    async def _connect_to(self, target: Endpoint) -> None:
        if not self._conn.is_open or self._conn_to != target:
            self._held_failed("the controller moved")
            await self._conn.connect(target[0], target[1], self.config.request_timeout)
            self._conn_to = target

    def _lost_controller(self) -> None:
        """Outside poll: a NOT_CONTROLLER or a failed call; ask ListGroups again."""
        self._drop_controller()
        self.member.forget_controller()

    async def _call_controller(self, request: Request, version: int = 0) -> Response:
        if self.member.controller is None:
            send = self.member.list_request()
            sent_at = time.monotonic()
            self.member.on_response(send, await self._list_on_bootstrap(send), sent_at, time.monotonic())
            self._raise_if_fatal()
        target = self.member.controller
        if target is None:
            raise TransportError(f"group {self.config.group} has no controller now")
        async with self._io:
            return await self._exchange_on_controller(target, request, version)

    async def _exchange_on_controller(self, target: Endpoint, request: Request, version: int) -> Response:
        await self._connect_to(target)
        if self._held is None:
            return await self._conn.call(request, self.member.request_timeout(), version)
        # A heartbeat is held at the controller: this request, once read
        # there, makes it answer that heartbeat first; its answer is taken,
        # then this request's.
        cid = self._conn.send(request, version)
        await self._await_held(self.member.request_timeout())
        if self._held is not None or not self._conn.is_open:
            self._drop_controller()
            raise TransportError(f"{type(request).__name__} to {self._conn.where} failed behind a held heartbeat")
        reading = self._conn.read_next()
        try:
            done, _ = await asyncio.wait({reading}, timeout=self.member.request_timeout())
            if not done:
                self._drop_controller()
                raise TransportError(f"no answer to {type(request).__name__} from {self._conn.where}")
            try:
                return self._conn.decode(request, cid, reading.result())
            except TransportError:
                raise
            except Exception as e:  # noqa: BLE001 - a failed read: the connection is done with
                self._drop_controller()
                raise TransportError(f"{type(request).__name__} to {self._conn.where} failed: {e!r}") from None
        finally:
            if not reading.done():
                reading.cancel()

    async def _exchange(self, send: Send) -> None:
        sent_at = time.monotonic()
        try:
            if send.target is Target.BOOTSTRAP:
                response = await self._list_on_bootstrap(send)
            elif send.held > 0:
                # Sent, not waited for: poll() and every call take its answer.
                target = self.member.controller
                if target is None:
                    raise TransportError(f"group {self.config.group} has no controller now")
                async with self._io:
                    await self._connect_to(target)
                    self._held = (send, self._conn.send(send.request, send.version), sent_at, self._conn.read_next())
                return
            else:
                response = await self._call_controller(send.request, send.version)
        except GroupcoordError as e:
            self.member.on_refused(send, e)
            return
        except TransportError as e:
            self._drop_controller()
            self.member.on_failure(send, time.monotonic(), str(e))
            return
        if response_error(response) == ErrorCode.NOT_CONTROLLER:
            self._drop_controller()
        self.member.on_response(send, response, sent_at, time.monotonic())

    async def _list_on_bootstrap(self, send: Send) -> Response:
        servers = list(self.config.bootstrap)
        last = "no bootstrap server given"
        for i in range(len(servers)):
            k = (self._next_bootstrap + i) % len(servers)
            conn = AsyncConnection(self.config.client_id, self.config.security)
            try:
                await conn.connect(servers[k][0], servers[k][1], self.config.request_timeout)
                response = await conn.call(send.request, self.config.request_timeout)
            except TransportError as e:
                last = str(e)
                continue
            finally:
                conn.close()
            self._next_bootstrap = k
            return response
        raise TransportError(last)
