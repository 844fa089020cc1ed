"""Admin and the consumers against a fake server on 127.0.0.1 that speaks
the codec: DescribeGroup goes to the controller ListGroups names, errors
are exceptions with the protocol's name and advice."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import unittest

from groupcoord import Admin, AsyncConsumer, Callbacks, Consumer, ConsumerConfig, GroupcoordError
from groupcoord import protocol as p
from groupcoord.errors import ErrorCode


class FakeServer:
    """Answers each request with ``handler(request)``; records what it got."""

    def __init__(self, handler) -> None:  # type: ignore[no-untyped-def]
        self.handler = handler
        self.received: list[p.Request] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        buf = bytearray()
        with conn:
            while True:
                status, size = p.peek_frame(buf, min_body=p.MIN_REQUEST_BODY)
                if status is p.FrameStatus.READY:
                    d = p.decode_request(bytes(buf[4:4 + size]))
                    del buf[:4 + size]
                    if d.request is None:
                        code = {p.DecodeStatus.UNKNOWN_API: ErrorCode.UNKNOWN_API}.get(d.status,
                                                                                       ErrorCode.INVALID_REQUEST)
                        conn.sendall(p.encode_response(p.ErrorOnlyResponse(code), d.header.correlation_id))
                        continue
                    self.received.append(d.request)
                    conn.sendall(p.encode_response(self.handler(d.request), d.header.correlation_id))
                    continue
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk

    def close(self) -> None:
        self.sock.close()


class AdminWithFakeServersTest(unittest.TestCase):
    def setUp(self) -> None:
        self.described = p.DescribeGroupResponse(
            "orders", ErrorCode.NONE, p.Broker(2, "127.0.0.1", 0), p.GroupState.STABLE, 6000, False, 4,
            [p.TopicState("t", 2)], [p.MemberState("m-1", "svc", "127.0.0.1", 5000, 1, 2, [p.TopicPartition("t", 0)])],
            [p.PartitionOffset("t", 0, 9)], [p.RebalanceEvent(1, 4, p.RebalanceReason.MEMBER_JOINED, 1, "m-1")])
        self.controller = FakeServer(self._controller)
        self.described.controller = p.Broker(2, "127.0.0.1", self.controller.port)
        self.bootstrap = FakeServer(self._bootstrap)

    def tearDown(self) -> None:
        self.controller.close()
        self.bootstrap.close()

    def _bootstrap(self, r: p.Request) -> p.Response:
        if isinstance(r, p.ListGroupsRequest):
            name = r.groups[0]
            if name == "orders":
                return p.ListGroupsResponse([p.GroupInfo("orders", controller=self.described.controller)])
            return p.ListGroupsResponse([p.GroupInfo(name, ErrorCode.UNKNOWN_GROUP)])
        return p.error_response(r, ErrorCode.NOT_CONTROLLER)

    def _controller(self, r: p.Request) -> p.Response:
        if isinstance(r, p.DescribeGroupRequest):
            return self.described
        return p.error_response(r, ErrorCode.NOT_AUTHORIZED)

    def test_describe_group_asks_the_controller_that_list_groups_names(self) -> None:
        with Admin([("127.0.0.1", self.bootstrap.port)], retry_budget=2) as admin:
            d = admin.describe_group("orders")
        self.assertEqual(d, self.described)
        self.assertEqual(self.bootstrap.received, [p.ListGroupsRequest(["orders"])])
        self.assertEqual(self.controller.received, [p.DescribeGroupRequest("orders")])

    def test_describe_servers_asks_any_server(self) -> None:
        placement = p.DescribeServersResponse(
            ErrorCode.NONE, 1, 100, 50, "members", 10, 24, 14, True,
            [p.ServerPlacement(1, "10.0.0.1", 7400, False, True, True, 24, 2, 12),
             p.ServerPlacement(2, "10.0.0.2", 7400, False, True, True, 0, 0, 12)],
            [p.GroupMove("clicks", 12, 1, 2)])
        server = FakeServer(lambda r: placement if isinstance(r, p.DescribeServersRequest)
                            else p.error_response(r, ErrorCode.NOT_AUTHORIZED))
        older = FakeServer(lambda r: p.ErrorOnlyResponse(ErrorCode.UNKNOWN_API))
        try:
            with Admin([("127.0.0.1", server.port)], retry_budget=2) as admin:
                self.assertEqual(admin.describe_servers(), placement)
            self.assertEqual(server.received, [p.DescribeServersRequest()])
            with Admin([("127.0.0.1", older.port)], retry_budget=2) as admin:
                with self.assertRaises(GroupcoordError) as ctx:
                    admin.describe_servers()
            self.assertEqual(ctx.exception.name, "UNKNOWN_API")
        finally:
            server.close()
            older.close()

    def test_errors_carry_the_name_and_what_to_do(self) -> None:
        with Admin([("127.0.0.1", self.bootstrap.port)], retry_budget=2) as admin:
            with self.assertRaises(GroupcoordError) as ctx:
                admin.describe_group("missing")
            self.assertEqual(ctx.exception.code, ErrorCode.UNKNOWN_GROUP)
            self.assertEqual(ctx.exception.name, "UNKNOWN_GROUP")
            self.assertIn("create it first", str(ctx.exception))
            with self.assertRaises(GroupcoordError) as ctx:
                admin.rewind("orders", [p.PartitionOffset("t", 0, 0)])
            self.assertEqual(ctx.exception.name, "NOT_AUTHORIZED")

    def test_an_unreachable_cluster_says_so(self) -> None:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        with Admin([("127.0.0.1", port)], retry_budget=0.3, request_timeout=0.5) as admin:
            with self.assertRaises(GroupcoordError) as ctx:
                admin.list_groups()
        self.assertTrue(ctx.exception.unreachable)
        self.assertEqual(ctx.exception.code, ErrorCode.CONTROLLER_NOT_AVAILABLE)

    def test_the_consumers_raise_what_retrying_cannot_fix(self) -> None:
        config = ConsumerConfig([("127.0.0.1", self.bootstrap.port)], "missing")
        consumer = Consumer(config, Callbacks())
        with self.assertRaises(GroupcoordError) as ctx:
            consumer.poll(2.0)
        consumer.close()
        self.assertEqual(ctx.exception.code, ErrorCode.UNKNOWN_GROUP)

        async def run() -> None:
            await AsyncConsumer(config).poll(2.0)
        with self.assertRaises(GroupcoordError) as ctx:
            asyncio.run(run())
        self.assertEqual(ctx.exception.code, ErrorCode.UNKNOWN_GROUP)


if __name__ == "__main__":
    unittest.main()


class PollDeadlineTest(unittest.TestCase):
    """poll(timeout) returns on time even when a heartbeat is always due."""

    def setUp(self) -> None:
        self.server = FakeServer(self._answer)

    def tearDown(self) -> None:
        self.server.close()

    def _answer(self, r: p.Request) -> p.Response:
        if isinstance(r, p.ListGroupsRequest):
            return p.ListGroupsResponse([p.GroupInfo("g", controller=p.Broker(1, "127.0.0.1", self.server.port),
                                                     session_timeout_ms=3000)])
        if isinstance(r, p.RegisterConsumerRequest):
            return p.RegisterConsumerResponse("g", "m-1", 1, ["m-1"], [p.PartitionOffset("t", 0, 4)])
        if isinstance(r, p.HeartbeatRequest):
            return p.HeartbeatResponse(1)
        return p.error_response(r, ErrorCode.UNKNOWN_SERVER_ERROR)

    def config(self) -> ConsumerConfig:
        return ConsumerConfig([("127.0.0.1", self.server.port)], "g", heartbeat_interval=0.0)

    def test_blocking_poll(self) -> None:
        got: list = []
        c = Consumer(self.config(), Callbacks(on_assigned=got.append))
        self.assertTrue(c.poll(0.0))  # a join in progress is finished even at timeout 0
        self.assertEqual(got, [[p.PartitionOffset("t", 0, 4)]])
        start = time.monotonic()
        self.assertTrue(c.poll(0.2))
        self.assertLess(time.monotonic() - start, 1.0)
        beats = sum(isinstance(r, p.HeartbeatRequest) for r in self.server.received)
        self.assertGreater(beats, 1)
        c.close()

    def test_asyncio_poll(self) -> None:
        async def run() -> float:
            c = AsyncConsumer(self.config())
            self.assertTrue(await c.poll(0.0))
            start = time.monotonic()
            self.assertTrue(await c.poll(0.2))
            elapsed = time.monotonic() - start
            await c.close()
            return elapsed
        self.assertLess(asyncio.run(asyncio.wait_for(run(), 10)), 1.0)


class CommitFollowsTheControllerTest(unittest.TestCase):
    """A commit answered NOT_CONTROLLER asks ListGroups again and commits at
    the controller it names, as the C++ client's commitSync does."""

    def setUp(self) -> None:
        self.old = FakeServer(self._old)
        self.new = FakeServer(self._new)
        self.controller = self.old

    def tearDown(self) -> None:
        self.old.close()
        self.new.close()

    def _listed(self) -> p.ListGroupsResponse:
        return p.ListGroupsResponse([p.GroupInfo("g", controller=p.Broker(1, "127.0.0.1", self.controller.port),
                                                 session_timeout_ms=6000)])

    def _old(self, r: p.Request) -> p.Response:
        if isinstance(r, p.ListGroupsRequest):
            return self._listed()
        if isinstance(r, p.RegisterConsumerRequest):
            return p.RegisterConsumerResponse("g", "m-1", 1, ["m-1"], [p.PartitionOffset("t", 0, -1)])
        if self.controller is self.old and isinstance(r, p.HeartbeatRequest):
            return p.HeartbeatResponse(1)
        return p.error_response(r, ErrorCode.NOT_CONTROLLER)

    def _new(self, r: p.Request) -> p.Response:
        if isinstance(r, p.CommitOffsetsRequest):
            return p.CommitOffsetsResponse([p.PartitionError("t", 0, ErrorCode.NONE)])
        return p.error_response(r, ErrorCode.UNKNOWN_SERVER_ERROR)

    def test_blocking_and_asyncio(self) -> None:
        config = ConsumerConfig([("127.0.0.1", self.old.port)], "g")
        offsets = [p.PartitionOffset("t", 0, 8)]
        c = Consumer(config)
        self.assertTrue(c.poll(0.0))
        self.controller = self.new  # the group moved
        c.commit(offsets)
        self.assertEqual(self.new.received, [p.CommitOffsetsRequest("g", "m-1", 1, offsets)])

        async def run() -> None:
            self.controller = self.old
            a = AsyncConsumer(config)
            self.assertTrue(await a.poll(0.0))
            self.controller = self.new
            await a.commit(offsets)
        asyncio.run(asyncio.wait_for(run(), 10))
        self.assertEqual(len(self.new.received), 2)
