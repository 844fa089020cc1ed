#include "metrics/TimedZkClient.h"

#include <chrono>

#include "metrics/Coordination.h"

namespace groupcoord::metrics {

namespace {

using Clock = std::chrono::steady_clock;

template <typename R>
zk::Callback<R> timed(ZkOp op, zk::Callback<R> done) {
  return [op, start = Clock::now(), done = std::move(done)](R result) {
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    coordination().observeZk(op, took > 0 ? static_cast<uint64_t>(took) : 0);
    done(std::move(result));
  };
}

ZkState toMetric(zk::SessionState s) {
  switch (s) {
    case zk::SessionState::Connecting: return ZkState::Connecting;
    case zk::SessionState::Connected: return ZkState::Connected;
    case zk::SessionState::Reconnecting: return ZkState::Reconnecting;
    case zk::SessionState::Expired: return ZkState::Expired;
    case zk::SessionState::AuthFailed: return ZkState::AuthFailed;
    case zk::SessionState::Closed: return ZkState::Closed;
  }
  return ZkState::Closed;
}

}  // namespace

TimedZkClient::TimedZkClient(zk::Client& inner) : inner_(inner) {}

// The wrapped client may already be gone (its owner destroys it first), so
// the destructor does not touch it; setListener(nullptr) detached us.
TimedZkClient::~TimedZkClient() = default;

void TimedZkClient::create(const std::string& path, std::string data, zk::CreateMode mode,
                           zk::Callback<zk::CreateResult> done) {
  inner_.create(path, std::move(data), mode, timed(ZkOp::Create, std::move(done)));
}

void TimedZkClient::remove(const std::string& path, int32_t version, zk::Callback<zk::Error> done) {
  inner_.remove(path, version, timed(ZkOp::Remove, std::move(done)));
}

void TimedZkClient::get(const std::string& path, zk::Callback<zk::GetResult> done, zk::WatchCallback watch) {
  inner_.get(path, timed(ZkOp::Get, std::move(done)), std::move(watch));
}

void TimedZkClient::set(const std::string& path, std::string data, int32_t version,
                        zk::Callback<zk::SetResult> done) {
  inner_.set(path, std::move(data), version, timed(ZkOp::Set, std::move(done)));
}

void TimedZkClient::exists(const std::string& path, zk::Callback<zk::ExistsResult> done, zk::WatchCallback watch) {
  inner_.exists(path, timed(ZkOp::Exists, std::move(done)), std::move(watch));
}

void TimedZkClient::getChildren(const std::string& path, zk::Callback<zk::ChildrenResult> done,
                                zk::WatchCallback watch) {
  inner_.getChildren(path, timed(ZkOp::GetChildren, std::move(done)), std::move(watch));
}

void TimedZkClient::multi(std::vector<zk::Op> ops, zk::Callback<zk::MultiResult> done) {
  inner_.multi(std::move(ops), timed(ZkOp::Multi, std::move(done)));
}

void TimedZkClient::setListener(zk::SessionListener* listener) {
  listener_.store(listener);
  inner_.setListener(listener != nullptr ? static_cast<zk::SessionListener*>(this) : nullptr);
}

void TimedZkClient::onSessionState(zk::SessionState state) {
  coordination().sessionState(toMetric(state));
  if (zk::SessionListener* l = listener_.load()) l->onSessionState(state);
}

}  // namespace groupcoord::metrics
