"""The member's state machine with a fake clock: no socket, no sleep."""

from __future__ import annotations

import unittest

from groupcoord import protocol as p
from groupcoord.errors import ErrorCode
from groupcoord.member import Assigned, Lost, Member, MemberConfig, Revoked, Send, Target

TP0, TP1 = p.TopicPartition("t", 0), p.TopicPartition("t", 1)
CONTROLLER = p.Broker(1, "127.0.0.1", 7400)


def listed(session_ms: int = 3000, controller: p.Broker = CONTROLLER, error: int = ErrorCode.NONE):
    return p.ListGroupsResponse([p.GroupInfo("g", error, [], ["t"], controller, session_ms, 1, False)])


def registered(generation: int, *parts: p.TopicPartition, offset: int = -1, member: str = "m-1"):
    return p.RegisterConsumerResponse("g", member, generation, [member],
                                      [p.PartitionOffset(tp.topic, tp.partition, offset) for tp in parts])


class Driver:
    """Plays the server's part: each step answers the request due now."""

    def __init__(self, member: Member) -> None:
        self.m = member
        self.now = 100.0
        self.sent: list[tuple[float, Send]] = []

    def due(self) -> Send:
        send = self.m.next_send(self.now)
        assert send is not None, "nothing due"
        self.sent.append((self.now, send))
        return send

    def answer(self, response, after: float = 0.0) -> Send:  # type: ignore[no-untyped-def]
        send = self.due()
        sent_at = self.now
        self.now += after
        self.m.on_response(send, response, sent_at, self.now)
        return send

    def join(self, *parts: p.TopicPartition, generation: int = 1) -> None:
        self.answer(listed())
        self.answer(registered(generation, *parts))


class MemberTest(unittest.TestCase):
    def setUp(self) -> None:
        self.m = Member(MemberConfig("g"))
        self.d = Driver(self.m)

    def test_lists_then_registers_then_heartbeats_on_the_interval(self) -> None:
        s = self.d.answer(listed())
        self.assertEqual(s.target, Target.BOOTSTRAP)
        self.assertEqual(s.request, p.ListGroupsRequest(["g"]))
        self.assertEqual(self.m.heartbeat_interval, 1.0)
        s = self.d.answer(registered(1, TP0, TP1, offset=7))
        self.assertEqual((s.target, s.request), (Target.CONTROLLER, p.RegisterConsumerRequest("g", "", [])))
        self.assertEqual(self.m.take_events(), [Assigned([p.PartitionOffset("t", 0, 7), p.PartitionOffset("t", 1, 7)])])
        self.assertTrue(self.m.is_member())
        # The heartbeat that acknowledges the generation goes at once, as
        # version 2 with a wait of one interval (docs/protocol.md §20, §21) ...
        s = self.d.answer(p.HeartbeatResponse(1))
        self.assertEqual(s.request, p.HeartbeatRequest("g", "m-1", 1, 1000))
        self.assertEqual((s.version, s.held), (2, 1.0))
        # ... and, answered at once with nothing to do, the next one a
        # heartbeat interval after it.
        self.assertIsNone(self.m.next_send(self.d.now + 0.99))
        self.assertEqual(self.m.next_wake(self.d.now), self.d.now + 1.0)
        self.d.now += 1.0
        s = self.d.answer(p.HeartbeatResponse(1), after=1.0)
        self.assertEqual(s.request, p.HeartbeatRequest("g", "m-1", 1, 1000))
        # Held for its whole wait: the next goes at once.
        s = self.d.due()
        self.assertEqual(s.request, p.HeartbeatRequest("g", "m-1", 1, 1000))

    def test_a_held_heartbeat_steps_down_one_version_per_refusal_and_a_stale_answer_is_not_acted_on(self) -> None:
        self.d.join(TP0)
        self.m.take_events()
        s = self.d.answer(p.ErrorOnlyResponse(ErrorCode.UNSUPPORTED_VERSION))
        self.assertEqual(s.version, 2)
        s = self.d.answer(p.ErrorOnlyResponse(ErrorCode.UNSUPPORTED_VERSION))
        self.assertEqual((s.version, s.held, s.request.wait_ms), (1, 1.0, 1000))
        # Back to version 2 with the next controller ...
        s = self.d.answer(p.ErrorOnlyResponse(ErrorCode.NOT_CONTROLLER))
        self.assertEqual((s.version, s.held, s.request.wait_ms), (0, 0.0, 0))
        self.d.now += 1.0
        self.d.answer(listed(controller=p.Broker(2, "127.0.0.1", 7401)))
        s = self.m.next_send(self.d.now)
        self.assertEqual((s.version, s.held), (2, 1.0))
        # ... and an answer read after the member fenced itself does nothing.
        self.d.now += 20.0
        self.m.check_lease(self.d.now)
        self.assertEqual(self.m.take_events(), [Lost([TP0])])
        self.m.on_response(s, p.HeartbeatResponse(1), self.d.now - 20.0, self.d.now)
        self.assertFalse(self.m.is_member())
        self.assertEqual(self.m.next_send(self.d.now).request.__class__, p.RegisterConsumerRequest)

    def test_a_version_two_none_at_a_newer_generation_is_taken_without_registering(self) -> None:
        # The group moved on to generation 3 and the move left this member
        # as it was (docs/protocol.md §21): it speaks generation 3, holding
        # what it held.
        self.d.join(TP0)
        self.m.take_events()
        s = self.d.answer(p.HeartbeatResponse(3))
        self.assertEqual((s.version, s.request.generation), (2, 1))
        self.assertEqual(self.m.generation, 3)
        self.assertTrue(self.m.is_member())
        self.assertEqual(self.m.take_events(), [])
        self.d.now += 1.0
        self.assertEqual(self.d.due().request, p.HeartbeatRequest("g", "m-1", 3, 1000))
        # Version 1 never takes a generation that way.
        other = Driver(Member(MemberConfig("g")))
        other.join(TP0)
        other.m.take_events()
        other.answer(p.ErrorOnlyResponse(ErrorCode.UNSUPPORTED_VERSION))
        s = other.answer(p.HeartbeatResponse(3))
        self.assertEqual(s.version, 1)
        self.assertEqual(other.m.generation, 1)

    def test_registers_at_version_two_and_steps_down_one_version_per_refusal(self) -> None:
        self.d.answer(listed())
        s = self.d.answer(p.ErrorOnlyResponse(ErrorCode.UNSUPPORTED_VERSION))
        self.assertEqual(s.version, 2)
        s = self.d.answer(p.ErrorOnlyResponse(ErrorCode.UNSUPPORTED_VERSION))
        self.assertEqual(s.version, 1)
        s = self.d.answer(registered(1, TP0))
        self.assertEqual(s.version, 0)
        self.assertTrue(self.m.is_member())
        self.assertIsNone(self.m.fatal)
        # The group moves to another server: the newest version again.
        self.m.take_events()
        self.d.now += 1.0
        self.d.answer(p.HeartbeatResponse(-1, ErrorCode.NOT_CONTROLLER))
        self.d.now += 1.0
        self.d.answer(listed(controller=p.Broker(2, "127.0.0.1", 7401)))
        self.d.answer(p.HeartbeatResponse(2, ErrorCode.REBALANCE_NEEDED))
        s = self.d.answer(registered(2, TP0))
        self.assertIsInstance(s.request, p.RegisterConsumerRequest)
        self.assertEqual(s.version, 2)

    def test_a_server_that_refuses_version_zero_too_is_fatal(self) -> None:
        self.d.answer(listed())
        for _ in range(3):
            self.d.answer(p.ErrorOnlyResponse(ErrorCode.UNSUPPORTED_VERSION))
        self.assertIsNotNone(self.m.fatal)
        self.assertEqual(self.m.fatal.code, ErrorCode.UNSUPPORTED_VERSION)

    def test_a_client_mode_group_is_refused_with_a_reason_and_left_on_close(self) -> None:
        self.d.answer(listed())
        answer = p.RegisterConsumerResponse("g", "m-1", 3, [], [], ErrorCode.NONE, 1,
                                            [p.MemberMetadata("m-1")], 1, -1, [])
        self.d.answer(answer)
        self.assertIsNotNone(self.m.fatal)
        self.assertIn("client mode", str(self.m.fatal))
        self.assertEqual(self.m.close(), p.LeaveGroupRequest("g", "m-1"))

    def test_one_request_at_a_time(self) -> None:
        self.assertIsNotNone(self.m.next_send(self.d.now))
        self.assertIsNone(self.m.next_send(self.d.now))

    def test_self_fences_a_session_timeout_after_the_send_of_the_last_successful_heartbeat(self) -> None:
        self.d.join(TP0)
        self.m.take_events()
        self.d.now += 1.0
        hb_sent = self.d.now
        self.d.answer(p.HeartbeatResponse(1), after=0.8)  # answered late: the lease counts from the send
        self.assertEqual(self.m.lease_expiry(), hb_sent + 3.0)
        self.d.now = hb_sent + 1.0
        send = self.d.due()  # the next heartbeat never gets an answer
        self.d.now = hb_sent + 2.999
        self.m.check_lease(self.d.now)
        self.assertEqual(self.m.assignment(), [TP0])
        self.assertEqual(self.m.take_events(), [])
        self.d.now = hb_sent + 3.0
        self.m.check_lease(self.d.now)
        self.assertEqual(self.m.take_events(), [Lost([TP0])])
        self.assertEqual(self.m.assignment(), [])
        self.m.on_failure(send, self.d.now, "timed out")
        self.assertFalse(self.m.is_member())

    def test_an_answer_arriving_after_the_lease_still_fences_first(self) -> None:
        self.d.join(TP0)
        self.m.take_events()
        self.d.now += 1.0
        self.m.next_send(self.d.now)
        self.m._in_flight = None  # its answer never came
        self.d.now += 5.0
        self.m.take_events()
        self.assertEqual(self.m.take_events(), [])
        send = Send(Target.CONTROLLER, p.RegisterConsumerRequest("g", "m-1", []))
        self.m.on_response(send, registered(2, TP0), self.d.now - 0.01, self.d.now)
        self.assertEqual(self.m.take_events(), [Lost([TP0]), Assigned([p.PartitionOffset("t", 0, -1)])])

    def test_revoke_comes_before_the_heartbeat_that_releases(self) -> None:
        self.d.join(TP0, TP1)
        self.m.take_events()
        self.d.now += 1.0
        self.d.answer(p.HeartbeatResponse(2, ErrorCode.REBALANCE_NEEDED))
        s = self.d.answer(registered(2, TP0))
        self.assertEqual(s.request.owned, [TP0, TP1])  # it reports what it holds
        # The release heartbeat is due at once, but not before the revocation is taken.
        self.assertIsNone(self.m.next_send(self.d.now))
        self.assertEqual(self.m.take_events(), [Revoked([TP1])])
        s = self.d.due()
        self.assertEqual(s.request, p.HeartbeatRequest("g", "m-1", 2, 1000))
        self.assertEqual(self.m.assignment(), [TP0])

    def test_rebalance_needed_renews_the_lease(self) -> None:
        self.d.join(TP0)
        self.m.take_events()
        self.d.now += 1.0
        sent = self.d.now
        self.d.answer(p.HeartbeatResponse(2, ErrorCode.REBALANCE_NEEDED))
        self.assertEqual(self.m.lease_expiry(), sent + 3.0)

    def test_a_rewound_offset_is_assigned_again(self) -> None:
        self.d.join(TP0)
        self.m.take_events()
        self.m.on_commit_response([p.PartitionOffset("t", 0, 50)], p.CommitOffsetsResponse([]))
        self.d.now += 1.0
        self.d.answer(p.HeartbeatResponse(2, ErrorCode.REBALANCE_NEEDED))
        self.d.answer(registered(2, TP0, offset=50))
        self.assertEqual(self.m.take_events(), [])
        self.d.now += 1.0
        self.d.answer(p.HeartbeatResponse(3, ErrorCode.REBALANCE_NEEDED))
        self.d.answer(registered(3, TP0, offset=10))
        self.assertEqual(self.m.take_events(), [Assigned([p.PartitionOffset("t", 0, 10)])])

    def test_not_controller_goes_back_to_list_groups_with_a_doubling_backoff(self) -> None:
        self.d.join(TP0)
        self.m.take_events()
        waits = []
        for _ in range(3):
            self.d.now = max(self.d.now + 0.5, self.m.next_wake(self.d.now))
            self.d.answer(p.HeartbeatResponse(-1, ErrorCode.NOT_CONTROLLER))
            self.assertIsNone(self.m.controller)
            wake = self.m.next_wake(self.d.now)
            waits.append(round(wake - self.d.now, 3))
            self.assertIsNone(self.m.next_send(wake - 0.001))
            self.d.now = wake
            s = self.d.answer(listed())
            self.assertEqual(s.target, Target.BOOTSTRAP)
            self.assertIsInstance(s.request, p.ListGroupsRequest)
        self.assertEqual(waits, [0.05, 0.05, 0.05])  # each ListGroups that succeeds resets the backoff

    def test_connection_loss_backs_off_doubling_up_to_the_cap_then_lists_again(self) -> None:
        self.d.join(TP0)
        self.m.take_events()
        waits = []
        for _ in range(6):
            self.d.now = max(self.d.now + 1.0 if not waits else self.d.now, self.m.next_wake(self.d.now))
            send = self.d.due()
            self.m.on_failure(send, self.d.now, "connection reset")
            self.assertIsNone(self.m.controller)
            self.assertEqual(self.m.last_error.code, ErrorCode.CONTROLLER_NOT_AVAILABLE)
            wake = self.m.next_wake(self.d.now)
            waits.append(round(wake - self.d.now, 3))
            self.d.now = wake
        self.assertEqual(waits, [0.05, 0.1, 0.2, 0.4, 0.5, 0.5])  # capped at heartbeat interval / 2
        self.assertIsInstance(self.d.due().request, p.ListGroupsRequest)

    def test_unknown_consumer_loses_everything_and_joins_anew(self) -> None:
        self.d.join(TP0)
        self.m.take_events()
        self.d.now += 1.0
        self.d.answer(p.HeartbeatResponse(-1, ErrorCode.UNKNOWN_CONSUMER))
        self.assertEqual(self.m.take_events(), [Lost([TP0])])
        s = self.d.due()
        self.assertEqual(s.request, p.RegisterConsumerRequest("g", "", []))

    def test_a_group_without_controller_is_retried_and_fatal_errors_stop(self) -> None:
        self.d.answer(listed(controller=p.Broker()))
        self.assertEqual(self.m.last_error.code, ErrorCode.CONTROLLER_NOT_AVAILABLE)
        self.assertIsNone(self.m.fatal)
        self.d.now = self.m.next_wake(self.d.now)
        self.d.answer(p.ListGroupsResponse([p.GroupInfo("g", ErrorCode.UNKNOWN_GROUP)]))
        self.assertEqual(self.m.fatal.code, ErrorCode.UNKNOWN_GROUP)
        self.assertIn("create it", str(self.m.fatal))
        self.assertIsNone(self.m.next_send(self.d.now + 100))

    def test_close_revokes_then_leaves(self) -> None:
        self.d.join(TP0, TP1)
        self.m.take_events()
        leave = self.m.close()
        self.assertEqual(leave, p.LeaveGroupRequest("g", "m-1"))
        self.assertEqual(self.m.take_events(), [Revoked([TP0, TP1])])
        self.assertIsNone(self.m.next_send(self.d.now + 10))
        self.assertIsNone(self.m.close())

    def test_a_configured_id_is_kept(self) -> None:
        m = Member(MemberConfig("g", consumer_id="fixed", heartbeat_interval=0.25))
        d = Driver(m)
        d.answer(listed())
        self.assertEqual(m.heartbeat_interval, 0.25)
        self.assertEqual(d.due().request.consumer_id, "fixed")

    def test_request_timeout_is_capped_by_the_session(self) -> None:
        self.d.answer(listed(session_ms=1000))
        self.assertEqual(self.m.request_timeout(), 0.5)


if __name__ == "__main__":
    unittest.main()
