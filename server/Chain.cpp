#include "server/Chain.h"

#include <utility>
#include <variant>

namespace groupcoord::server {

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

namespace detail {

void authHandle(AuthGate& gate, protocol::Handler& forward, const protocol::Caller& caller, ConnectionContext* ctx,
                const protocol::RequestHeader& header, protocol::Request request, protocol::ResponseCallback done) {
  // Without a context (a chain that forwards to this stage from another
  // thread) there is no session: a fresh one, which allows nothing but
  // Authenticate.
  std::shared_ptr<AuthSession> none;
  std::shared_ptr<AuthSession>& session = ctx != nullptr ? ctx->auth : none;
  if (!session) session = std::make_shared<AuthSession>();
  gate.handle(session, caller, forward, header, std::move(request), std::move(done));
}

protocol::ResponseCallback meteredDone(RequestObserver& observer, protocol::ApiKey api,
                                       protocol::ResponseCallback done, bool held) {
  using Clock = std::chrono::steady_clock;
  return [observer = &observer, api, held, start = Clock::now(), done = std::move(done)](protocol::Response response) {
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    const uint64_t nanos = took > 0 ? static_cast<uint64_t>(took) : 0;
    if (held) {
      observer->answeredHeld(protocol::responseError(response), nanos);
    } else {
      observer->answered(api, protocol::responseError(response), nanos);
    }
    done(std::move(response));
  };
}

}  // namespace detail

Chain::Chain(const TcpServerOptions& options, protocol::Handler& handler) : coordinator_(handler) {
  using Auth = AuthStage<CoordinatorStage>;
  head_ = &coordinator_;
  if (options.auth && options.observer != nullptr) {
    auto& auth = *stages_.emplace_back(std::make_unique<Auth>(*options.auth, coordinator_));
    head_ = stages_.emplace_back(std::make_unique<MetricsStage<Auth>>(*options.observer, static_cast<Auth&>(auth))).get();
  } else if (options.auth) {
    head_ = stages_.emplace_back(std::make_unique<Auth>(*options.auth, coordinator_)).get();
  } else if (options.observer != nullptr) {
    head_ = stages_.emplace_back(std::make_unique<MetricsStage<CoordinatorStage>>(*options.observer, coordinator_)).get();
  }
}

}  // namespace groupcoord::server
