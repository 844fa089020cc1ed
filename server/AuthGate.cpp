#include "server/AuthGate.h"

#include <pthread.h>

#include <spdlog/spdlog.h>

#include "protocol/Codec.h"
#include "common/LogRateLimiter.h"

namespace groupcoord::server {

namespace {
LogRateLimiter gRefusedLog{std::chrono::seconds(1)};
LogRateLimiter gFailedLog{std::chrono::seconds(1)};

std::string suppressedNote(uint64_t n) {
  return n ? " (" + std::to_string(n) + " similar lines suppressed)" : std::string();
}
}  // namespace

std::string printableForLog(std::string_view text) {
  std::string out;
  for (char ch : text.substr(0, 64)) out += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  if (text.size() > 64) out += "...";
  return out;
}

AuthGate::AuthGate(std::shared_ptr<const CredentialStore> credentials) : credentials_(std::move(credentials)) {
  worker_ = std::thread([this] { run(); });
}

AuthGate::~AuthGate() { stop(); }

void AuthGate::stop() {
  {
    MutexLock lock(mutex_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::deque<Job> dropped;
  {
    MutexLock lock(mutex_);
    dropped.swap(jobs_);
  }
}

void AuthGate::handle(const std::shared_ptr<AuthSession>& session, const protocol::Caller& caller, protocol::Handler& next,
                      const protocol::RequestHeader& header, protocol::Request request,
                      protocol::ResponseCallback done) {
  if (auto* auth = std::get_if<protocol::AuthenticateRequest>(&request)) {
    Job job{session, caller, &next, header, std::move(*auth), std::move(done)};
    {
      MutexLock lock(session->mutex_);
      if (session->checking_) {
        // A second Authenticate pipelined behind the first: it waits its turn.
        session->waiting_.push_back(
            {caller, header, protocol::AuthenticateRequest(std::move(job.request)), std::move(job.done)});
        return;
      }
      session->checking_ = true;
    }
    {
      MutexLock lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
    return;
  }
  {
    MutexLock lock(session->mutex_);
    if (session->checking_) {
      session->waiting_.push_back({caller, header, std::move(request), std::move(done)});
      return;
    }
  }
  admit(*session, caller, next, header, std::move(request), std::move(done));
}

void AuthGate::admit(AuthSession& session, const protocol::Caller& caller, protocol::Handler& next,
                     const protocol::RequestHeader& header, protocol::Request request,
                     protocol::ResponseCallback done) {
  bool authenticated = false;
  Role role = Role::Member;
  std::string user;
  {
    MutexLock lock(session.mutex_);
    authenticated = session.authenticated_;
    role = session.role_;
    if (authenticated) user = session.user_;
  }
  const protocol::ApiKey api = protocol::apiKeyOf(request);
  if (authenticated && roleAllows(role, api)) {
    protocol::Caller who = caller;
    who.user = std::move(user);
    next.handleFrom(who, header, std::move(request), std::move(done));
    return;
  }
  const std::string peer = caller.address();
  uint64_t suppressed = 0;
  if (gRefusedLog.allow(&suppressed)) {
    if (authenticated) {
      spdlog::warn("refused {} from {} (user '{}', role {}): only an admin may call it; answered NOT_AUTHORIZED{}",
                   protocol::apiName(api), peer, user, roleName(role), suppressedNote(suppressed));
    } else {
      spdlog::warn("refused {} from {} (not authenticated): Authenticate first; answered NOT_AUTHORIZED{}",
                   protocol::apiName(api), peer, suppressedNote(suppressed));
    }
  }
  done(protocol::errorResponse(request, protocol::ErrorCode::NOT_AUTHORIZED));
}

void AuthGate::run() {
  ::pthread_setname_np(::pthread_self(), "gc-auth");
  for (;;) {
    Job job;
    {
      MutexLock lock(mutex_);
      waitForWork();
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    check(job);
  }
}

void AuthGate::waitForWork() {
  while (!stopping_ && jobs_.empty()) waitLocked(wake_, mutex_);
}

void AuthGate::check(Job& job) {
  AuthSession& session = *job.session;
  std::optional<Role> role;
  if (isValidUserName(job.request.user)) role = credentials_->verify(job.request.user, job.request.secret);
  {
    MutexLock lock(session.mutex_);
    // A failed Authenticate leaves the connection unauthenticated, also when
    // it was authenticated before.
    session.authenticated_ = role.has_value();
    session.role_ = role.value_or(Role::Member);
    session.user_ = role ? job.request.user : std::string();
  }
  if (role) {
    spdlog::debug("{} authenticated as '{}' (role {})", job.caller.address(), job.request.user, roleName(*role));
  } else {
    uint64_t suppressed = 0;
    if (gFailedLog.allow(&suppressed)) {
      spdlog::warn("authentication of user '{}' from {} failed: unknown user or wrong secret; answered "
                   "NOT_AUTHORIZED{}",
                   printableForLog(job.request.user), job.caller.address(), suppressedNote(suppressed));
    }
  }
  job.done(protocol::AuthenticateResponse{role ? protocol::ErrorCode::NONE : protocol::ErrorCode::NOT_AUTHORIZED});

  // Whatever arrived meanwhile goes on in order, up to the next Authenticate,
  // which is checked in its turn.
  for (;;) {
    AuthSession::Waiting next;
    {
      MutexLock lock(session.mutex_);
      if (session.waiting_.empty()) {
        session.checking_ = false;
        return;
      }
      next = std::move(session.waiting_.front());
      session.waiting_.erase(session.waiting_.begin());
      if (auto* auth = std::get_if<protocol::AuthenticateRequest>(&next.request)) {
        Job again{job.session, next.caller, job.next, next.header, std::move(*auth), std::move(next.done)};
        {
          MutexLock jobsLock(mutex_);
          if (stopping_) return;
          jobs_.push_back(std::move(again));
        }
        wake_.notify_one();
        return;  // still checking_
      }
    }
    admit(session, next.caller, *job.next, next.header, std::move(next.request), std::move(next.done));
  }
}

}  // namespace groupcoord::server
