"""Admin and the consumers against a fake server on 127.0.0.1 that speaks
the codec: DescribeGroup goes to the controller ListGroups names, errors
are exceptions with the protocol's name and advice."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import socket
import threading
import time
import unittest

from groupcoord import Admin, AsyncConsumer, Callbacks, Consumer, ConsumerConfig, GroupcoordError, Security
from groupcoord import protocol as p
from groupcoord.aio import AsyncConnection
from groupcoord.connection import Connection
from groupcoord.errors import ErrorCode
from tests.support import REQUEST_TIMEOUT, design_bound, figure


class FakeServer:
    """Answers each request with ``handler(request)``, or at a version when
    it returns ``(response, version)``; records what it got and at which
    version."""

    def __init__(self, handler) -> None:  # type: ignore[no-untyped-def]
        self.handler = handler
        self.received: list[p.Request] = []
        self.versions: list[int] = []
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
                    self.versions.append(d.header.version)
                    answer, version = self.handler(d.request), 0
                    if isinstance(answer, tuple):
                        answer, version = answer
                    conn.sendall(p.encode_response(answer, d.header.correlation_id, version))
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
        # The refusal comes with the first answer, and poll raises it at once; the timeout only
        # has to cover that answer on a busy machine.
        timeout = design_bound(REQUEST_TIMEOUT)
        with self.assertRaises(GroupcoordError) as ctx:
            consumer.poll(timeout)
        consumer.close()
        self.assertEqual(ctx.exception.code, ErrorCode.UNKNOWN_GROUP)

        async def run() -> None:
            await AsyncConsumer(config).poll(timeout)
        with self.assertRaises(GroupcoordError) as ctx:
            asyncio.run(run())
        self.assertEqual(ctx.exception.code, ErrorCode.UNKNOWN_GROUP)


if __name__ == "__main__":
    unittest.main()


class PollDeadlineTest(unittest.TestCase):
    """poll(timeout) returns on time even when a heartbeat is always due: past its deadline it ends
    the exchange in flight and returns, and that exchange waits at most the request timeout, which
    the group's session caps at half of it (Member.request_timeout())."""

    SESSION = 3.0
    POLL = 0.2
    # A rule with a bound the client's design gives, asserted with the allowance.
    RETURNS_WITHIN = design_bound(POLL + SESSION / 2)

    def setUp(self) -> None:
        self.server = FakeServer(self._answer)

    def tearDown(self) -> None:
        self.server.close()

    def _answer(self, r: p.Request) -> p.Response:
        if isinstance(r, p.ListGroupsRequest):
            return p.ListGroupsResponse([p.GroupInfo("g", controller=p.Broker(1, "127.0.0.1", self.server.port),
                                                     session_timeout_ms=round(self.SESSION * 1000))])
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
        self.assertTrue(c.poll(self.POLL))
        elapsed = time.monotonic() - start
        self.assertLess(elapsed, self.RETURNS_WITHIN)
        # The heartbeat due when the poll began went out; how many more fit in the poll is a
        # measure of speed: reported, not asserted (tests/README.md, "Time in tests").
        beats = sum(isinstance(r, p.HeartbeatRequest) for r in self.server.received)
        self.assertGreaterEqual(beats, 1)
        figure(f"python blocking poll({self.POLL}) with a heartbeat always due: returned after {elapsed:.3f} s, "
               f"{beats} heartbeats")
        c.close()

    def test_asyncio_poll(self) -> None:
        async def run() -> float:
            c = AsyncConsumer(self.config())
            self.assertTrue(await c.poll(0.0))
            start = time.monotonic()
            self.assertTrue(await c.poll(self.POLL))
            elapsed = time.monotonic() - start
            await c.close()
            return elapsed
        # A hang guard: every exchange of the run (ListGroups, the registration, the poll's last
        # heartbeat, LeaveGroup) within a request timeout, and the poll's own time.
        elapsed = asyncio.run(asyncio.wait_for(run(), design_bound(self.POLL + 4 * REQUEST_TIMEOUT)))
        self.assertLess(elapsed, self.RETURNS_WITHIN)
        figure(f"python asyncio poll({self.POLL}) with a heartbeat always due: returned after {elapsed:.3f} s")


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
        # A hang guard: ListGroups, the registration, the refused commit, ListGroups again and the
        # commit, each within a request timeout.
        asyncio.run(asyncio.wait_for(run(), design_bound(5 * REQUEST_TIMEOUT)))
        self.assertEqual(len(self.new.received), 2)


# ---- Authenticate: SCRAM-SHA-256 (version 1) and plain (version 0) ------------------

def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


class ScramServer:
    """The server's half of SCRAM-SHA-256 for one user, written for these
    tests from RFC 5802 (what groupcoordd keeps: StoredKey and ServerKey),
    with knobs to make it misbehave. One exchange at a time."""

    def __init__(self, user: str, secret: str, iterations: int = 10_000) -> None:
        self.user = user
        self.salt = b"groupcoord-salt!"
        self.iterations = iterations
        salted = hashlib.pbkdf2_hmac("sha256", secret.encode(), self.salt, iterations, 32)
        self.stored_key = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
        self.server_key = _hmac(salted, b"Server Key")
        self.nonce_suffix = "srv-9f2c"
        self.nonce_prefix = ""       # set: the server's nonce does not start with the client's
        self.wrong_signature = False
        self.auth_off = False
        self.old = False             # a server that speaks Authenticate version 0 only
        self.plain_secret = secret
        self.authenticated = False
        self._bare = self._first = ""

    def __call__(self, r: p.Request):  # type: ignore[no-untyped-def]
        if isinstance(r, p.AuthenticateRequest):
            return self.authenticate(r)
        if isinstance(r, p.ListGroupsRequest):
            return p.ListGroupsResponse([], ErrorCode.NONE if self.authenticated else ErrorCode.NOT_AUTHORIZED)
        return p.error_response(r, ErrorCode.UNKNOWN_SERVER_ERROR)

    def authenticate(self, r: p.AuthenticateRequest):  # type: ignore[no-untyped-def]
        self.authenticated = False
        if not r.mechanism:  # version 0
            ok = (r.user, r.secret) == (self.user, self.plain_secret)
            self.authenticated = ok
            return p.AuthenticateResponse(ErrorCode.NONE if ok else ErrorCode.NOT_AUTHORIZED)
        if self.old:
            return p.AuthenticateResponse(ErrorCode.UNSUPPORTED_VERSION)  # error-only, 2 bytes
        if r.mechanism != "SCRAM-SHA-256":
            return p.AuthenticateResponse(ErrorCode.INVALID_REQUEST, b"SCRAM-SHA-256"), 1
        text = r.message.decode()
        if self.auth_off:
            return p.AuthenticateResponse(ErrorCode.NONE, b""), 1
        if text.startswith("n,,"):
            self._bare = text[3:]
            attrs = dict(a.split("=", 1) for a in self._bare.split(","))
            if attrs.get("n") != self.user:
                return p.AuthenticateResponse(ErrorCode.NOT_AUTHORIZED, b"e=other-error"), 1
            nonce = (self.nonce_prefix or attrs["r"]) + self.nonce_suffix
            salt = base64.b64encode(self.salt).decode()
            self._first = f"r={nonce},s={salt},i={self.iterations}"
            return p.AuthenticateResponse(ErrorCode.NONE, self._first.encode()), 1
        without_proof, proof = text.rsplit(",p=", 1)
        auth_message = f"{self._bare},{self._first},{without_proof}".encode()
        signature = _hmac(self.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature))
        if hashlib.sha256(client_key).digest() != self.stored_key:
            return p.AuthenticateResponse(ErrorCode.NOT_AUTHORIZED, b"e=invalid-proof"), 1
        self.authenticated = True
        server_signature = _hmac(self.server_key, auth_message)
        if self.wrong_signature:
            server_signature = bytes(32)
        return p.AuthenticateResponse(ErrorCode.NONE, b"v=" + base64.b64encode(server_signature)), 1


class AuthenticateTest(unittest.TestCase):
    SECRET = "app-secret-09bc"

    def setUp(self) -> None:
        self.scram = ScramServer("app", self.SECRET)
        self.server = FakeServer(self.scram)

    def tearDown(self) -> None:
        self.server.close()

    def connect(self, secret: str = SECRET, plain_auth: bool = False) -> Connection:
        conn = Connection(security=Security(user="app", secret=secret, plain_auth=plain_auth))
        conn.connect("127.0.0.1", self.server.port, 5.0)
        return conn

    def refused(self, secret: str = SECRET) -> GroupcoordError:
        conn = Connection(security=Security(user="app", secret=secret))
        with self.assertRaises(GroupcoordError) as ctx:
            conn.connect("127.0.0.1", self.server.port, 5.0)
        self.assertFalse(conn.is_open)
        return ctx.exception

    def kinds(self) -> list[str]:
        out = []
        for r, v in zip(self.server.received, self.server.versions):
            if isinstance(r, p.AuthenticateRequest):
                out.append(f"auth-v{v}:" + (r.message.decode()[:2] if r.mechanism else "plain"))
            else:
                out.append(type(r).__name__)
        return out

    def test_scram_by_default_blocking(self) -> None:
        conn = self.connect()
        self.assertEqual(p.response_error(conn.call(p.ListGroupsRequest(), 5.0)), ErrorCode.NONE)
        conn.close()
        self.assertEqual(self.kinds(), ["auth-v1:n,", "auth-v1:c=", "ListGroupsRequest"])
        first, final = (r.message.decode() for r in self.server.received[:2])
        self.assertEqual([r.mechanism for r in self.server.received[:2]], ["SCRAM-SHA-256"] * 2)
        self.assertRegex(first, r"^n,,n=app,r=[A-Za-z0-9+/]{24}$")
        self.assertTrue(final.startswith(f"c=biws,r={first[11:]}srv-9f2c,p="), final)
        self.assertNotIn(self.SECRET, "".join(r.message.decode() for r in self.server.received[:2]))

    def test_scram_by_default_asyncio(self) -> None:
        async def run() -> int:
            conn = AsyncConnection("py", Security(user="app", secret=self.SECRET))
            await conn.connect("127.0.0.1", self.server.port, 5.0)
            code = p.response_error(await conn.call(p.ListGroupsRequest(), 5.0))
            conn.close()
            return code
        self.assertEqual(asyncio.run(asyncio.wait_for(run(), 20)), ErrorCode.NONE)
        self.assertEqual(self.kinds(), ["auth-v1:n,", "auth-v1:c=", "ListGroupsRequest"])

        async def wrong() -> None:
            conn = AsyncConnection("py", Security(user="app", secret="wrong"))
            await conn.connect("127.0.0.1", self.server.port, 5.0)
        with self.assertRaises(GroupcoordError) as ctx:
            asyncio.run(asyncio.wait_for(wrong(), 20))
        self.assertEqual(ctx.exception.code, ErrorCode.NOT_AUTHORIZED)
        self.assertIn("invalid-proof", str(ctx.exception))

    def test_a_wrong_secret_is_refused_as_before(self) -> None:
        e = self.refused("wrong")
        self.assertEqual(e.code, ErrorCode.NOT_AUTHORIZED)
        self.assertIn(f"the server at 127.0.0.1:{self.server.port} refused Authenticate as 'app'", str(e))
        self.assertIn("e=invalid-proof", str(e))
        self.assertEqual(self.kinds(), ["auth-v1:n,", "auth-v1:c="])
        # Through Admin too: the same error as for a refused plain Authenticate.
        with Admin([("127.0.0.1", self.server.port)], security=Security(user="app", secret="wrong"),
                   retry_budget=1) as admin:
            with self.assertRaises(GroupcoordError) as ctx:
                admin.list_groups()
        self.assertEqual(ctx.exception.name, "NOT_AUTHORIZED")
        self.assertFalse(ctx.exception.unreachable)

    def test_a_wrong_server_signature_fails_the_connection(self) -> None:
        self.scram.wrong_signature = True
        e = self.refused()
        self.assertEqual(e.code, ErrorCode.NOT_AUTHORIZED)
        self.assertIn("signature does not match", str(e))
        self.assertEqual(self.kinds(), ["auth-v1:n,", "auth-v1:c="])  # nothing sent after it

    def test_a_nonce_that_does_not_extend_ours_is_refused(self) -> None:
        self.scram.nonce_prefix = "someone-elses-nonce"
        e = self.refused()
        self.assertEqual(e.code, ErrorCode.NOT_AUTHORIZED)
        self.assertIn("nonce does not extend ours", str(e))
        self.assertEqual(self.kinds(), ["auth-v1:n,"])  # no proof was sent

    def test_too_few_iterations_are_refused(self) -> None:
        self.scram = ScramServer("app", self.SECRET, iterations=4096)
        self.server.handler = self.scram
        e = self.refused()
        self.assertIn("4096 PBKDF2 iterations", str(e))
        self.assertEqual(self.kinds(), ["auth-v1:n,"])

    def test_an_empty_challenge_means_authentication_is_off(self) -> None:
        self.scram.auth_off = True
        self.scram.authenticated = True
        conn = self.connect()
        self.assertTrue(conn.is_open)
        conn.call(p.ListGroupsRequest(), 5.0)
        conn.close()
        self.assertEqual(self.kinds(), ["auth-v1:n,", "ListGroupsRequest"])

    def test_a_server_without_version_one_says_plain_auth_would_work(self) -> None:
        self.scram.old = True
        e = self.refused()
        self.assertEqual(e.code, ErrorCode.UNSUPPORTED_VERSION)
        self.assertIn("refused Authenticate as 'app'", str(e))
        self.assertIn("does not speak SCRAM-SHA-256 (Authenticate version 1)", str(e))
        self.assertIn("only plain auth", str(e))
        self.assertIn("sends the secret as it is", str(e))
        # What it says works.
        conn = self.connect(plain_auth=True)
        conn.close()

    def test_plain_auth_sends_version_zero(self) -> None:
        conn = self.connect(plain_auth=True)
        self.assertEqual(p.response_error(conn.call(p.ListGroupsRequest(), 5.0)), ErrorCode.NONE)
        conn.close()
        self.assertEqual(self.kinds(), ["auth-v0:plain", "ListGroupsRequest"])
        self.assertEqual(self.server.received[0], p.AuthenticateRequest("app", self.SECRET))
        conn = Connection(security=Security(user="app", secret="wrong", plain_auth=True))
        with self.assertRaises(GroupcoordError) as ctx:
            conn.connect("127.0.0.1", self.server.port, 5.0)
        self.assertTrue(str(ctx.exception).startswith(
            f"NOT_AUTHORIZED: the server at 127.0.0.1:{self.server.port} refused Authenticate as 'app'. "),
            str(ctx.exception))

    def test_security_repr_hides_the_secret(self) -> None:
        text = repr(Security(user="app", secret=self.SECRET, plain_auth=True))
        self.assertNotIn(self.SECRET, text)
        self.assertIn("plain_auth=True", text)
        self.assertFalse(Security().plain_auth)
