#include "server/Chain.h"

#include <utility>
#include <variant>

#include "server/AuthGate.h"

namespace groupcoord::server {

namespace {
using Clock = std::chrono::steady_clock;

uint64_t nanosSince(Clock::time_point from, Clock::time_point to) {
  const auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
  return d > 0 ? static_cast<uint64_t>(d) : 0;
}
}  // namespace

// ---- CoordinatorStage -------------------------------------------------------

void CoordinatorStage::handle(const protocol::Caller& caller, ConnectionContext* ctx,
                              const protocol::RequestHeader& header, protocol::Request request,
                              protocol::ResponseCallback done) {
  (void)ctx;
  if (std::holds_alternative<protocol::AuthenticateRequest>(request)) {
    // No auth stage in front: every connection may do everything already.
    done(protocol::AuthenticateResponse{protocol::ErrorCode::NONE});
    return;
  }
  handler_.handleFrom(caller, header, std::move(request), std::move(done));
}

// ---- AuthStage --------------------------------------------------------------

AuthStage::AuthStage(AuthGate& gate, Stage& next) : gate_(gate), next_(next), forward_(next) {}

void AuthStage::handle(const protocol::Caller& caller, ConnectionContext* ctx, const protocol::RequestHeader& header,
                       protocol::Request request, protocol::ResponseCallback done) {
  // Without a context (a wiring that forwards to this stage from another
  // thread) there is no session: a fresh one, which allows nothing but
  // Authenticate.
  std::shared_ptr<AuthSession> none;
  std::shared_ptr<AuthSession>& session = ctx != nullptr ? ctx->auth : none;
  if (!session) session = std::make_shared<AuthSession>();
  gate_.handle(session, caller, forward_, header, std::move(request), std::move(done));
}

bool AuthStage::heartbeatNow(ConnectionContext& ctx, const protocol::HeartbeatView& request,
                             protocol::HeartbeatResponse& out, std::chrono::steady_clock::time_point readAt) {
  // Its first request: the general call makes its session.
  if (ctx.auth == nullptr || !gate_.admitsNow(*ctx.auth, protocol::ApiKey::Heartbeat, request.group)) return false;
  return next_.heartbeatNow(ctx, request, out, readAt);
}

// ---- MetricsStage -----------------------------------------------------------

void MetricsStage::handle(const protocol::Caller& caller, ConnectionContext* ctx, const protocol::RequestHeader& header,
                          protocol::Request request, protocol::ResponseCallback done) {
  const protocol::ApiKey api = header.apiKey;
  next_.handle(caller, ctx, header, std::move(request),
               [observer = &observer_, api, start = Clock::now(), done = std::move(done)](protocol::Response response) {
                 observer->answered(api, protocol::responseError(response), nanosSince(start, Clock::now()));
                 done(std::move(response));
               });
}

bool MetricsStage::heartbeatNow(ConnectionContext& ctx, const protocol::HeartbeatView& request,
                                protocol::HeartbeatResponse& out, std::chrono::steady_clock::time_point readAt) {
  // The loop's own reading when it took one (a sampled heartbeat), else ours.
  const Clock::time_point start = readAt != Clock::time_point{} ? readAt : Clock::now();
  if (!next_.heartbeatNow(ctx, request, out, start)) return false;
  observer_.answered(protocol::ApiKey::Heartbeat, out.error, nanosSince(start, Clock::now()));
  return true;
}

// ---- Chain ------------------------------------------------------------------

Chain::Chain(const TcpServerOptions& options, protocol::Handler& handler) : coordinator_(handler) {
  head_ = &coordinator_;
  if (options.auth) head_ = &auth_.emplace(*options.auth, *head_);
  if (options.observer != nullptr) head_ = &metrics_.emplace(*options.observer, *head_);
}

}  // namespace groupcoord::server
