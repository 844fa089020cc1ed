#include "client/Consumer.h"

#include <algorithm>
#include <climits>
#include <set>
#include <thread>

#include "protocol/Codec.h"

namespace groupcoord::client {

using protocol::ErrorCode;
using protocol::TopicPartition;
using namespace std::chrono_literals;

namespace {

bool retriable(ErrorCode code) {
  return code == ErrorCode::NOT_CONTROLLER || code == ErrorCode::CONTROLLER_NOT_AVAILABLE;
}

std::string endpointName(const Endpoint& e) { return e.first + ":" + std::to_string(e.second); }

}  // namespace

Consumer::Consumer(ConsumerConfig config, ConsumerCallbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {
  if (config_.consumerId) memberId_ = *config_.consumerId;
  conn_.setClientId(config_.clientId);
  conn_.setSecurity(config_.security);
}

// Without close() the member is not told to leave: the controller evicts it
// after the session timeout, as it would a crashed process.
Consumer::~Consumer() = default;

std::vector<TopicPartition> Consumer::assignment() const {
  std::vector<TopicPartition> out;
  out.reserve(held_.size());
  for (auto& [tp, offset] : held_) out.push_back(tp);
  return out;
}

Status Consumer::loadGroup() {
  Status last = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE, "no bootstrap server given");
  for (size_t i = 0; i < config_.bootstrap.size(); ++i) {
    const Endpoint& server = config_.bootstrap[(nextBootstrap_ + i) % config_.bootstrap.size()];
    Connection c;
    c.setClientId(config_.clientId);
    c.setSecurity(config_.security);
    if (!c.connect(server.first, server.second, config_.requestTimeout)) {
      if (c.authRefused()) return Status::error(ErrorCode::NOT_AUTHORIZED, c.lastError());
      last = Status::unreachableError("cannot connect to " + endpointName(server) + ": " + c.lastError());
      continue;
    }
    auto r = c.call(protocol::ListGroupsRequest{{config_.group}}, config_.requestTimeout);
    auto* resp = r.ok ? std::get_if<protocol::ListGroupsResponse>(&r.response) : nullptr;
    if (!resp) {
      last = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE, "ListGroups to " + endpointName(server) + " failed");
      continue;
    }
    nextBootstrap_ = (nextBootstrap_ + i) % config_.bootstrap.size();
    if (resp->error != ErrorCode::NONE || resp->groups.size() != 1)
      return Status::error(resp->error == ErrorCode::NONE ? ErrorCode::UNKNOWN_SERVER_ERROR : resp->error,
                           "ListGroups of group " + config_.group + " at " + endpointName(server));
    const auto& info = resp->groups[0];
    if (info.error != ErrorCode::NONE)
      return Status::error(info.error,
                           "group " + config_.group + ": " + std::string(protocol::errorMessage(info.error)));
    sessionTimeout_ = std::chrono::milliseconds(info.sessionTimeoutMs);
    heartbeatInterval_ = config_.heartbeatInterval.value_or(sessionTimeout_ / 3);
    groupLoaded_ = true;
    if (info.controller.isNone()) {
      controller_.reset();
      return Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE, "group " + config_.group + " has no controller yet");
    }
    Endpoint found{info.controller.host.empty() ? "127.0.0.1" : info.controller.host, info.controller.port};
    if (versionSpokenTo_ != found) {
      registerVersion_ = protocol::maxVersion(protocol::ApiKey::RegisterConsumer);
      heartbeatVersion_ = protocol::maxVersion(protocol::ApiKey::Heartbeat);
      versionSpokenTo_ = found;
    }
    controller_ = std::move(found);
    return Status::success();
  }
  return last;
}

bool Consumer::connectToController(Status& why) {
  if (conn_.isOpen()) return true;
  heldBeat_.reset();  // it went with the connection
  if (!controller_) {
    why = loadGroup();
    if (!why.ok()) return false;
  }
  auto timeout = config_.requestTimeout;
  if (!conn_.connect(controller_->first, controller_->second, timeout)) {
    std::string message = "cannot connect to controller " + endpointName(*controller_) + ": " + conn_.lastError();
    why = conn_.unreachable() ? Status::unreachableError(std::move(message))
                              : Status::error(ErrorCode::NOT_AUTHORIZED, std::move(message));
    controller_.reset();
    return false;
  }
  return true;
}

std::optional<protocol::Response> Consumer::call(const protocol::Request& request, Status& why, int16_t version) {
  if (!connectToController(why)) return std::nullopt;
  // A request must not keep the member waiting much past its lease.
  auto timeout = config_.requestTimeout;
  if (sessionTimeout_ > 0ms) timeout = std::min(timeout, std::max<std::chrono::milliseconds>(sessionTimeout_ / 2, 100ms));
  const std::string api(protocol::apiName(protocol::apiKeyOf(request)));
  protocol::DecodedResponse r;
  if (heldBeat_) {
    // A heartbeat is held at the controller: this request, once read there,
    // makes it answer that heartbeat first (docs/design.md, "Held
    // heartbeats"); its answer is taken, then this request's.
    const int64_t id = conn_.send(request, version);
    Status beat;
    if (id >= 0) awaitHeld(timeout, beat);
    if (id < 0 || heldBeat_ || !conn_.isOpen()) {
      why = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE,
                          api + " to " + (controller_ ? endpointName(*controller_) : std::string("the controller")) +
                              " failed behind a held heartbeat: " + std::string(ioStatusName(conn_.lastStatus())));
      heldBeat_.reset();
      conn_.close();
      controller_.reset();
      return std::nullopt;
    }
    r = conn_.receive(protocol::apiKeyOf(request), timeout);
    if (r.ok && r.header.correlationId != id) {
      r.ok = false;
      r.detail = "response correlation id " + std::to_string(r.header.correlationId) + ", expected " +
                 std::to_string(id);
    }
  } else {
    r = conn_.call(request, timeout, version);
  }
  if (!r.ok) {
    // A timed-out connection may still deliver the late answer: never reuse it.
    why = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE, api + " to " + endpointName(*controller_) + " failed: " +
                                                                 std::string(ioStatusName(conn_.lastStatus())));
    conn_.close();
    controller_.reset();
    return std::nullopt;
  }
  ErrorCode code = protocol::responseError(r.response);
  if (code == ErrorCode::NOT_CONTROLLER) {
    why = Status::error(code, "server at " + endpointName(*controller_) + " is not the controller of group " +
                                  config_.group);
    conn_.close();
    controller_.reset();
  } else if (code != ErrorCode::NONE) {
    why = Status::error(code, api + " of group " + config_.group + " at " + endpointName(*controller_) + ": " +
                                  std::string(protocol::errorMessage(code)));
  } else {
    why = Status::success();
  }
  return std::move(r.response);
}

void Consumer::loseAll() {
  if (held_.empty()) return;
  auto lost = assignment();
  held_.clear();
  if (callbacks_.onLost) callbacks_.onLost(lost);
}

void Consumer::stopStarted() {
  if (started_ < 0) return;
  const int64_t g = started_;
  started_ = -1;
  if (callbacks_.onStop) callbacks_.onStop(g);
}

void Consumer::fenceIfOverdue() {
  if (held_.empty() && started_ < 0) return;
  if (Clock::now() < leaseExpiry()) return;
  // The controller may evict this member from now on and hand its partitions
  // to another one: stop using them before that can happen.
  loseAll();
  stopStarted();
  needRegister_ = true;
}

bool Consumer::takeMemberList(protocol::RegisterConsumerResponse& reg) {
  if (registerVersion_ < 2 || reg.listBase < 0) {
    memberList_ = std::move(reg.memberData);
  } else {
    // Version 2: what changed since the generation this member holds
    // (docs/protocol.md §16), applied to it; both lists are sorted by id.
    if (reg.listBase != memberListGeneration_) return false;
    std::map<std::string, protocol::MemberMetadata> merged;
    for (auto& m : memberList_) merged.emplace(m.consumerId, std::move(m));
    for (auto& id : reg.removedMembers) merged.erase(id);
    for (auto& m : reg.memberData) merged[m.consumerId] = std::move(m);
    memberList_.clear();
    for (auto& [_, m] : merged) memberList_.push_back(std::move(m));
  }
  if (registerVersion_ >= 2 && reg.memberCount != static_cast<int32_t>(memberList_.size())) {
    memberList_.clear();
    return false;
  }
  memberListGeneration_ = registerVersion_ >= 2 ? reg.generation : -1;
  return true;
}

Consumer::Step Consumer::registerNow(Status& why) {
  // Client mode: what was derived from the previous generation stops before
  // this registration (the server's barrier counts on it).
  stopStarted();
  auto sent = Clock::now();
  protocol::RegisterConsumerRequest request{config_.group, memberId_, assignment(), config_.metadata, config_.rack};
  request.knownGeneration = memberListGeneration_;
  auto resp = call(request, why, registerVersion_);
  if (!resp) return retriable(why.code) ? Step::Retry : Step::Fatal;
  auto* reg = std::get_if<protocol::RegisterConsumerResponse>(&*resp);
  if (!reg) {
    // A server of an older release answers a version it does not speak
    // with an error-only UNSUPPORTED_VERSION: speak the one before to it.
    if (why.code == ErrorCode::UNSUPPORTED_VERSION && registerVersion_ > 0) {
      --registerVersion_;
      return Step::Retry;
    }
    return why.code == ErrorCode::UNSUPPORTED_VERSION ? Step::Fatal : Step::Retry;
  }
  if (reg->error != ErrorCode::NONE) {
    // UNKNOWN_CONSUMER: a leave or eviction overtook the registration; register again.
    if (retriable(reg->error) || reg->error == ErrorCode::UNKNOWN_CONSUMER) return Step::Retry;
    return Step::Fatal;
  }
  // The lease may have run out while the answer was on its way.
  fenceIfOverdue();
  memberId_ = reg->consumerId;
  generation_ = reg->generation;
  lastSuccessSent_ = sent;
  needRegister_ = false;
  mode_ = registerVersion_ >= 1 ? reg->mode : protocol::AssignmentMode::SERVER;
  if (mode_ == protocol::AssignmentMode::CLIENT) {
    // Nothing to hold: the member list is the answer; start once the
    // heartbeats say everybody has registered at this generation.
    if (!takeMemberList(*reg)) {
      // A change from a list this member does not hold, or one that does
      // not add up: register again, asking for the whole list, before
      // anything starts on this generation.
      memberListGeneration_ = -1;
      needRegister_ = true;
      return Step::Retry;
    }
    nextHeartbeat_ = sent + std::min<std::chrono::milliseconds>(heartbeatInterval_, 100ms);
    return Step::Done;
  }

  std::map<TopicPartition, int64_t> granted;
  for (auto& p : reg->partitions) granted[{p.topic, p.partition}] = p.offset;
  // What it held and was not granted again is no longer its own at this
  // generation: the application stops using it now, before the heartbeat at
  // this generation tells the controller it has been released.
  std::vector<TopicPartition> revoked;
  for (auto it = held_.begin(); it != held_.end();) {
    if (!granted.count(it->first)) {
      revoked.push_back(it->first);
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
  // Newly granted partitions, and held ones whose offset someone else moved
  // (a RewindConsumer): the application has to start from that offset.
  std::vector<protocol::PartitionOffset> assigned;
  for (auto& [tp, offset] : granted) {
    auto it = held_.find(tp);
    if (it == held_.end() || it->second != offset) assigned.push_back({tp.topic, tp.partition, offset});
    held_[tp] = offset;
  }
  if (!revoked.empty() && callbacks_.onRevoked) callbacks_.onRevoked(revoked);
  if (!assigned.empty() && callbacks_.onAssigned) callbacks_.onAssigned(assigned);
  // The heartbeat that acknowledges this generation goes at once: it
  // releases what was revoked (the member waiting for it gets it without a
  // heartbeat's delay), tells the controller this member is in step, and
  // learns at once of a partition released meanwhile (docs/design.md,
  // "Acknowledged at once").
  nextHeartbeat_ = Clock::now();
  return Step::Done;
}

Consumer::Step Consumer::heartbeatNow(Status& why) {
  if (heldBeat_) return Step::Done;  // one at a time
  const auto sent = Clock::now();
  protocol::HeartbeatRequest request{config_.group, memberId_, generation_};
  if (heartbeatVersion_ >= 1) {
    if (!connectToController(why)) return retriable(why.code) ? Step::Retry : Step::Fatal;
    request.waitMs = static_cast<int32_t>(std::min<int64_t>(heartbeatInterval_.count(), INT32_MAX));
    const int64_t id = conn_.send(request, heartbeatVersion_);
    if (id < 0) {
      why = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE,
                          "Heartbeat to " + endpointName(*controller_) + " failed: " + conn_.lastError());
      conn_.close();
      controller_.reset();
      return Step::Retry;
    }
    heldBeat_ = HeldBeat{id, sent, generation_, heartbeatVersion_};
    return Step::Done;
  }
  auto resp = call(request, why, 0);
  if (!resp) return retriable(why.code) ? Step::Retry : Step::Fatal;
  return takeHeartbeat(*resp, sent, why);
}

std::chrono::milliseconds Consumer::heldLimit() const { return heartbeatInterval_ + config_.requestTimeout; }

Consumer::Step Consumer::awaitHeld(std::chrono::milliseconds timeout, Status& why) {
  if (!heldBeat_) return Step::Done;
  auto r = conn_.receive(protocol::ApiKey::Heartbeat, std::max(timeout, 0ms));
  const std::string where = controller_ ? endpointName(*controller_) : std::string("the controller");
  if (!r.ok && conn_.lastStatus() == IoStatus::Timeout && Clock::now() < heldBeat_->sent + heldLimit()) {
    return Step::Done;  // still held
  }
  if (!r.ok || r.header.correlationId != heldBeat_->correlationId) {
    // Not answered within its wait and a request's timeout, or answered
    // with something that cannot be trusted: the connection is done with.
    why = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE,
                        "held Heartbeat to " + where + " failed: " +
                            (r.ok ? "answered out of order" : std::string(ioStatusName(conn_.lastStatus()))));
    heldBeat_.reset();
    conn_.close();
    controller_.reset();
    return Step::Retry;
  }
  const auto sent = heldBeat_->sent;
  const int16_t version = heldBeat_->version;
  const bool stale = closed_ || needRegister_ || heldBeat_->generation != generation_;
  heldBeat_.reset();
  const ErrorCode code = protocol::responseError(r.response);
  if (stale && code != ErrorCode::NOT_CONTROLLER) {
    // Read after the member moved on (it closed, fenced itself, or must register
    // again, or registered since it was sent): what it says is about a
    // generation this member no longer acts on, and a NONE must not start
    // it on that generation again.
    why = Status::success();
    return Step::Done;
  }
  if (std::holds_alternative<protocol::ErrorOnlyResponse>(r.response) && code == ErrorCode::UNSUPPORTED_VERSION) {
    // A controller of an older release: one version lower (a release
    // without version 2 holds version 1; one without either answers
    // version 0 at once, at the interval).
    heartbeatVersion_ = static_cast<int16_t>(std::max(0, version - 1));
    nextHeartbeat_ = Clock::now();
    return Step::Done;
  }
  if (code == ErrorCode::NOT_CONTROLLER) {
    why = Status::error(code, "server at " + where + " is not the controller of group " + config_.group);
    conn_.close();
    controller_.reset();
  } else if (code != ErrorCode::NONE) {
    why = Status::error(code, "Heartbeat of group " + config_.group + " at " + where + ": " +
                                  std::string(protocol::errorMessage(code)));
  } else {
    why = Status::success();
  }
  return takeHeartbeat(r.response, sent, why, version);
}

Consumer::Step Consumer::takeHeartbeat(const protocol::Response& response, Clock::time_point sent, Status& why,
                                       int16_t version) {
  (void)why;
  auto* hb = std::get_if<protocol::HeartbeatResponse>(&response);
  if (!hb) return Step::Retry;
  switch (hb->error) {
    case ErrorCode::NONE:
      lastSuccessSent_ = sent;
      if (version >= 2 && mode_ == protocol::AssignmentMode::SERVER && hb->generation > generation_) {
        // The group moved and left this member as it was (docs/protocol.md
        // §21): it holds what it held, at the new generation.
        generation_ = hb->generation;
      }
      // A held heartbeat answered when its wait ran out: the next goes at
      // once. One answered sooner with nothing to do (another request on
      // the connection released it, or a controller that holds nothing):
      // the next goes one interval after this one.
      nextHeartbeat_ = sent + heartbeatInterval_;
      if (mode_ == protocol::AssignmentMode::CLIENT && started_ != generation_) {
        started_ = generation_;
        if (callbacks_.onMembers) callbacks_.onMembers(generation_, memberList_);
      }
      return Step::Done;
    case ErrorCode::REBALANCE_IN_PROGRESS:
      // Registered at this generation, others not yet: wait, heartbeating
      // more often than usual so the start is not late (a held heartbeat is
      // answered the moment the last one registers).
      lastSuccessSent_ = sent;
      nextHeartbeat_ = sent + std::min<std::chrono::milliseconds>(heartbeatInterval_, 100ms);
      return Step::Done;
    case ErrorCode::REBALANCE_NEEDED:
      // Still a member as of this send: the lease is renewed.
      lastSuccessSent_ = sent;
      needRegister_ = true;
      return Step::Done;
    case ErrorCode::UNKNOWN_CONSUMER:
      // Evicted, or a controller that never saw it: nothing it holds is its
      // own any more.
      loseAll();
      stopStarted();
      generation_ = -1;
      if (!config_.consumerId) memberId_.clear();
      needRegister_ = true;
      return Step::Done;
    case ErrorCode::NOT_CONTROLLER:
    case ErrorCode::CONTROLLER_NOT_AVAILABLE:
      return Step::Retry;
    default:
      return Step::Fatal;
  }
}

void Consumer::scheduleBackoff() {
  auto cap = 1000ms;
  if (heartbeatInterval_ > 0ms) cap = std::min(cap, std::max<std::chrono::milliseconds>(heartbeatInterval_ / 2, 20ms));
  backoffStep_ = backoffStep_ == 0ms ? 50ms : std::min(backoffStep_ * 2, cap);
  backoffUntil_ = Clock::now() + backoffStep_;
}

Consumer::Clock::time_point Consumer::nextWake() const {
  Clock::time_point t = (needRegister_ || !groupLoaded_) ? Clock::now()
                        : heldBeat_                      ? heldBeat_->sent + heldLimit()
                                                         : nextHeartbeat_;
  t = std::max(t, backoffUntil_);
  if (!held_.empty() || started_ >= 0) t = std::min(t, leaseExpiry());
  return t;
}

Status Consumer::poll(std::chrono::milliseconds timeout) {
  if (closed_) return Status::error(ErrorCode::UNKNOWN_CONSUMER, "consumer of group " + config_.group + " is closed");
  const auto deadline = Clock::now() + timeout;
  Status last;
  for (;;) {
    fenceIfOverdue();
    auto now = Clock::now();
    if (now >= backoffUntil_) {
      std::optional<Step> step;
      if (!groupLoaded_) {
        last = loadGroup();
        step = last.ok() ? Step::Done : retriable(last.code) ? Step::Retry : Step::Fatal;
      } else if (needRegister_) {
        step = registerNow(last);
      } else if (!heldBeat_ && now >= nextHeartbeat_) {
        step = heartbeatNow(last);
      }
      if (step == Step::Fatal) return last;
      if (step == Step::Retry) scheduleBackoff();
      if (step == Step::Done) backoffStep_ = 0ms;
      if (step) {
        if (Clock::now() >= deadline && step != Step::Done) break;
        if (Clock::now() >= deadline && !needRegister_) break;
        continue;
      }
    }
    if (now >= deadline) break;
    auto wake = std::min(nextWake(), deadline);
    if (heldBeat_ && now >= backoffUntil_) {
      // Waits on the held heartbeat's answer instead of sleeping: it comes
      // the moment the controller has news for this member.
      const Step step = awaitHeld(std::chrono::ceil<std::chrono::milliseconds>(wake - now), last);
      if (step == Step::Fatal) return last;
      if (step == Step::Retry) scheduleBackoff();
      continue;
    }
    if (wake > now) std::this_thread::sleep_until(wake);
  }
  if (needRegister_ || generation_ < 0) {
    if (last.ok())
      last = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE, "not yet a member of group " + config_.group);
    return last;
  }
  return Status::success();
}

Status Consumer::commitSync(const std::vector<protocol::PartitionOffset>& offsets) {
  if (closed_) return Status::error(ErrorCode::UNKNOWN_CONSUMER, "consumer of group " + config_.group + " is closed");
  if (generation_ < 0)
    return Status::error(ErrorCode::UNKNOWN_CONSUMER, "not a member of group " + config_.group + " yet");
  // Retries end with the lease: past it the partitions are not this member's.
  auto deadline = std::min(Clock::now() + 10s, leaseExpiry());
  auto step = 50ms;
  Status why;
  for (;;) {
    auto resp = call(protocol::CommitOffsetsRequest{config_.group, memberId_, generation_, offsets}, why);
    if (resp) {
      if (auto* c = std::get_if<protocol::CommitOffsetsResponse>(&*resp); c && c->error == ErrorCode::NONE) {
        for (auto& r : c->results) {
          if (r.error != ErrorCode::NONE)
            return Status::error(r.error, "commit of " + r.topic + "/" + std::to_string(r.partition) + " in group " +
                                              config_.group + ": " + std::string(protocol::errorMessage(r.error)));
        }
        // Remember what this member committed, so that a registration that
        // returns another offset is known to come from a rewind.
        for (auto& o : offsets)
          if (auto it = held_.find({o.topic, o.partition}); it != held_.end()) it->second = o.offset;
        return Status::success();
      }
      if (!retriable(why.code)) return why;
    }
    if (Clock::now() + step >= deadline) return why;
    std::this_thread::sleep_for(step);
    step = std::min(step * 2, 1000ms);
  }
}

Status Consumer::close() {
  if (closed_) return Status::success();
  stopStarted();
  if (!held_.empty()) {
    auto revoked = assignment();
    held_.clear();
    if (callbacks_.onRevoked) callbacks_.onRevoked(revoked);
  }
  closed_ = true;
  Status why;
  if (generation_ < 0 || memberId_.empty()) return why;
  auto deadline = Clock::now() + 10s;
  auto step = 50ms;
  for (;;) {
    auto resp = call(protocol::LeaveGroupRequest{config_.group, memberId_}, why);
    if (resp && !retriable(why.code)) break;
    if (Clock::now() + step >= deadline) break;
    std::this_thread::sleep_for(step);
    step = std::min(step * 2, 1000ms);
  }
  generation_ = -1;
  heldBeat_.reset();
  conn_.close();
  return why;
}

}  // namespace groupcoord::client
