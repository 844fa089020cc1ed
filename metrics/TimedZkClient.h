#pragma once

// A zk::Client that forwards every call to another one and records, in
// metrics::coordination(), how long each operation took (from the call to
// its completion) and every session state change. It adds a clock read and
// a wrapper around the callback per operation; nothing else changes: the
// same thread runs the same callbacks in the same order.
//
// Threads and lifetime: as the wrapped client's. The wrapped client must
// outlive this one; the callbacks it holds do not refer to this object, so
// they may complete after it is gone (at the wrapped client's destruction).

#include <atomic>

#include "zk/Client.h"

namespace groupcoord::metrics {

class TimedZkClient final : public zk::Client, private zk::SessionListener {
 public:
  explicit TimedZkClient(zk::Client& inner);
  ~TimedZkClient() override;

  void create(const std::string& path, std::string data, zk::CreateMode mode,
              zk::Callback<zk::CreateResult> done) override;
  void remove(const std::string& path, int32_t version, zk::Callback<zk::Error> done) override;
  void get(const std::string& path, zk::Callback<zk::GetResult> done, zk::WatchCallback watch = {}) override;
  void set(const std::string& path, std::string data, int32_t version, zk::Callback<zk::SetResult> done) override;
  void exists(const std::string& path, zk::Callback<zk::ExistsResult> done, zk::WatchCallback watch = {}) override;
  void getChildren(const std::string& path, zk::Callback<zk::ChildrenResult> done,
                   zk::WatchCallback watch = {}) override;
  void multi(std::vector<zk::Op> ops, zk::Callback<zk::MultiResult> done) override;

  zk::SessionState state() const override { return inner_.state(); }
  int64_t sessionId() const override { return inner_.sessionId(); }
  std::chrono::milliseconds sessionTimeout() const override { return inner_.sessionTimeout(); }
  // The wrapped client reports to this object, which records the state and
  // passes it on to `listener`.
  void setListener(zk::SessionListener* listener) override;
  void renew() override { inner_.renew(); }
  void post(std::function<void()> task) override { inner_.post(std::move(task)); }

 private:
  void onSessionState(zk::SessionState state) override;

  zk::Client& inner_;
  std::atomic<zk::SessionListener*> listener_{nullptr};
};

}  // namespace groupcoord::metrics
