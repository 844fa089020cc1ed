#pragma once

// The handler chain of the binary port (docs/design.md, "The handler
// chain"). The I/O loop (server/IoLoop.h) decodes and checks a request and
// hands it to the head of a chain of stages; it knows nothing of what the
// stages do. TcpServer builds the chain from its options:
//
//   MetricsStage (options.observer set) -> AuthStage (options.auth set) -> CoordinatorStage
//
// Every stage has the same interface (Stage), so that a port for another
// protocol builds its own chain from the stages it needs and a handler at
// its end. A stage has two calls: the general one, answered through a
// callback from any thread, and the inline heartbeat, answered at once on
// the I/O thread or declined (then the general call follows).
//
// A stage names the type of the next one (Next): with one of this file's
// final stages there, the compiler sees through the whole inline heartbeat
// path, and the chain costs the loop one virtual call (Chain builds those).
// Next = Stage: any stage, called virtually.
//
// What a stage keeps per connection lives in the connection's
// ConnectionContext, which the connection owns and touches only on its I/O
// thread.

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/Handler.h"
#include "server/AuthGate.h"
#include "server/TcpOptions.h"

namespace groupcoord::server {

// One connection's state for its chain.
struct ConnectionContext {
  // The peer as the server saw it (no user: the auth stage adds it when it
  // forwards).
  protocol::Caller caller;
  // The auth stage's session: who this connection authenticated as. Made
  // by its first request's general call.
  std::shared_ptr<AuthSession> auth;
  // The coordinator's, for its inline heartbeats (protocol::Handler::heartbeatNow).
  protocol::ConnectionSlot handlerState;
};

class Stage {
 public:
  using GroupMotion = protocol::Handler::GroupMotion;
  virtual ~Stage() = default;

  // The general call, on the connection's I/O thread, or on another thread
  // when a stage forwards later (the auth stage, for requests that waited
  // behind an Authenticate): then `ctx` is null, and only `caller` tells
  // who sent it. `done` is called exactly once, from any thread.
  virtual void handle(const protocol::Caller& caller, ConnectionContext* ctx, const protocol::RequestHeader& header,
                      protocol::Request request, protocol::ResponseCallback done) = 0;

  // The inline heartbeat, on the connection's I/O thread only: true when
  // `out` holds the answer; false when the general call must answer it.
  // No allocation, no callback. `readAt` and `motion`: as
  // protocol::Handler::heartbeatNow's.
  virtual bool heartbeatNow(ConnectionContext& ctx, const protocol::HeartbeatView& request,
                            protocol::HeartbeatResponse& out, std::chrono::steady_clock::time_point readAt,
                            std::optional<GroupMotion>* motion) = 0;

  // Whether a stage of this chain records the sampled stages of inline
  // heartbeats (the loop times them only then), and where they go.
  virtual bool recordsHeartbeatStages() const = 0;
  virtual void heartbeatStages(const HeartbeatStages& stages) = 0;
};

// The end of the chain: a protocol::Handler (the coordinator). With no auth
// stage in front of it, it answers Authenticate itself: NONE, every
// connection may do everything already.
class CoordinatorStage final : public Stage {
 public:
  explicit CoordinatorStage(protocol::Handler& handler) : handler_(handler) {}
  void handle(const protocol::Caller& caller, ConnectionContext* ctx, const protocol::RequestHeader& header,
              protocol::Request request, protocol::ResponseCallback done) override;
  bool heartbeatNow(ConnectionContext& ctx, const protocol::HeartbeatView& request, protocol::HeartbeatResponse& out,
                    std::chrono::steady_clock::time_point readAt, std::optional<GroupMotion>* motion) override {
    return handler_.heartbeatNow(ctx.caller, ctx.handlerState, request, out, readAt, motion);
  }
  bool recordsHeartbeatStages() const override { return false; }
  void heartbeatStages(const HeartbeatStages&) override {}

 private:
  protocol::Handler& handler_;
};

namespace detail {
// What the auth gate forwards to (a protocol::Handler): the next stage,
// with no connection context (the gate may forward from its worker).
class ForwardToStage final : public protocol::Handler {
 public:
  explicit ForwardToStage(Stage& next) : next_(next) {}
  void handle(const protocol::RequestHeader& header, protocol::Request request,
              protocol::ResponseCallback done) override {
    next_.handle(protocol::Caller{}, nullptr, header, std::move(request), std::move(done));
  }
  void handleFrom(const protocol::Caller& caller, const protocol::RequestHeader& header, protocol::Request request,
                  protocol::ResponseCallback done) override {
    next_.handle(caller, nullptr, header, std::move(request), std::move(done));
  }

 private:
  Stage& next_;
};
// AuthStage's general call, shared by its instances.
void authHandle(AuthGate& gate, protocol::Handler& forward, const protocol::Caller& caller, ConnectionContext* ctx,
                const protocol::RequestHeader& header, protocol::Request request, protocol::ResponseCallback done);
// MetricsStage's general call: `done` wrapped to tell `observer`.
protocol::ResponseCallback meteredDone(RequestObserver& observer, protocol::ApiKey api,
                                       protocol::ResponseCallback done, bool held = false);
}  // namespace detail

// Authentication and permissions (server/AuthGate.h): a request goes on
// when the connection's session allows it, else the gate answers it. The
// inline heartbeat goes on only when the gate admits it now
// (AuthGate::admitsNow); otherwise the general call decides.
template <class Next = Stage>
class AuthStage final : public Stage {
 public:
  AuthStage(AuthGate& gate, Next& next) : gate_(gate), next_(next), forward_(next) {}
  void handle(const protocol::Caller& caller, ConnectionContext* ctx, const protocol::RequestHeader& header,
              protocol::Request request, protocol::ResponseCallback done) override {
    detail::authHandle(gate_, forward_, caller, ctx, header, std::move(request), std::move(done));
  }
  bool heartbeatNow(ConnectionContext& ctx, const protocol::HeartbeatView& request, protocol::HeartbeatResponse& out,
                    std::chrono::steady_clock::time_point readAt, std::optional<GroupMotion>* motion) override {
    // Its first request: the general call makes its session.
    if (ctx.auth == nullptr || !gate_.admitsNow(*ctx.auth, protocol::ApiKey::Heartbeat, request.group)) return false;
    return next_.heartbeatNow(ctx, request, out, readAt, motion);
  }
  bool recordsHeartbeatStages() const override { return next_.recordsHeartbeatStages(); }
  void heartbeatStages(const HeartbeatStages& stages) override { next_.heartbeatStages(stages); }

 private:
  AuthGate& gate_;
  Next& next_;
  detail::ForwardToStage forward_;
};

// Request metrics: tells `observer` of every request the rest of the chain
// answered (its API, the error at the top of the answer, the time from the
// call to the answer), and records the sampled stages of inline
// heartbeats. At the head of the chain, so that what the auth stage
// answers itself (Authenticate, refusals) is counted too, as it was when
// the loop told the observer. `observer` must outlive every answer still
// pending.
template <class Next = Stage>
class MetricsStage final : public Stage {
 public:
  MetricsStage(RequestObserver& observer, Next& next) : observer_(observer), next_(next) {}
  void handle(const protocol::Caller& caller, ConnectionContext* ctx, const protocol::RequestHeader& header,
              protocol::Request request, protocol::ResponseCallback done) override {
    const auto* beat = std::get_if<protocol::HeartbeatRequest>(&request);
    const bool mayBeHeld = beat != nullptr && beat->waitMs > 0;
    next_.handle(caller, ctx, header, std::move(request),
                 detail::meteredDone(observer_, header.apiKey, std::move(done), mayBeHeld));
  }
  bool heartbeatNow(ConnectionContext& ctx, const protocol::HeartbeatView& request, protocol::HeartbeatResponse& out,
                    std::chrono::steady_clock::time_point readAt, std::optional<GroupMotion>* motion) override {
    using Clock = std::chrono::steady_clock;
    // The loop's own reading when it took one (a sampled heartbeat), else ours.
    const Clock::time_point start = readAt != Clock::time_point{} ? readAt : Clock::now();
    if (!next_.heartbeatNow(ctx, request, out, start, motion)) return false;
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    observer_.answered(protocol::ApiKey::Heartbeat, out.error, took > 0 ? static_cast<uint64_t>(took) : 0);
    return true;
  }
  bool recordsHeartbeatStages() const override { return true; }
  void heartbeatStages(const HeartbeatStages& stages) override { observer_.heartbeatStages(stages); }

 private:
  RequestObserver& observer_;
  Next& next_;
};

// The binary port's chain, built from its options around `handler`: the
// stages, owned, and the head to call. Each shape is built from the final
// stage types, so that its inline path is one function.
class Chain {
 public:
  Chain(const TcpServerOptions& options, protocol::Handler& handler);
  Stage& head() { return *head_; }

 private:
  CoordinatorStage coordinator_;
  std::vector<std::unique_ptr<Stage>> stages_;  // in front of the coordinator, the head last
  Stage* head_ = nullptr;
};

}  // namespace groupcoord::server
