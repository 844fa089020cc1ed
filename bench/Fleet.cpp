#include "bench/Fleet.h"

#include <algorithm>
#include <set>

#include "protocol/Codec.h"

namespace groupcoord::bench {

using protocol::ErrorCode;

void Fleet::closeAll() {
  for (auto& [_, pool] : conns_) {
    for (int& c : pool) {
      if (c >= 0) loop_.close(c);
      c = -1;
    }
  }
  conns_.clear();
}

Fleet::Fleet(Loop& loop, std::vector<uint16_t> servers, size_t connsPerServer)
    : loop_(loop), servers_(std::move(servers)), connsPerServer_(std::max<size_t>(1, connsPerServer)) {}

size_t Fleet::add(std::string group, uint16_t port) {
  Member m;
  m.group = std::move(group);
  m.port = port;
  m.slot = members_.size();
  members_.push_back(std::move(m));
  encodeHeartbeat(members_.back());
  return members_.size() - 1;
}

int Fleet::connFor(size_t i) {
  Member& m = members_[i];
  auto& pool = conns_[m.port];
  if (pool.empty()) pool.assign(connsPerServer_, -1);
  int& c = pool[m.slot % connsPerServer_];
  if (!loop_.isOpen(c)) c = loop_.connect(m.port);
  return c;
}

void Fleet::encodeHeartbeat(Member& m) {
  protocol::HeartbeatRequest request{m.group, m.id, m.generation};
  request.waitMs = static_cast<int32_t>(heldWaitNs_ / 1'000'000);
  m.heartbeatFrame = encodeFrame(request, 0, heldWaitNs_ != 0 ? heldVersion : 0);
}

void Fleet::countError(ErrorCode e) { ++stats_.errors[std::string(protocol::errorName(e))]; }

void Fleet::registerMember(size_t i, std::function<void(bool)> done) {
  Member& m = members_[i];
  const int conn = connFor(i);
  ++stats_.registrations;
  protocol::RegisterConsumerRequest request{m.group, m.id, m.owned};
  request.knownGeneration = m.listGeneration;
  request.metadata = m.metadata;
  loop_.send(conn, request,
             [this, i, done = std::move(done)](const protocol::Response* r, uint64_t) {
               Member& mm = members_[i];
               const auto* resp = r ? std::get_if<protocol::RegisterConsumerResponse>(r) : nullptr;
               if (resp == nullptr) {
                 if (r != nullptr) {
                   countError(protocol::responseError(*r));
                 } else {
                   ++stats_.errors["CONNECTION"];
                 }
                 relocate(i, [done] { done(false); });
                 return;
               }
               if (resp->error != ErrorCode::NONE) {
                 countError(resp->error);
                 if (resp->error == ErrorCode::NOT_CONTROLLER || resp->error == ErrorCode::CONTROLLER_NOT_AVAILABLE) {
                   relocate(i, [done] { done(false); });
                   return;
                 }
                 if (resp->error == ErrorCode::UNKNOWN_CONSUMER) mm.id.clear();
                 loop_.after(20'000'000, [done] { done(false); });
                 return;
               }
               mm.id = resp->consumerId;
               mm.generation = resp->generation;
               // Client mode: the list at this generation, whole or as a change.
               mm.listGeneration = registerVersion >= 2 && resp->mode == protocol::AssignmentMode::CLIENT
                                       ? resp->generation
                                       : -1;
               std::set<protocol::TopicPartition> granted;
               for (const auto& p : resp->partitions) granted.insert({p.topic, p.partition});
               // As the clients do, the heartbeat that acknowledges the
               // registration goes at once (while the members beat): it
               // releases what was not granted again, so the member waiting
               // for it is not kept a beat, and it is the NONE that counts the
               // member in sync.
               if (beatIntervalNs_ != 0 && mm.deferred.size() < 64) mm.deferred.push_front(nowNs());
               mm.owned.assign(granted.begin(), granted.end());
               mm.inSync = false;
               encodeHeartbeat(mm);
               if (onRegisterAnswer) onRegisterAnswer(i, *resp);
               if (onRegistered) onRegistered(i, mm.generation);
               done(true);
             },
             registerVersion);
}

void Fleet::heartbeat(size_t i, std::function<void(ErrorCode, uint64_t)> done) { heartbeatTry(i, 0, std::move(done)); }

void Fleet::heartbeatTry(size_t i, int attempt, std::function<void(ErrorCode, uint64_t)> done) {
  Member& m = members_[i];
  const int conn = connFor(i);
  const uint16_t port = m.port;
  loop_.sendFrame(
      conn, m.heartbeatFrame, protocol::ApiKey::Heartbeat,
      [this, i, port, attempt, done = std::move(done)](const protocol::Response* r, uint64_t latency) {
        Member& mm = members_[i];
        // A crashed member's last beats (answered, or failed with its
        // connection) lead to nothing.
        if (mm.crashed) return done(ErrorCode::UNKNOWN_SERVER_ERROR, latency);
        const auto* resp = r ? std::get_if<protocol::HeartbeatResponse>(r) : nullptr;
        ErrorCode e = resp ? resp->error : (r ? protocol::responseError(*r) : ErrorCode::UNKNOWN_SERVER_ERROR);
        ++stats_.heartbeats;
        if (onHeartbeatAnswer) onHeartbeatAnswer(i, port, e, r == nullptr);
        if (r == nullptr) {
          ++stats_.errors["CONNECTION"];
          mm.inSync = false;
          relocate(i, [this, i, done] { registerMember(i, [done](bool) { done(ErrorCode::UNKNOWN_SERVER_ERROR, 0); }); });
          return;
        }
        if (e == ErrorCode::NONE) {
          if (heldWaitNs_ != 0 && heldVersion >= 2 && resp->generation > mm.generation) {
            // Version 2: a move that left this member as it was; it takes
            // the generation instead of registering again.
            mm.generation = resp->generation;
            encodeHeartbeat(mm);
          }
          mm.inSync = true;
          mm.lastAckedHeartbeatSentNs = nowNs() - latency;
          done(e, latency);
          return;
        }
        countError(e);
        mm.inSync = false;
        switch (e) {
          case ErrorCode::UNKNOWN_CONSUMER:
            // Evicted: whatever it held is no longer its own.
            mm.owned.clear();
            [[fallthrough]];
          case ErrorCode::REBALANCE_NEEDED:
            registerMember(i, [done, e, latency](bool) { done(e, latency); });
            return;
          case ErrorCode::NOT_CONTROLLER:
          case ErrorCode::CONTROLLER_NOT_AVAILABLE:
            if (followWithoutRegistering) {
              // The group may have moved: find its controller, then beat
              // again there after a backoff, as the same member.
              relocate(i, [this, i, attempt, done, e, latency] {
                if (attempt + 1 >= 5) return done(e, latency);
                loop_.after((50ull << attempt) * 1'000'000ull,
                            [this, i, attempt, done] { heartbeatTry(i, attempt + 1, done); });
              });
              return;
            }
            relocate(i, [this, i, done, e, latency] {
              registerMember(i, [done, e, latency](bool) { done(e, latency); });
            });
            return;
          default:
            done(e, latency);
        }
      });
}

void Fleet::relocate(size_t i, std::function<void()> done, int attempt) {
  const uint16_t port = servers_[static_cast<size_t>(attempt) % servers_.size()];
  const int conn = [&] {
    auto& pool = conns_[port];
    if (pool.empty()) pool.assign(connsPerServer_, -1);
    int& c = pool[0];
    if (!loop_.isOpen(c)) c = loop_.connect(port);
    return c;
  }();
  loop_.send(conn, protocol::ListGroupsRequest{{members_[i].group}},
             [this, i, attempt, done = std::move(done)](const protocol::Response* r, uint64_t) {
               const auto* resp = r ? std::get_if<protocol::ListGroupsResponse>(r) : nullptr;
               if (resp && resp->error == ErrorCode::NONE && resp->groups.size() == 1 &&
                   !resp->groups[0].controller.isNone()) {
                 const uint16_t to = resp->groups[0].controller.port;
                 if (std::find(servers_.begin(), servers_.end(), to) != servers_.end()) {
                   members_[i].port = to;
                   done();
                   return;
                 }
               }
               loop_.after(50'000'000, [this, i, attempt, done] { relocate(i, done, attempt + 1); });
             });
}

void Fleet::beatAt(size_t i, uint64_t dueNs, uint64_t intervalNs, uint64_t epoch) {
  if (epoch != beatEpoch_) return;
  Member& m = members_[i];
  if (m.crashed) return;
  const uint64_t now = nowNs();
  // The next beat keeps its place on the schedule however late this one is.
  const uint64_t next = dueNs + intervalNs;
  loop_.after(next > now ? next - now : 0, [this, i, next, intervalNs, epoch] { beatAt(i, next, intervalNs, epoch); });
  if (measure_.lateness != nullptr && measure_.covers(dueNs)) measure_.lateness->add(now > dueNs ? now - dueNs : 0);
  // Not registered yet (its registration is still out): nothing to beat for.
  if (m.id.empty()) return;
  beatOrDefer(i, dueNs, epoch);
}

void Fleet::beatOrDefer(size_t i, uint64_t dueNs, uint64_t epoch) {
  Member& m = members_[i];
  if (m.busy) {
    // The previous one (or what it led to) is still going: this one goes
    // when it is answered, and counts its wait.
    if (m.deferred.size() < 64) {
      m.deferred.push_back(dueNs);
    } else {
      ++stats_.beatsDropped;
    }
    return;
  }
  sendBeat(i, dueNs, epoch);
}

void Fleet::sendBeat(size_t i, uint64_t dueNs, uint64_t epoch) {
  members_[i].busy = true;
  heartbeat(i, [this, i, dueNs, epoch](ErrorCode e, uint64_t) {
    Member& m = members_[i];
    m.busy = false;
    // Registered while others of a client-mode group are not yet: as the
    // clients do, beat again soon (100 ms, or the interval if shorter) so
    // that the start is not an interval late.
    if (e == ErrorCode::REBALANCE_IN_PROGRESS && epoch == beatEpoch_ && m.deferred.empty() && !m.crashed) {
      const uint64_t soon = std::min<uint64_t>(beatIntervalNs_, 100'000'000);
      loop_.after(soon, [this, i, epoch] {
        if (epoch != beatEpoch_ || members_[i].crashed) return;
        beatOrDefer(i, nowNs(), epoch);
      });
    }
    if (e == ErrorCode::NONE && measure_.latency != nullptr && measure_.covers(dueNs)) {
      const uint64_t now = nowNs();
      measure_.latency->add(now > dueNs ? now - dueNs : 0);
    }
    if (epoch != beatEpoch_ || m.deferred.empty() || m.crashed) return;
    const uint64_t next = m.deferred.front();
    m.deferred.pop_front();
    sendBeat(i, next, epoch);
  });
}

void Fleet::startBeating(uint64_t intervalNs, BeatMeasure measure) {
  const uint64_t epoch = ++beatEpoch_;
  beatIntervalNs_ = intervalNs;
  measure_ = measure;
  const size_t n = members_.size();
  const uint64_t start = nowNs();
  for (size_t i = 0; i < n; ++i) {
    members_[i].deferred.clear();
    const uint64_t due = start + (n ? intervalNs * i / n : 0);
    loop_.after(due - start, [this, i, due, intervalNs, epoch] { beatAt(i, due, intervalNs, epoch); });
  }
}

void Fleet::joinSchedule(size_t i) {
  if (beatIntervalNs_ == 0 || members_[i].crashed) return;
  const uint64_t epoch = beatEpoch_;
  const uint64_t delay = beatIntervalNs_ * (i % 997) / 997;
  const uint64_t due = nowNs() + delay;
  const uint64_t interval = beatIntervalNs_;
  loop_.after(delay, [this, i, due, interval, epoch] { beatAt(i, due, interval, epoch); });
}

void Fleet::killConnection(uint16_t port, size_t slot) {
  auto it = conns_.find(port);
  if (it == conns_.end() || it->second.empty()) return;
  int& c = it->second[slot % connsPerServer_];
  if (c >= 0) loop_.close(c);
  c = -1;
}

void Fleet::stopBeating() {
  ++beatEpoch_;
  beatIntervalNs_ = 0;
  measure_ = BeatMeasure{};
  const bool wasHeld = heldWaitNs_ != 0;
  heldWaitNs_ = 0;
  for (auto& m : members_) {
    m.deferred.clear();
    if (wasHeld) encodeHeartbeat(m);
  }
}

void Fleet::startHeldBeating(uint64_t intervalNs) {
  stopBeating();
  heldWaitNs_ = std::max<uint64_t>(intervalNs, 1'000'000);
  const uint64_t epoch = beatEpoch_;
  const size_t n = members_.size();
  for (size_t i = 0; i < n; ++i) {
    encodeHeartbeat(members_[i]);
    // Spread over the first interval, as a fleet of processes would start.
    loop_.after(n ? heldWaitNs_ * i / n : 0, [this, i, epoch] { heldBeat(i, epoch); });
  }
}

void Fleet::joinHeldBeating(size_t i) {
  if (heldWaitNs_ == 0) return;
  encodeHeartbeat(members_[i]);
  heldBeat(i, beatEpoch_);
}

void Fleet::heldBeat(size_t i, uint64_t epoch) {
  Member& m = members_[i];
  if (epoch != beatEpoch_ || m.crashed || m.busy) return;
  if (m.id.empty()) {
    // Not registered (yet): look again shortly.
    loop_.after(20'000'000, [this, i, epoch] { heldBeat(i, epoch); });
    return;
  }
  m.busy = true;
  const uint64_t sent = nowNs();
  heartbeat(i, [this, i, epoch, sent](ErrorCode e, uint64_t) {
    Member& mm = members_[i];
    mm.busy = false;
    if (epoch != beatEpoch_ || mm.crashed) return;
    const uint64_t took = nowNs() - sent;
    uint64_t wait = 0;
    switch (e) {
      case ErrorCode::NONE:
        // Held to its end (or past half of it): the next goes at once;
        // answered sooner, without news: an interval after this one went.
        wait = took >= heldWaitNs_ / 2 ? 0 : heldWaitNs_ - took;
        break;
      case ErrorCode::REBALANCE_NEEDED:
      case ErrorCode::UNKNOWN_CONSUMER:
        wait = 0;  // registered again: its acknowledgement goes at once
        break;
      case ErrorCode::REBALANCE_IN_PROGRESS:
        wait = took >= heldWaitNs_ / 2 ? 0 : std::min<uint64_t>(heldWaitNs_, 100'000'000);
        break;
      default:
        wait = 50'000'000;
    }
    if (wait == 0) {
      heldBeat(i, epoch);
    } else {
      loop_.after(wait, [this, i, epoch] { heldBeat(i, epoch); });
    }
  });
}

bool Fleet::joinAll(uint64_t timeoutNs) {
  size_t joined = 0;
  size_t live = 0;
  std::function<void(size_t)> attempt = [&](size_t i) {
    members_[i].busy = true;
    registerMember(i, [&, i](bool ok) {
      members_[i].busy = false;
      if (ok) {
        ++joined;
      } else {
        loop_.after(20'000'000, [&, i] { attempt(i); });
      }
    });
  };
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].crashed) continue;
    ++live;
    attempt(i);
  }
  const bool ok = loop_.runUntil([&] { return joined == live; }, timeoutNs);
  // Retries still queued would touch `attempt` after it is gone: let the
  // in-flight ones finish first.
  loop_.runUntil([&] { return std::none_of(members_.begin(), members_.end(), [](const Member& m) { return m.busy; }); },
                 timeoutNs);
  return ok;
}

bool Fleet::allInSync(int64_t* generation) const {
  std::map<std::string, int64_t> gens;
  int64_t last = -1;
  for (const auto& m : members_) {
    if (m.crashed) continue;
    if (!m.inSync) return false;
    auto [it, fresh] = gens.emplace(m.group, m.generation);
    if (!fresh && it->second != m.generation) return false;
    last = m.generation;
  }
  if (generation) *generation = last;
  return true;
}

bool Fleet::assignmentExact(const std::vector<protocol::TopicPartition>& partitions, std::string* why,
                            const std::string& group) const {
  std::set<protocol::TopicPartition> expected(partitions.begin(), partitions.end());
  std::set<protocol::TopicPartition> seen;
  for (const auto& m : members_) {
    if (m.crashed || (!group.empty() && m.group != group)) continue;
    for (const auto& tp : m.owned) {
      if (!seen.insert(tp).second) {
        if (why) *why = tp.topic + "-" + std::to_string(tp.partition) + " held twice";
        return false;
      }
      if (!expected.count(tp)) {
        if (why) *why = tp.topic + "-" + std::to_string(tp.partition) + " is not a partition of the group's topics";
        return false;
      }
    }
  }
  if (seen.size() != expected.size()) {
    if (why) *why = std::to_string(expected.size() - seen.size()) + " partitions unowned";
    return false;
  }
  return true;
}

std::optional<protocol::Response> call(Loop& loop, uint16_t port, const protocol::Request& request,
                                       uint64_t timeoutNs, int16_t version) {
  const int conn = loop.connect(port);
  if (conn < 0) return std::nullopt;
  std::optional<protocol::Response> out;
  bool answered = false;
  loop.send(
      conn, request,
      [&](const protocol::Response* r, uint64_t) {
        answered = true;
        if (r) out = *r;
      },
      version);
  loop.runUntil([&] { return answered; }, timeoutNs);
  loop.close(conn);
  if (!answered) loop.runUntil([&] { return answered; }, 1'000'000'000ull);
  return out;
}

ErrorCode createGroup(Loop& loop, uint16_t port, const std::string& group, int64_t sessionTimeoutMs,
                      std::vector<std::string> topics, protocol::Broker* controller, protocol::AssignmentMode mode) {
  // Version 1 says the mode; version 0 is enough for a server-mode group.
  const bool client = mode == protocol::AssignmentMode::CLIENT;
  auto r = call(loop, port, protocol::CreateGroupRequest{group, sessionTimeoutMs, std::move(topics), false, mode},
                10'000'000'000ull, client ? 1 : 0);
  if (!r) return ErrorCode::UNKNOWN_SERVER_ERROR;
  const auto* resp = std::get_if<protocol::CreateGroupResponse>(&*r);
  if (!resp) return protocol::responseError(*r);
  if (controller) *controller = resp->controller;
  return resp->error;
}

std::optional<protocol::GroupInfo> describe(Loop& loop, uint16_t port, const std::string& group) {
  auto r = call(loop, port, protocol::ListGroupsRequest{{group}}, 2'000'000'000ull);
  if (!r) return std::nullopt;
  const auto* resp = std::get_if<protocol::ListGroupsResponse>(&*r);
  if (!resp || resp->error != ErrorCode::NONE || resp->groups.size() != 1) return std::nullopt;
  return resp->groups[0];
}

bool Fleet::assignmentExactAll(const std::map<std::string, std::vector<protocol::TopicPartition>>& partitions,
                               std::string* why) const {
  std::map<std::string, std::set<protocol::TopicPartition>> seen;
  for (const auto& m : members_) {
    if (m.crashed) continue;
    auto group = partitions.find(m.group);
    if (group == partitions.end()) continue;
    auto& held = seen[m.group];
    for (const auto& tp : m.owned) {
      if (!held.insert(tp).second) {
        if (why) *why = m.group + ": " + tp.topic + "-" + std::to_string(tp.partition) + " held twice";
        return false;
      }
    }
  }
  for (const auto& [group, parts] : partitions) {
    const auto& held = seen[group];
    if (held != std::set<protocol::TopicPartition>(parts.begin(), parts.end())) {
      if (why) *why = group + ": " + std::to_string(held.size()) + " partitions held of " + std::to_string(parts.size());
      return false;
    }
  }
  return true;
}

}  // namespace groupcoord::bench
