#include "support/OwnershipChecker.h"

#include <algorithm>
#include <sstream>

#include "support/ServerProcess.h"
#include "support/Timing.h"

namespace groupcoord::testing {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using protocol::TopicPartition;

namespace {

std::string name(const TopicPartition& p) { return p.topic + "-" + std::to_string(p.partition); }

template <typename Resp>
std::optional<Resp> askOnce(uint16_t port, const protocol::Request& request, std::chrono::milliseconds timeout) {
  client::Connection c;
  c.setClientId("ownership-checker");
  if (!c.connect("127.0.0.1", port, timeout)) return std::nullopt;
  auto r = c.call(request, timeout);
  if (!r.ok) return std::nullopt;
  if (auto* typed = std::get_if<Resp>(&r.response)) return *typed;
  return std::nullopt;
}

// Whether a write may have reached ZooKeeper although the answer was not NONE.
bool mayHaveWritten(ErrorCode e) {
  return e == ErrorCode::CONTROLLER_NOT_AVAILABLE || e == ErrorCode::UNKNOWN_SERVER_ERROR;
}

}  // namespace

// ---------------------------------------------------------------------------

std::vector<uint16_t> ServerPorts::get() const {
  std::lock_guard lock(mu_);
  return ports_;
}

void ServerPorts::set(std::vector<uint16_t> ports) {
  std::lock_guard lock(mu_);
  ports_ = std::move(ports);
}

std::optional<protocol::GroupInfo> describeGroupOnAny(const std::vector<uint16_t>& ports, const std::string& group) {
  for (uint16_t port : ports) {
    auto r = askOnce<protocol::ListGroupsResponse>(port, protocol::ListGroupsRequest{{group}}, 2000ms);
    if (r && r->error == ErrorCode::NONE && r->groups.size() == 1) return r->groups[0];
  }
  return std::nullopt;
}

std::optional<std::map<TopicPartition, int64_t>> fetchOffsetsOnAny(const std::vector<uint16_t>& ports,
                                                                    const std::string& group) {
  // FetchOffsets reads ZooKeeper: answered within the server's session
  // timeout.
  const auto timeout = designBound(kLongestServerZkSessionTimeout);
  for (uint16_t port : ports) {
    auto r = askOnce<protocol::FetchOffsetsResponse>(port, protocol::FetchOffsetsRequest{group, {}}, timeout);
    if (!r || r->error != ErrorCode::NONE) continue;
    std::map<TopicPartition, int64_t> out;
    for (auto& o : r->offsets) out[{o.topic, o.partition}] = o.offset;
    return out;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// OwnershipRecord

void OwnershipRecord::add(const std::string& who, const TopicPartition& p, bool grant, CheckerClock::time_point at,
                          uint16_t server) {
  std::lock_guard lock(mu_);
  events_.push_back(OwnershipEvent{at, who, p, grant, server});
  ++(grant ? grants_ : releases_);
}

void OwnershipRecord::renewed(const std::string& who, uint16_t server, CheckerClock::time_point at) {
  std::lock_guard lock(mu_);
  renewals_.push_back(Renewal{at, who, server});
}

std::vector<OwnershipEvent> OwnershipRecord::events() const {
  std::lock_guard lock(mu_);
  return events_;
}

std::vector<Renewal> OwnershipRecord::renewals() const {
  std::lock_guard lock(mu_);
  return renewals_;
}

void OwnershipRecord::acked(const TopicPartition& p, int64_t offset) {
  std::lock_guard lock(mu_);
  auto now = CheckerClock::now();
  auto& slot = commits_[p];
  if (slot.acked < 0 || now >= slot.ackedAt) {
    slot.ackedAt = now;
    slot.acked = offset;
    // Whatever was in doubt before was sent before this commit: if it
    // turned up in ZooKeeper now, it would have overwritten this one.
    slot.doubtful.clear();
  }
  ++commitsAcked_;
}

void OwnershipRecord::inDoubt(const TopicPartition& p, int64_t offset) {
  std::lock_guard lock(mu_);
  commits_[p].doubtful.insert(offset);
}

void OwnershipRecord::sawError(const std::string& name) {
  std::lock_guard lock(mu_);
  ++errors_[name];
}

OwnershipRecord::Counts OwnershipRecord::counts() const {
  std::lock_guard lock(mu_);
  return Counts{grants_, releases_, commitsAcked_, errors_};
}

std::vector<std::string> OwnershipRecord::overlaps() const {
  std::map<TopicPartition, std::vector<OwnershipEvent>> byPartition;
  {
    std::lock_guard lock(mu_);
    for (auto& e : events_) byPartition[e.partition].push_back(e);
  }
  std::vector<std::string> out;
  for (auto& [p, events] : byPartition) {
    // Stable: a release and a grant at the same instant keep the order in
    // which they were recorded.
    std::stable_sort(events.begin(), events.end(),
                     [](const OwnershipEvent& a, const OwnershipEvent& b) { return a.at < b.at; });
    std::string holder;
    for (auto& e : events) {
      if (e.grant) {
        if (!holder.empty() && holder != e.member)
          out.push_back(name(p) + " granted to " + e.member + " while " + holder + " held it");
        holder = e.member;
      } else if (holder == e.member) {
        holder.clear();
      }
    }
  }
  return out;
}

OwnershipRecord::CommitCheck OwnershipRecord::compareCommits(const std::map<TopicPartition, int64_t>& inZk) const {
  std::lock_guard lock(mu_);
  CommitCheck c;
  for (auto& [p, s] : commits_) {
    if (s.acked < 0) continue;
    ++c.partitions;
    auto it = inZk.find(p);
    int64_t z = it == inZk.end() ? -1 : it->second;
    if (z == s.acked) continue;
    if (s.doubtful.count(z)) {
      ++c.inDoubt;
      continue;
    }
    ++c.lost;
    c.problems.push_back(name(p) + ": last acknowledged commit " + std::to_string(s.acked) +
                         ", FetchOffsets says " + std::to_string(z));
  }
  return c;
}

// ---------------------------------------------------------------------------
// SimMember

SimMember::SimMember(int index, const ServerPorts& ports, OwnershipRecord& record, SimMemberOptions options,
                     uint64_t seed)
    : index_(index), ports_(ports), record_(record), options_(std::move(options)), rng_(seed) {}

SimMember::~SimMember() { stop(); }

void SimMember::start() {
  thread_ = std::thread([this] { run(); });
}

void SimMember::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void SimMember::quiesceCommits() {
  commits_ = false;
  std::lock_guard lock(commitMu_);
}

SimMember::View SimMember::view() const {
  std::lock_guard lock(viewMu_);
  return view_;
}

void SimMember::releaseAll(CheckerClock::time_point at) {
  for (auto& p : held_) record_.add(incarnation(), p, false, at);
  held_.clear();
}

bool SimMember::connectToController() {
  if (conn_.isOpen()) return true;
  auto dial = [this](uint16_t port) { return options_.route ? options_.route(index_, port) : port; };
  for (uint16_t port : ports_.get()) {
    auto info =
        askOnce<protocol::ListGroupsResponse>(dial(port), protocol::ListGroupsRequest{{options_.group}}, 1000ms);
    if (!info || info->groups.size() != 1 || info->groups[0].controller.isNone()) continue;
    conn_.setClientId("checker-" + std::to_string(index_));
    if (conn_.connect("127.0.0.1", dial(info->groups[0].controller.port), 1000ms)) {
      connPort_ = info->groups[0].controller.port;
      return true;
    }
  }
  record_.sawError("no controller reachable");
  return false;
}

// Self-fencing: no heartbeat has succeeded for the session timeout, so the
// controller may evict this member: it stops using everything, as of the
// moment that became true.
//
// The controller may still count it as the holder (it was never evicted, e.g.
// it was back before ZooKeeper was), so the member registers again with what
// it holds now, nothing, before it heartbeats: that releases the partitions
// and has them granted afresh, as client/Consumer does.
void SimMember::fenceIfOverdue() {
  if (held_.empty()) return;
  auto deadline = lastSuccessSent_ + std::chrono::milliseconds(options_.sessionTimeoutMs);
  if (CheckerClock::now() < deadline) return;
  releaseAll(deadline);
  needRegister_ = true;
}

void SimMember::noAnswer(const char* api) {
  record_.sawError(std::string(api) + " no answer (" + std::string(client::ioStatusName(conn_.lastStatus())) + ")");
  conn_.close();
}

bool SimMember::registerNow() {
  if (!connectToController()) return false;
  auto sent = CheckerClock::now();
  std::vector<TopicPartition> owned(held_.begin(), held_.end());
  ++registrations_;
  auto r = conn_.call(protocol::RegisterConsumerRequest{options_.group, id_, owned}, options_.callTimeout);
  if (!r.ok) {
    noAnswer("RegisterConsumer");
    return false;
  }
  auto& resp = std::get<protocol::RegisterConsumerResponse>(r.response);
  if (resp.error != ErrorCode::NONE) record_.sawError("RegisterConsumer " + std::string(protocol::errorName(resp.error)));
  // NOT_CONTROLLER, or a controller that cannot answer now: ask where the
  // group is again before the next try (it may have moved meanwhile).
  if (resp.error == ErrorCode::NOT_CONTROLLER || resp.error == ErrorCode::CONTROLLER_NOT_AVAILABLE) conn_.close();
  if (resp.error != ErrorCode::NONE) return false;
  fenceIfOverdue();
  id_ = resp.consumerId;
  generation_ = resp.generation;
  lastSuccessSent_ = sent;
  record_.renewed(incarnation(), connPort_);
  needRegister_ = false;
  std::set<TopicPartition> granted;
  for (auto& p : resp.partitions) {
    TopicPartition tp{p.topic, p.partition};
    granted.insert(tp);
    nextOffset_[tp] = std::max<int64_t>(p.offset, 0);
  }
  // What it held and was not granted again is not its own at this
  // generation: it stops using it now, before the heartbeat that says so.
  for (auto it = held_.begin(); it != held_.end();) {
    if (!granted.count(*it)) {
      record_.add(incarnation(), *it, false);
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& p : granted)
    if (held_.insert(p).second) record_.add(incarnation(), p, true, CheckerClock::now(), connPort_);
  std::lock_guard lock(viewMu_);
  view_.members = resp.members;
  view_.listGeneration = resp.generation;
  return true;
}

void SimMember::commitSome() {
  std::lock_guard lock(commitMu_);
  if (!commits_ || held_.empty() || !conn_.isOpen()) return;
  std::vector<protocol::PartitionOffset> offsets;
  for (auto& p : held_) offsets.push_back({p.topic, p.partition, ++nextOffset_[p]});
  auto r = conn_.call(protocol::CommitOffsetsRequest{options_.group, id_, generation_, offsets}, options_.callTimeout);
  if (!r.ok) {
    for (auto& o : offsets) record_.inDoubt({o.topic, o.partition}, o.offset);
    noAnswer("CommitOffsets");
    return;
  }
  auto& resp = std::get<protocol::CommitOffsetsResponse>(r.response);
  if (resp.error != ErrorCode::NONE) {
    record_.sawError("CommitOffsets " + std::string(protocol::errorName(resp.error)));
    if (mayHaveWritten(resp.error))
      for (auto& o : offsets) record_.inDoubt({o.topic, o.partition}, o.offset);
    return;
  }
  for (size_t i = 0; i < offsets.size(); ++i) {
    TopicPartition tp{offsets[i].topic, offsets[i].partition};
    ErrorCode e = i < resp.results.size() ? resp.results[i].error : ErrorCode::UNKNOWN_SERVER_ERROR;
    if (e == ErrorCode::NONE) {
      record_.acked(tp, offsets[i].offset);
    } else {
      record_.sawError("CommitOffsets partition " + std::string(protocol::errorName(e)));
      if (mayHaveWritten(e)) record_.inDoubt(tp, offsets[i].offset);
    }
  }
}

bool SimMember::heartbeatOnce() {
  if (!connectToController()) return false;
  auto sent = CheckerClock::now();
  // A held heartbeat (odd members, version 2): answered when something
  // changes for this member or after loopInterval, which paces the loop
  // instead of its sleep; its call may take that long more than an unheld
  // one. A NONE answer may bring a newer generation (a move that left the
  // member as it was, docs/protocol.md §21), which it then speaks.
  const bool held = options_.heldOnOddMembers && index_ % 2 == 1;
  protocol::HeartbeatRequest request{options_.group, id_, generation_};
  if (held) request.waitMs = static_cast<int32_t>(options_.loopInterval.count());
  auto r = conn_.call(request, options_.callTimeout + (held ? options_.loopInterval : 0ms), held ? 2 : 0);
  if (!r.ok) {
    noAnswer("Heartbeat");
    return false;
  }
  auto& resp = std::get<protocol::HeartbeatResponse>(r.response);
  if (resp.error != ErrorCode::NONE) record_.sawError("Heartbeat " + std::string(protocol::errorName(resp.error)));
  switch (resp.error) {
    case ErrorCode::NONE:
      lastSuccessSent_ = sent;
      record_.renewed(incarnation(), connPort_);
      if (held && resp.generation > generation_) generation_ = resp.generation;
      {
        std::lock_guard lock(viewMu_);
        view_.lastNone = CheckerClock::now();
        view_.generation = generation_;
      }
      break;
    case ErrorCode::REBALANCE_NEEDED:
      lastSuccessSent_ = sent;
      record_.renewed(incarnation(), connPort_);
      registerNow();
      break;
    case ErrorCode::UNKNOWN_CONSUMER:
      // Evicted, or a new controller that never saw it: it holds nothing
      // the controller knows of, so it lets go and joins again.
      releaseAll(CheckerClock::now());
      registerNow();
      break;
    case ErrorCode::NOT_CONTROLLER:
    case ErrorCode::CONTROLLER_NOT_AVAILABLE:
      // Ask where the group is again: another server may control it now
      // (this one may be cut off from ZooKeeper). It keeps what it holds
      // until its own session timeout.
      conn_.close();
      break;
    default:
      break;
  }
  // Held to its end (or answered with news): the next goes at once.
  return held && CheckerClock::now() - sent >= options_.loopInterval / 2;
}

void SimMember::run() {
  std::uniform_int_distribution<int> action(0, 999);
  while (!stop_) {
    if (!alive_) {
      // Down (crashed or left): come back after a while, or at once when
      // the churn is over.
      if (CheckerClock::now() >= downUntil_ || !churn_) {
        alive_ = true;
        needRegister_ = false;
        ++incarnation_;
        if (!keepId_) id_.clear();
        held_.clear();
        registerNow();
      } else {
        std::this_thread::sleep_for(50ms);
      }
      publish();
      continue;
    }
    fenceIfOverdue();
    bool paced = false;
    if (generation_ < 0 || needRegister_) {
      registerNow();
    } else {
      paced = heartbeatOnce();
      fenceIfOverdue();
      if (action(rng_) < options_.commitPermille) commitSome();
    }
    publish();
    if (churn_) {
      int a = action(rng_);
      if (a < 15) {  // leave
        releaseAll(CheckerClock::now());
        if (connectToController()) conn_.call(protocol::LeaveGroupRequest{options_.group, id_}, options_.callTimeout);
        conn_.close();
        goDown(500 + action(rng_) * 2, false);
      } else if (a < 27) {  // crash: gone at once, its partitions with it
        releaseAll(CheckerClock::now());
        conn_.close();
        goDown(static_cast<int>(options_.sessionTimeoutMs) + action(rng_) * 2, false);
      } else if (a < 39) {  // restart under the same id within the session timeout
        releaseAll(CheckerClock::now());
        conn_.close();
        goDown(100 + action(rng_) / 2, true);
      } else if (a < 50) {  // pause: frozen, holding what it held, then it resumes
        std::this_thread::sleep_for(std::chrono::milliseconds(300 + action(rng_) * 3));
      }
    }
    if (!paced) std::this_thread::sleep_for(options_.loopInterval);
  }
  // Stopping: what it holds is released when the test ends.
  releaseAll(CheckerClock::now());
  publish();
}

void SimMember::goDown(int ms, bool keepId) {
  alive_ = false;
  keepId_ = keepId;
  generation_ = -1;
  downUntil_ = CheckerClock::now() + std::chrono::milliseconds(ms);
}

void SimMember::publish() {
  std::lock_guard lock(viewMu_);
  view_.alive = alive_;
  view_.generation = generation_;
  view_.held = held_;
  view_.id = id_;
}

// ---------------------------------------------------------------------------
// OwnershipChecker

OwnershipChecker::OwnershipChecker(const ServerPorts& ports, SimMemberOptions options)
    : ports_(ports), options_(std::move(options)) {}

OwnershipChecker::~OwnershipChecker() { stop(); }

void OwnershipChecker::start(int members, uint64_t seed) {
  for (int i = 0; i < members; ++i) {
    members_.push_back(std::make_unique<SimMember>(i, ports_, record_, options_, seed * 1000 + i));
    members_.back()->start();
  }
}

void OwnershipChecker::stop() {
  for (auto& m : members_) m->stop();
}

void OwnershipChecker::setChurn(bool on) {
  for (auto& m : members_) m->setChurn(on);
}

void OwnershipChecker::quiesceCommits() {
  for (auto& m : members_) m->setCommits(false);
  for (auto& m : members_) m->quiesceCommits();
}

void OwnershipChecker::resumeCommits() {
  for (auto& m : members_) m->setCommits(true);
}

OwnershipChecker::Settle OwnershipChecker::waitSettled(const std::set<TopicPartition>& all,
                                                       CheckerClock::time_point from,
                                                       std::chrono::milliseconds limit, int64_t minGeneration) {
  Settle out;
  while (CheckerClock::now() < from + limit) {
    auto observedAt = CheckerClock::now();
    std::vector<SimMember::View> views;
    for (auto& m : members_) views.push_back(m->view());
    auto info = describeGroupOnAny(ports_.get(), options_.group);
    bool ok = info.has_value() && info->error == ErrorCode::NONE && info->members.size() == members_.size();
    if (!ok) {
      out.reason = info ? "the group has " + std::to_string(info->members.size()) + " of " +
                              std::to_string(members_.size()) + " members"
                        : "no server describes the group";
    }
    if (ok && info->generation < minGeneration) {
      ok = false;
      out.reason = "the group is still at generation " + std::to_string(info->generation) + ", not yet at " +
                   std::to_string(minGeneration);
    }
    std::set<TopicPartition> owned;
    for (auto& v : views) {
      if (!ok) break;
      if (!v.alive || v.generation != info->generation) {
        ok = false;
        out.reason = "member " + v.id + " at generation " + std::to_string(v.generation) + ", the group at " +
                     std::to_string(info->generation);
        break;
      }
      // The member list comes with a registration: a member that took the
      // generation from a heartbeat (version 2, a move that left it as it
      // was, docs/protocol.md §21) holds its registration's list.
      if (v.listGeneration == info->generation && v.members != info->members) {
        ok = false;
        out.reason = "member " + v.id + " has another member list";
        break;
      }
      for (auto& p : v.held) {
        if (!owned.insert(p).second) {
          ok = false;
          out.reason = name(p) + " held by two members";
        }
      }
    }
    if (ok && owned != all) {
      ok = false;
      out.reason = std::to_string(owned.size()) + " of " + std::to_string(all.size()) + " partitions owned";
    }
    if (ok) {
      out.settled = true;
      out.ms = std::max<int64_t>(0, msBetween(from, observedAt));
      out.at = observedAt;
      out.generation = info->generation;
      out.reason.clear();
      return out;
    }
    std::this_thread::sleep_for(100ms);
  }
  return out;
}

}  // namespace groupcoord::testing
