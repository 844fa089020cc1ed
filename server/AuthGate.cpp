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
  std::multimap<AuthThrottle::Clock::time_point, Job> droppedLater;
  {
    MutexLock lock(mutex_);
    dropped.swap(jobs_);
    droppedLater.swap(delayed_);
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

void AuthGate::setPermissions(std::shared_ptr<const permissions::Policy> policy) {
  MutexLock lock(policyMutex_);
  policy_ = std::move(policy);
  ++policyGeneration_;
}

std::shared_ptr<const permissions::Policy> AuthGate::permissions() const {
  MutexLock lock(policyMutex_);
  return policy_;
}

permissions::OperationSet AuthGate::decide(AuthSession& session, const permissions::Policy& policy,
                                           uint64_t generation, const std::string& user, Role role,
                                           const std::string& group) {
  if (session.policyGeneration_ != generation || session.decided_.size() >= kMaxDecisions) {
    session.decided_.clear();
    session.policyGeneration_ = generation;
  }
  auto it = session.decided_.find(group);
  if (it != session.decided_.end()) return it->second;
  const permissions::OperationSet ops = policy.allowed(user, role, group);
  session.decided_.emplace(group, ops);
  return ops;
}

namespace {

// The group a call names; "" for calls that name none (and ListGroups).
std::string groupOf(const protocol::Request& request) {
  return std::visit(
      [](const auto& r) -> std::string {
        if constexpr (requires { r.group; }) {
          return r.group;
        } else {
          return {};
        }
      },
      request);
}

// What a ListGroups answer may show `user`: the groups it may describe.
// Listing every group leaves the others out; a group asked for by name is
// answered NOT_AUTHORIZED, with nothing about it.
protocol::ResponseCallback describableOnly(protocol::ResponseCallback done, bool named,
                                           std::shared_ptr<const permissions::Policy> policy, std::string user,
                                           Role role) {
  return [done = std::move(done), named, policy = std::move(policy), user = std::move(user),
          role](protocol::Response response) {
    if (auto* list = std::get_if<protocol::ListGroupsResponse>(&response)) {
      std::vector<protocol::GroupInfo> shown;
      shown.reserve(list->groups.size());
      for (auto& g : list->groups) {
        if (policy->allows(user, role, g.name, permissions::Operation::Describe)) {
          shown.push_back(std::move(g));
        } else if (named) {
          protocol::GroupInfo refused;
          refused.name = g.name;
          refused.error = protocol::ErrorCode::NOT_AUTHORIZED;
          shown.push_back(std::move(refused));
        }
      }
      list->groups = std::move(shown);
    }
    done(std::move(response));
  };
}

}  // namespace

void AuthGate::admit(AuthSession& session, const protocol::Caller& caller, protocol::Handler& next,
                     const protocol::RequestHeader& header, protocol::Request request,
                     protocol::ResponseCallback done) {
  const protocol::ApiKey api = protocol::apiKeyOf(request);
  const auto operation = permissions::operationOf(api);
  std::shared_ptr<const permissions::Policy> policy;
  uint64_t generation = 0;
  if (operation) {
    MutexLock lock(policyMutex_);
    policy = policy_;
    generation = policyGeneration_;
  }
  const bool listing = api == protocol::ApiKey::ListGroups;
  const std::string group = policy && !listing ? groupOf(request) : std::string();
  bool authenticated = false;
  bool allowed = false;
  Role role = Role::Member;
  std::string user;
  {
    MutexLock lock(session.mutex_);
    authenticated = session.authenticated_;
    role = session.role_;
    if (authenticated) {
      user = session.user_;
      if (!policy || listing) {
        allowed = policy ? true : roleAllows(role, api);
      } else {
        allowed = (decide(session, *policy, generation, user, role, group) & permissions::bit(*operation)) != 0;
      }
    }
  }
  if (allowed) {
    if (policy && listing) {
      const bool named = !std::get<protocol::ListGroupsRequest>(request).groups.empty();
      done = describableOnly(std::move(done), named, policy, user, role);
    }
    protocol::Caller who = caller;
    who.user = std::move(user);
    next.handleFrom(who, header, std::move(request), std::move(done));
    return;
  }
  const std::string peer = caller.address();
  uint64_t suppressed = 0;
  if (gRefusedLog.allow(&suppressed)) {
    if (!authenticated) {
      spdlog::warn("refused {} from {} (not authenticated): Authenticate first; answered NOT_AUTHORIZED{}",
                   protocol::apiName(api), peer, suppressedNote(suppressed));
    } else if (policy) {
      spdlog::warn("refused {} of group '{}' from {} (user '{}'): no rule of the permissions file allows '{}' on "
                   "it, or one denies it; answered NOT_AUTHORIZED{}",
                   protocol::apiName(api), printableForLog(group), peer, user,
                   permissions::operationName(*operation), suppressedNote(suppressed));
    } else {
      spdlog::warn("refused {} from {} (user '{}', role {}): only an admin may call it; answered NOT_AUTHORIZED{}",
                   protocol::apiName(api), peer, user, roleName(role), suppressedNote(suppressed));
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
      if (!nextJob(&job)) return;
    }
    check(job);
  }
}

bool AuthGate::nextJob(Job* job) {
  for (;;) {
    if (stopping_) return false;
    const auto now = AuthThrottle::Clock::now();
    Job next;
    if (!delayed_.empty() && delayed_.begin()->first <= now) {
      next = std::move(delayed_.begin()->second);
      delayed_.erase(delayed_.begin());
    } else if (!jobs_.empty()) {
      next = std::move(jobs_.front());
      jobs_.pop_front();
    } else if (delayed_.empty()) {
      waitLocked(wake_, mutex_);
      continue;
    } else {
      waitLockedUntil(wake_, mutex_, delayed_.begin()->first);
      continue;
    }
    // Failures since it was queued may have pushed its time further.
    const auto at = throttle_.notBefore(next.caller.host, next.request.user, now);
    if (at > now) {
      delayed_.emplace(at, std::move(next));
      continue;
    }
    *job = std::move(next);
    return true;
  }
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
    session.decided_.clear();  // decided for the user it was before
  }
  std::chrono::milliseconds wait{0};
  {
    MutexLock lock(mutex_);
    if (role) {
      throttle_.succeeded(job.caller.host, job.request.user);
    } else {
      const auto now = AuthThrottle::Clock::now();
      throttle_.failed(job.caller.host, job.request.user, now);
      wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          throttle_.notBefore(job.caller.host, job.request.user, now) - now);
    }
  }
  if (role) {
    spdlog::debug("{} authenticated as '{}' (role {})", job.caller.address(), job.request.user, roleName(*role));
  } else {
    uint64_t suppressed = 0;
    if (gFailedLog.allow(&suppressed)) {
      spdlog::warn("authentication of user '{}' from {} failed: unknown user or wrong secret; answered "
                   "NOT_AUTHORIZED{}{}",
                   printableForLog(job.request.user), job.caller.address(),
                   wait.count() > 0 ? fmt::format("; the next Authenticate from {} or for this user waits {} ms",
                                                  job.caller.host, wait.count())
                                    : std::string(),
                   suppressedNote(suppressed));
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
