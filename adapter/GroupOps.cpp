#include "adapter/GroupOps.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;

namespace {

void answerRegistration(Registrant done, const std::string& group, const std::string& member,
                        ErrorCode e, Outbox& out) {
  protocol::RegisterConsumerResponse resp;
  resp.group = group;
  resp.consumerId = member;
  resp.error = e;
  out.push([done = std::move(done), resp = std::move(resp)]() mutable { done(std::move(resp)); });
}

}  // namespace

void Join::answer(ErrorCode e, const std::string& group, Outbox& out) {
  for (auto& w : waiters) answerRegistration(std::move(w), group, memberId, e, out);
  waiters.clear();
}

void Removal::answer(ErrorCode e, const std::string&, Outbox& out) {
  for (auto& w : waiters) out.push([w = std::move(w), e] { w(protocol::LeaveGroupResponse{e}); });
  waiters.clear();
}

void Rejoin::answer(ErrorCode e, const std::string& group, Outbox& out) {
  answerRegistration(std::move(done), group, memberId, e, out);
}

void OffsetWrite::answer(ErrorCode e, const std::string&, Outbox& out) {
  if (kind == Kind::Commit) {
    out.push([done = std::move(done), e] { done(protocol::CommitOffsetsResponse{{}, e}); });
  } else {
    out.push([done = std::move(done), e] { done(protocol::RewindConsumerResponse{{}, e}); });
  }
}

void OffsetWrite::succeed(Outbox& out) {
  if (kind == Kind::Commit) {
    out.push([done = std::move(done), results = std::move(results)]() mutable {
      done(protocol::CommitOffsetsResponse{std::move(results), ErrorCode::NONE});
    });
  } else {
    out.push([done = std::move(done), results = std::move(results)]() mutable {
      done(protocol::RewindConsumerResponse{std::move(results), ErrorCode::NONE});
    });
  }
}

void Deletion::answer(ErrorCode e, const std::string& group, Outbox& out) {
  out.push([done = std::move(done), e, group] { done(protocol::DeleteGroupResponse{group, e}); });
}

}  // namespace groupcoord::adapter
