"""Admin end to end against groupcoordd and the live ensemble, then with
authentication (SCRAM-SHA-256 by default, plain on request), with TLS, and
with both."""

from __future__ import annotations

import asyncio
import re
import time

from groupcoord import (Admin, AsyncConsumer, Callbacks, Consumer, ConsumerConfig, GroupcoordError,
                        PartitionOffset, Security)
from groupcoord.connection import Connection
from groupcoord.errors import ErrorCode
from groupcoord.protocol import AuthenticateRequest, AuthenticateResponse, ListGroupsRequest, RebalanceReason, \
    TopicPartition, response_error
from groupcoord.scram import ScramClient
from tests.support import (CLIENT_RETRY, REQUEST_TIMEOUT, LiveTestCase, create_topic, design_bound, retry_budget,
                           settle_bound)

ADMIN_SECRET = "ops secret: 7f3a"
MEMBER_SECRET = "app-secret-09bc"

# The groups' session timeout. Between joining and the checks that count on the member (describe,
# GROUP_NOT_EMPTY, the rewind) the test commits through ZooKeeper and makes admin calls without
# polling, so the lease has the scheduling allowance on top of the 2 s it had, and a busy machine
# does not fence the member; the consumers heartbeat as often as in a 2 s session (config()).
SESSION_TIMEOUT = design_bound(2.0)
SESSION_MS = round(SESSION_TIMEOUT * 1000)
HEARTBEAT_INTERVAL = 2.0 / 3
# A join or a rewind settles within settle_bound(): each wait polls up to that plus the allowance.
SETTLE = design_bound(settle_bound(HEARTBEAT_INTERVAL))
# Admin calls that must be answered (or refused) retry while unanswered; one refused is not retried.
BUDGET = retry_budget()
# A server here answers in milliseconds: no bound the design gives. These raw exchanges had 5 s,
# now with the allowance on top.
EXCHANGE_TIMEOUT = design_bound(5.0)


def config(bootstrap, group: str, **kwargs) -> ConsumerConfig:  # type: ignore[no-untyped-def]
    """A consumer's settings here: heartbeats as often as in a 2 s session."""
    return ConsumerConfig(bootstrap, group, heartbeat_interval=HEARTBEAT_INTERVAL, **kwargs)


class AdminLiveTest(LiveTestCase):
    def setUp(self) -> None:
        super().setUp()
        create_topic(self.topics_path, "alpha", 2)

    def join(self, consumer: Consumer, partitions: int = 2) -> None:
        self.wait_for(f"the consumer to hold {partitions} partitions",
                      lambda: consumer.poll(0.1) and len(consumer.assignment()) == partitions, SETTLE)

    def test_create_list_describe_fetch_rewind_delete_and_drain(self) -> None:
        server = self.start_server()
        admin = Admin([server.endpoint], retry_budget=BUDGET)
        self.addCleanup(admin.close)
        controller = admin.create_group("orders", SESSION_TIMEOUT, ["alpha"])
        self.assertEqual(controller.port, server.port)
        self.assertEqual(admin.create_group("orders", SESSION_TIMEOUT, ["alpha"]).port, server.port)  # same: fine
        with self.assertRaises(GroupcoordError) as ctx:
            admin.create_group("orders", SESSION_TIMEOUT + 1.0, ["alpha"])
        self.assertEqual(ctx.exception.name, "GROUP_ALREADY_EXISTS")
        with self.assertRaises(GroupcoordError) as ctx:
            admin.create_group("bad/name", SESSION_TIMEOUT, ["alpha"])
        self.assertEqual(ctx.exception.code, ErrorCode.INVALID_GROUP_NAME)

        listed = admin.list_groups(["orders", "nope"])
        self.assertEqual([(g.name, g.error) for g in listed], [("orders", ErrorCode.NONE),
                                                               ("nope", ErrorCode.UNKNOWN_GROUP)])
        self.assertEqual((listed[0].topics, listed[0].session_timeout_ms), (["alpha"], SESSION_MS))
        self.assertIn("orders", [g.name for g in admin.list_groups()])

        events: list = []
        consumer = Consumer(config([server.endpoint], "orders", client_id="svc"),
                            Callbacks(on_assigned=lambda ps: events.append(ps)))
        self.join(consumer)
        consumer.commit([PartitionOffset("alpha", 0, 50), PartitionOffset("alpha", 1, 60)])
        self.assertEqual(sorted((o.partition, o.offset) for o in admin.fetch_offsets("orders", ["alpha"])),
                         [(0, 50), (1, 60)])
        self.assertEqual(admin.fetch_offsets("orders", ["other"]), [])

        self.check_describe(admin, consumer)

        with self.assertRaises(GroupcoordError) as ctx:
            admin.delete_group("orders")
        self.assertEqual(ctx.exception.name, "GROUP_NOT_EMPTY")
        self.assertIn("stop them", ctx.exception.advice)

        # A rewind moves the generation: the member is given the new offset.
        results = admin.rewind("orders", [PartitionOffset("alpha", 0, 5)])
        self.assertEqual([(r.partition, r.error) for r in results], [(0, ErrorCode.NONE)])
        self.wait_for("the rewound offset to reach the member",
                      lambda: consumer.poll(0.1) and PartitionOffset("alpha", 0, 5) in events[-1], SETTLE)
        consumer.close()

        def deleted() -> bool:
            try:
                admin.delete_group("orders")
                return True
            except GroupcoordError as e:
                self.assertEqual(e.name, "GROUP_NOT_EMPTY")
                return False
        # The LeaveGroup is answered at once; had the answer been lost, the member is evicted a
        # session timeout later.
        self.wait_for("the group to be deleted", deleted, design_bound(SESSION_TIMEOUT), 0.2)
        self.assertEqual(admin.list_groups(["orders"])[0].error, ErrorCode.UNKNOWN_GROUP)
        with self.assertRaises(GroupcoordError) as ctx:
            admin.fetch_offsets("orders")
        self.assertEqual(ctx.exception.name, "UNKNOWN_GROUP")

        # Authentication is off on this server: Authenticate version 1 is
        # answered NONE with no challenge, and a client with credentials works.
        raw = Connection()
        raw.connect(*server.endpoint, EXCHANGE_TIMEOUT)
        first = AuthenticateRequest(mechanism="SCRAM-SHA-256", message=ScramClient("anyone", "x").first().encode())
        self.assertEqual(raw.call(first, EXCHANGE_TIMEOUT, 1), AuthenticateResponse(ErrorCode.NONE, b""))
        raw.close()
        with Admin([server.endpoint], security=Security(user="anyone", secret="x"),
                   retry_budget=BUDGET) as with_credentials:
            # Answered (the group is gone by now), not refused.
            self.assertEqual(with_credentials.list_groups(["orders"])[0].error, ErrorCode.UNKNOWN_GROUP)

        admin.drain_server(7)
        admin.drain_server(7)  # doing it twice succeeds
        admin.drain_server(7, drain=False)
        with self.assertRaises(GroupcoordError) as ctx:
            admin.drain_server(-1)
        self.assertEqual(ctx.exception.name, "INVALID_REQUEST")

    def check_describe(self, admin: Admin, consumer: Consumer) -> None:
        """DescribeGroup (ApiKey 11) of a group with one member holding both partitions."""
        d = admin.describe_group("orders")
        self.assertEqual((d.group, d.error, d.session_timeout_ms, d.ephemeral),
                         ("orders", ErrorCode.NONE, SESSION_MS, False))
        self.assertEqual(d.generation, consumer.generation)
        self.assertEqual([(t.topic, t.partitions) for t in d.topics], [("alpha", 2)])
        self.assertEqual([m.consumer_id for m in d.members], [consumer.member_id])
        m = d.members[0]
        self.assertEqual((m.client_id, m.host), ("svc", "127.0.0.1"))
        self.assertEqual(sorted(m.held), [TopicPartition("alpha", 0), TopicPartition("alpha", 1)])
        self.assertEqual(m.waiting, [])
        self.assertGreater(m.last_heard_ms, time.time() * 1000 - 60_000)
        self.assertEqual(sorted((o.partition, o.offset) for o in d.offsets), [(0, 50), (1, 60)])
        self.assertIn(RebalanceReason.MEMBER_JOINED, [e.reason for e in d.history])
        with self.assertRaises(GroupcoordError) as ctx:
            admin.describe_group("nope")
        self.assertEqual(ctx.exception.name, "UNKNOWN_GROUP")

    def test_authentication_roles_and_refusals(self) -> None:
        credentials = self.credentials_file({"ops": ("admin", ADMIN_SECRET), "app": ("member", MEMBER_SECRET)})
        server = self.start_server([f"--auth-credentials-file={credentials}"])
        endpoint = [server.endpoint]
        anonymous = Admin(endpoint, retry_budget=BUDGET)
        as_member = Admin(endpoint, security=Security(user="app", secret=MEMBER_SECRET), retry_budget=BUDGET)
        as_admin = Admin(endpoint, security=Security(user="ops", secret=ADMIN_SECRET), retry_budget=BUDGET)
        wrong = Admin(endpoint, security=Security(user="app", secret="wrong"), retry_budget=BUDGET)
        for a in (anonymous, as_member, as_admin, wrong):
            self.addCleanup(a.close)
        for a in (anonymous, wrong):
            with self.assertRaises(GroupcoordError) as ctx:
                a.list_groups()
            self.assertEqual(ctx.exception.name, "NOT_AUTHORIZED")
            self.assertFalse(ctx.exception.unreachable)
        self.assertNotIn("wrong", repr(wrong._conn.security))

        as_member.create_group("secure", SESSION_TIMEOUT, ["alpha"])
        consumer = Consumer(config(endpoint, "secure", security=Security(user="app", secret=MEMBER_SECRET)))
        self.join(consumer)
        consumer.commit([PartitionOffset("alpha", 1, 9)])
        self.assertEqual([(o.partition, o.offset) for o in as_member.fetch_offsets("secure")], [(1, 9)])
        for call in (lambda: as_member.rewind("secure", [PartitionOffset("alpha", 1, 0)]),
                     lambda: as_member.delete_group("secure"), lambda: as_member.drain_server(3)):
            with self.assertRaises(GroupcoordError) as ctx:
                call()
            self.assertEqual(ctx.exception.name, "NOT_AUTHORIZED")
        self.assertEqual(as_admin.rewind("secure", [PartitionOffset("alpha", 1, 3)])[0].error, ErrorCode.NONE)

        refused = Consumer(config(endpoint, "secure", security=Security(user="app", secret="nope")))
        with self.assertRaises(GroupcoordError) as ctx:
            refused.poll(design_bound(REQUEST_TIMEOUT))  # the refusal comes with the first answer
        self.assertEqual(ctx.exception.name, "NOT_AUTHORIZED")
        refused.close()
        consumer.close()
        log = server.log()
        self.assertIn("refused ListGroups from 127.0.0.1:", log)  # refusals are logged at most once a second
        self.assertNotIn(MEMBER_SECRET, log)

    def test_scram_exchange_and_plain_auth(self) -> None:
        credentials = self.credentials_file({"ops": ("admin", ADMIN_SECRET), "app": ("member", MEMBER_SECRET)})
        server = self.start_server([f"--auth-credentials-file={credentials}"])  # auth.plain: the default
        endpoint = [server.endpoint]

        # The exchange step by step, as the server answers it.
        raw = Connection()
        raw.connect(*server.endpoint, EXCHANGE_TIMEOUT)
        scram = ScramClient("app", MEMBER_SECRET)
        r = raw.call(AuthenticateRequest(mechanism="SCRAM-SHA-256", message=scram.first().encode()),
                     EXCHANGE_TIMEOUT, 1)
        challenge = r.message.decode()
        self.assertEqual(r.error, ErrorCode.NONE, challenge)
        self.assertRegex(challenge, rf"^r={re.escape(scram.nonce)}[!-+\--~]+,s=[A-Za-z0-9+/=]+,i=10000$")
        self.assertEqual(response_error(raw.call(ListGroupsRequest(), EXCHANGE_TIMEOUT)),
                         ErrorCode.NOT_AUTHORIZED)  # not yet
        final = scram.final(challenge)
        r = raw.call(AuthenticateRequest(mechanism="SCRAM-SHA-256", message=final.encode()), EXCHANGE_TIMEOUT, 1)
        self.assertEqual(r.error, ErrorCode.NONE, r.message)
        self.assertTrue(r.message.startswith(b"v="), r.message)
        scram.verify_server(r.message.decode())
        self.assertEqual(response_error(raw.call(ListGroupsRequest(), EXCHANGE_TIMEOUT)), ErrorCode.NONE)
        # A wrong secret: the proof is refused, and the connection is no longer authenticated.
        wrong = ScramClient("app", "wrong")
        r = raw.call(AuthenticateRequest(mechanism="SCRAM-SHA-256", message=wrong.first().encode()),
                     EXCHANGE_TIMEOUT, 1)
        r = raw.call(AuthenticateRequest(mechanism="SCRAM-SHA-256",
                                         message=wrong.final(r.message.decode()).encode()), EXCHANGE_TIMEOUT, 1)
        self.assertEqual((r.error, r.message), (ErrorCode.NOT_AUTHORIZED, b"e=invalid-proof"))
        self.assertEqual(response_error(raw.call(ListGroupsRequest(), EXCHANGE_TIMEOUT)),
                         ErrorCode.NOT_AUTHORIZED)
        raw.close()

        # The clients speak SCRAM by default: blocking, asyncio, refusals.
        self.assertFalse(Security(user="app", secret=MEMBER_SECRET).plain_auth)
        with Admin(endpoint, security=Security(user="ops", secret=ADMIN_SECRET), retry_budget=BUDGET) as a:
            a.create_group("scram", SESSION_TIMEOUT, ["alpha"])
            a.drain_server(5, drain=False)  # admin-only: the role came with the SCRAM exchange
        for user, secret in (("app", "wrong"), ("nobody", MEMBER_SECRET)):
            with Admin(endpoint, security=Security(user=user, secret=secret), retry_budget=BUDGET) as a:
                with self.assertRaises(GroupcoordError) as ctx:
                    a.list_groups()
                self.assertEqual(ctx.exception.name, "NOT_AUTHORIZED")
                self.assertIn(f"refused Authenticate as {user!r}", str(ctx.exception))
                self.assertFalse(ctx.exception.unreachable)

        async def aio() -> int:
            c = AsyncConsumer(config(endpoint, "scram", security=Security(user="app", secret=MEMBER_SECRET)))
            deadline = time.monotonic() + SETTLE
            while len(c.assignment()) < 2 and time.monotonic() < deadline:
                await c.poll(0.1)
            held = len(c.assignment())
            await c.close()
            return held
        # A hang guard: the wait, and a close that retries its LeaveGroup for CLIENT_RETRY.
        self.assertEqual(asyncio.run(asyncio.wait_for(aio(), SETTLE + design_bound(CLIENT_RETRY))), 2)

        # plain_auth: version 0 against the same server (auth.plain=allow by default).
        with Admin(endpoint, security=Security(user="app", secret=MEMBER_SECRET, plain_auth=True),
                   retry_budget=BUDGET) as a:
            self.assertIn("scram", [g.name for g in a.list_groups()])
        consumer = Consumer(config(endpoint, "scram", security=Security(user="app", secret=MEMBER_SECRET,
                                                                                plain_auth=True)))
        self.join(consumer)
        consumer.close()
        with Admin(endpoint, security=Security(user="app", secret="wrong", plain_auth=True),
                   retry_budget=BUDGET) as a:
            with self.assertRaises(GroupcoordError) as ctx:
                a.list_groups()
            self.assertEqual(ctx.exception.name, "NOT_AUTHORIZED")

        # A server that refuses version 0 (auth.plain=never) still lets SCRAM in.
        strict = self.start_server([f"--auth-credentials-file={credentials}", "--auth-plain=never"], server_id=2)
        with Admin([strict.endpoint], security=Security(user="app", secret=MEMBER_SECRET), retry_budget=BUDGET) as a:
            self.assertIn("scram", [g.name for g in a.list_groups()])
        with Admin([strict.endpoint], security=Security(user="app", secret=MEMBER_SECRET, plain_auth=True),
                   retry_budget=BUDGET) as a:
            with self.assertRaises(GroupcoordError) as ctx:
                a.list_groups()
            self.assertEqual(ctx.exception.name, "NOT_AUTHORIZED")
        self.assertNotIn(MEMBER_SECRET, server.log() + strict.log())

    def test_tls_with_and_without_client_certificates_and_with_authentication(self) -> None:
        certs = self.certificates()
        tls_args = [f"--tls-certificate-file={certs['server.pem']}", f"--tls-key-file={certs['server.key']}"]
        server = self.start_server(tls_args)
        endpoint = [server.endpoint]
        tls = Security(tls_ca_file=certs["ca.pem"])
        admin = Admin(endpoint, security=tls, retry_budget=BUDGET)
        self.addCleanup(admin.close)
        admin.create_group("tls", SESSION_TIMEOUT, ["alpha"])
        self.assertTrue(admin._conn.is_tls)
        consumer = Consumer(config(endpoint, "tls", security=tls))
        self.join(consumer)
        consumer.commit([PartitionOffset("alpha", 0, 77)])
        self.assertEqual([(o.partition, o.offset) for o in admin.fetch_offsets("tls")], [(0, 77)])
        consumer.close()

        # By name: the certificate names localhost.
        with Admin([("localhost", server.port)], security=tls, retry_budget=BUDGET) as by_name:
            self.assertIn("tls", [g.name for g in by_name.list_groups()])
        for bad in (Security(tls_ca_file=certs["other.pem"]),
                    Security(tls_ca_file=certs["ca.pem"], tls_server_name="groupcoord.example")):
            # Refused each time: the budget is how long the refusal is retried, the request
            # timeout how long the handshake may take on a busy machine before it is refused.
            with Admin(endpoint, security=bad, retry_budget=0.5, request_timeout=EXCHANGE_TIMEOUT) as refused:
                with self.assertRaises(GroupcoordError) as ctx:
                    refused.list_groups()
                self.assertTrue(ctx.exception.unreachable)
                self.assertIn("certificate", str(ctx.exception))
        unnamed = Security(tls_ca_file=certs["ca.pem"], tls_server_name="groupcoord.example",
                           tls_verify_hostname=False)
        with Admin(endpoint, security=unnamed, retry_budget=BUDGET) as ok:
            ok.list_groups()
        # A plain client on the TLS port gets no answer (nor does one without a client certificate
        # below): whatever the budget and the request timeout, the call fails.
        with Admin(endpoint, retry_budget=0.5, request_timeout=2) as plain:
            with self.assertRaises(GroupcoordError):
                plain.list_groups()

        # Client certificates required, and authentication over TLS, asyncio too.
        credentials = self.credentials_file({"ops": ("admin", ADMIN_SECRET), "app": ("member", MEMBER_SECRET)})
        strict = self.start_server(tls_args + [f"--tls-ca-file={certs['ca.pem']}",
                                               f"--auth-credentials-file={credentials}"], server_id=2)
        full = Security(user="app", secret=MEMBER_SECRET, tls_ca_file=certs["ca.pem"],
                        tls_certificate_file=certs["client.pem"], tls_key_file=certs["client.key"])
        with Admin([strict.endpoint], security=full, retry_budget=BUDGET) as a:
            a.create_group("strict", SESSION_TIMEOUT, ["alpha"])
        without_cert = Security(user="app", secret=MEMBER_SECRET, tls_ca_file=certs["ca.pem"])
        with Admin([strict.endpoint], security=without_cert, retry_budget=0.5, request_timeout=2) as a:
            with self.assertRaises(GroupcoordError):
                a.list_groups()

        async def aio() -> list[TopicPartition]:
            c = AsyncConsumer(config([strict.endpoint], "strict", security=full))
            deadline = time.monotonic() + SETTLE
            while len(c.assignment()) < 2 and time.monotonic() < deadline:
                await c.poll(0.1)
            held = c.assignment()
            await c.commit([PartitionOffset("alpha", 1, 5)])
            await c.close()
            return held
        # A hang guard: the wait, and a commit and a close that retry for CLIENT_RETRY each.
        self.assertEqual(len(asyncio.run(asyncio.wait_for(aio(), SETTLE + design_bound(2 * CLIENT_RETRY)))), 2)
        with Admin([strict.endpoint], security=full, retry_budget=BUDGET) as a:
            self.assertEqual([(o.partition, o.offset) for o in a.fetch_offsets("strict")], [(1, 5)])
