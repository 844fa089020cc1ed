#include "server/AuthGate.h"

#include <openssl/rand.h>
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

AuthGate::AuthGate(std::shared_ptr<const CredentialStore> credentials)
    : credentials_(std::move(credentials)), decoyKey_(32) {
  if (RAND_bytes(decoyKey_.data(), static_cast<int>(decoyKey_.size())) != 1) decoyKey_.assign(32, 0x3c);
  worker_ = std::thread([this] { run(); });
}

std::string AuthGate::throttleUserOf(const AuthSession& session, const protocol::AuthenticateRequest& request) {
  if (request.mechanism.empty()) return request.user;  // version 0
  if (request.message.rfind("c=", 0) == 0) return session.scramUser_;
  // A first message: "n,,n=USER,r=..." (the user as written; a malformed
  // message counts for the empty name).
  const size_t at = request.message.find(",n=");
  if (at == std::string::npos) return "";
  const size_t end = request.message.find(',', at + 3);
  return request.message.substr(at + 3, std::min<size_t>(end, request.message.size()) - at - 3).substr(0, 128);
}

scram::ServerExchange::User AuthGate::decoyFor(std::string_view user) const {
  scram::ServerExchange::User u;
  u.salt = scram::hmacSha256(decoyKey_, "salt:" + std::string(user));
  u.salt.resize(credentials::kSaltBytes);
  u.iterations = credentials_->decoyIterations();
  u.keys.storedKey = scram::hmacSha256(decoyKey_, "stored:" + std::string(user));
  u.keys.serverKey = scram::hmacSha256(decoyKey_, "server:" + std::string(user));
  u.known = false;
  return u;
}

protocol::AuthenticateResponse AuthGate::scramStep(Job& job, std::optional<Role>* role, std::string* user,
                                                   bool* counts) {
  AuthSession& session = *job.session;
  const protocol::AuthenticateRequest& r = job.request;
  protocol::AuthenticateResponse answer{protocol::ErrorCode::NOT_AUTHORIZED, "e=other-error"};
  *counts = true;
  if (r.mechanism != scram::kMechanism) {
    // Not a guess: the client asks for what this server does not speak.
    *counts = false;
    MutexLock lock(session.mutex_);
    session.scram_.reset();
    return protocol::AuthenticateResponse{protocol::ErrorCode::INVALID_REQUEST, std::string(scram::kMechanism)};
  }
  std::string why;
  std::unique_ptr<scram::ServerExchange> exchange;
  std::string exchangeUser;
  {
    MutexLock lock(session.mutex_);
    if (r.message.rfind("c=", 0) == 0) {
      exchange = std::move(session.scram_);
      exchangeUser = std::move(session.scramUser_);
      session.scramUser_.clear();
    } else {
      session.scram_.reset();
    }
  }
  if (r.message.rfind("c=", 0) != 0) {
    // The first message: answer the challenge; the connection is not
    // authenticated until the proof.
    auto ex = std::make_unique<scram::ServerExchange>();
    auto name = ex->start(r.message, &why);
    if (!name || !isValidUserName(*name)) {
      *user = name.value_or("");
      spdlog::debug("SCRAM first message from {} refused: {}", job.caller.address(),
                    why.empty() ? "user name not 1 to 128 of [A-Za-z0-9._@-]" : why);
      return answer;
    }
    scram::ServerExchange::User u;
    if (const Credential* c = credentials_->find(*name)) {
      u.salt = c->salt;
      u.iterations = c->iterations;
      u.keys = scram::ServerKeys{c->storedKey, c->serverKey};
      u.known = true;
    } else {
      u = decoyFor(*name);
    }
    answer = protocol::AuthenticateResponse{protocol::ErrorCode::NONE, ex->challenge(std::move(u))};
    *counts = false;
    MutexLock lock(session.mutex_);
    session.authenticated_ = false;
    session.user_.clear();
    forgetDecisions(session);
    session.scram_ = std::move(ex);
    session.scramUser_ = *name;
    return answer;
  }
  *user = exchangeUser;
  if (!exchange) {
    spdlog::debug("SCRAM final message from {} without a first one", job.caller.address());
    return answer;
  }
  std::string serverFinal;
  if (!exchange->finish(r.message, &serverFinal, &why)) {
    spdlog::debug("SCRAM proof from {} for '{}' refused: {}", job.caller.address(), printableForLog(exchangeUser), why);
    return protocol::AuthenticateResponse{protocol::ErrorCode::NOT_AUTHORIZED, serverFinal};
  }
  const Credential* c = credentials_->find(exchangeUser);
  if (c == nullptr) return answer;  // a decoy never proves; kept for safety
  *role = c->role;
  return protocol::AuthenticateResponse{protocol::ErrorCode::NONE, serverFinal};
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
    enqueue(Job{session, caller, &next, header, std::move(*auth), std::move(done), {}});
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

void AuthGate::authenticate(const std::shared_ptr<AuthSession>& session, const protocol::Caller& caller,
                            int16_t version, protocol::AuthenticateRequest request, protocol::ResponseCallback done) {
  protocol::RequestHeader header;
  header.apiKey = protocol::ApiKey::Authenticate;
  header.version = version;
  enqueue(Job{session, caller, nullptr, std::move(header), std::move(request), std::move(done), {}});
}

std::optional<std::string> AuthGate::authenticatedUser(AuthSession& session) {
  MutexLock lock(session.mutex_);
  if (!session.authenticated_) return std::nullopt;
  return session.user_;
}

void AuthGate::enqueue(Job job) {
  {
    AuthSession& session = *job.session;
    MutexLock lock(session.mutex_);
    job.throttleUser = throttleUserOf(session, job.request);
    if (session.checking_) {
      // A second Authenticate pipelined behind the first: it waits its turn.
      session.waiting_.push_back(
          {job.caller, job.header, protocol::AuthenticateRequest(std::move(job.request)), std::move(job.done)});
      return;
    }
    session.checking_ = true;
  }
  {
    MutexLock lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

bool AuthGate::admitsNow(AuthSession& session, protocol::ApiKey api, std::string_view group) {
  const auto operation = permissions::operationOf(api);
  const uint64_t generation = policyGeneration_.load(std::memory_order_acquire);
  MutexLock lock(session.mutex_);
  // What admit() alone does (reading new rules, refusing with a log line)
  // stays with it.
  if (!session.authenticated_ || session.checking_ || !session.waiting_.empty()) return false;
  if (session.policyGeneration_ != generation) return false;
  // Their answers are filtered by what the user may describe (admit()).
  if (api == protocol::ApiKey::ListGroups || api == protocol::ApiKey::DescribeServers) return false;
  const permissions::Policy* rules = session.policy_.get();
  if (rules != nullptr && operation) {
    return (decide(session, *rules, session.user_, session.role_, group) & permissions::bit(*operation)) != 0;
  }
  return roleAllows(session.role_, api);
}

void AuthGate::setPermissions(std::shared_ptr<const permissions::Policy> policy) {
  MutexLock lock(policyMutex_);
  policy_ = std::move(policy);
  policyGeneration_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const permissions::Policy> AuthGate::permissions() const {
  MutexLock lock(policyMutex_);
  return policy_;
}

void AuthGate::forgetDecisions(AuthSession& session) {
  session.decided_.clear();
  session.lastGroup_ = nullptr;
}

permissions::OperationSet AuthGate::decide(AuthSession& session, const permissions::Policy& policy,
                                           const std::string& user, Role role, std::string_view group) {
  // A connection of one member asks for one group: compared, not hashed.
  if (session.lastGroup_ != nullptr && *session.lastGroup_ == group) return session.lastOps_;
  if (session.decided_.size() >= kMaxDecisions) forgetDecisions(session);
  auto it = session.decided_.find(group);
  if (it == session.decided_.end()) {
    it = session.decided_.emplace(std::string(group), policy.allowed(user, role, group)).first;
  }
  session.lastGroup_ = &it->first;  // node-based: stays valid until erased
  session.lastOps_ = it->second;
  return it->second;
}

namespace {

// The group a call names, in place; "" for calls that name none.
std::string_view groupOf(const protocol::Request& request) {
  return std::visit(
      [](const auto& r) -> std::string_view {
        if constexpr (requires { r.group; }) {
          return r.group;
        } else {
          return {};
        }
      },
      request);
}

// What a ListGroups or DescribeServers answer may show `user`: the groups
// it may describe. Listing every group leaves the others out; a group asked
// for by name is answered NOT_AUTHORIZED, with nothing about it.
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
    } else if (auto* servers = std::get_if<protocol::DescribeServersResponse>(&response)) {
      // The moves name groups: only those the user may describe.
      std::erase_if(servers->moves, [&](const protocol::GroupMove& m) {
        return !policy->allows(user, role, m.group, permissions::Operation::Describe);
      });
    }
    done(std::move(response));
  };
}

}  // namespace

AuthGate::Verdict AuthGate::judge(AuthSession& session, protocol::ApiKey api, std::string_view group) {
  const auto operation = permissions::operationOf(api);
  const bool listing = api == protocol::ApiKey::ListGroups;
  // The rules in force: the session keeps the ones it decided under, and
  // looks again only when their generation moved (no lock of the gate's,
  // no reference count touched per call).
  const uint64_t generation = policyGeneration_.load(std::memory_order_acquire);
  Verdict v;
  MutexLock lock(session.mutex_);
  v.authenticated = session.authenticated_;
  v.role = session.role_;
  if (!v.authenticated) return v;
  v.user = session.user_;
  if (session.policyGeneration_ != generation) {
    MutexLock policyLock(policyMutex_);
    session.policy_ = policy_;
    session.policyGeneration_ = policyGeneration_.load(std::memory_order_relaxed);
    forgetDecisions(session);
  }
  const permissions::Policy* rules = session.policy_.get();
  v.ruled = rules != nullptr && operation && !listing;
  if (v.ruled) {
    v.allowed = (decide(session, *rules, v.user, v.role, group) & permissions::bit(*operation)) != 0;
  } else {
    v.allowed = rules != nullptr && listing ? true : roleAllows(v.role, api);
  }
  if (v.allowed && rules != nullptr && (listing || api == protocol::ApiKey::DescribeServers)) {
    v.listing = session.policy_;
  }
  return v;
}

void AuthGate::logRefusal(const Verdict& verdict, std::string_view api, std::string_view group,
                          std::optional<permissions::Operation> operation, const std::string& peer,
                          std::string_view answer) {
  uint64_t suppressed = 0;
  if (!gRefusedLog.allow(&suppressed)) return;
  if (!verdict.authenticated) {
    spdlog::warn("refused {} from {} (not authenticated): authenticate first; answered {}{}", api, peer, answer,
                 suppressedNote(suppressed));
  } else if (verdict.ruled && operation) {
    spdlog::warn("refused {} of group '{}' from {} (user '{}'): no rule of the permissions file allows '{}' on "
                 "it, or one denies it; answered {}{}",
                 api, printableForLog(group), peer, verdict.user, permissions::operationName(*operation), answer,
                 suppressedNote(suppressed));
  } else {
    spdlog::warn("refused {} from {} (user '{}', role {}): only an admin may call it; answered {}{}", api, peer,
                 verdict.user, roleName(verdict.role), answer, suppressedNote(suppressed));
  }
}

void AuthGate::admit(AuthSession& session, const protocol::Caller& caller, protocol::Handler& next,
                     const protocol::RequestHeader& header, protocol::Request request,
                     protocol::ResponseCallback done) {
  const protocol::ApiKey api = protocol::apiKeyOf(request);
  const auto operation = permissions::operationOf(api);
  const bool listing = api == protocol::ApiKey::ListGroups;
  const std::string_view group = operation && !listing ? groupOf(request) : std::string_view();
  Verdict verdict = judge(session, api, group);
  if (verdict.allowed) {
    if (verdict.listing) {
      const bool named = listing && !std::get<protocol::ListGroupsRequest>(request).groups.empty();
      done = describableOnly(std::move(done), named, verdict.listing, verdict.user, verdict.role);
    }
    protocol::Caller who = caller;
    who.user = std::move(verdict.user);
    next.handleFrom(who, header, std::move(request), std::move(done));
    return;
  }
  logRefusal(verdict, protocol::apiName(api), group, operation, caller.address(), "NOT_AUTHORIZED");
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
    const auto at = throttle_.notBefore(next.caller.host, next.throttleUser, now);
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
  std::string user = job.request.user;
  bool counts = true;   // a failure the throttle counts
  bool ends = true;     // the answer ends an Authenticate (not a SCRAM challenge)
  protocol::AuthenticateResponse answer;
  const bool sasl = job.header.version >= 1;
  if (sasl) {
    answer = scramStep(job, &role, &user, &counts);
    ends = !(answer.error == protocol::ErrorCode::NONE && !role);
  } else if (!plainAllowed(job.caller.tls)) {
    counts = false;
    answer.error = protocol::ErrorCode::NOT_AUTHORIZED;
    uint64_t suppressed = 0;
    if (gFailedLog.allow(&suppressed)) {
      spdlog::warn("Authenticate version 0 (the secret in the clear) from {} for user '{}' refused: auth.plain is "
                   "{}; the client must use version 1 (SCRAM-SHA-256){}{}",
                   job.caller.address(), printableForLog(job.request.user),
                   plain_ == PlainAuth::Never ? "never" : "tls", plain_ == PlainAuth::Never ? "" : " or TLS",
                   suppressedNote(suppressed));
    }
  } else {
    if (isValidUserName(job.request.user)) role = credentials_->verify(job.request.user, job.request.secret);
    answer.error = role ? protocol::ErrorCode::NONE : protocol::ErrorCode::NOT_AUTHORIZED;
  }
  if (ends) {
    MutexLock lock(session.mutex_);
    // A failed Authenticate leaves the connection unauthenticated, also when
    // it was authenticated before.
    session.authenticated_ = role.has_value();
    session.role_ = role.value_or(Role::Member);
    session.user_ = role ? user : std::string();
    forgetDecisions(session);  // decided for the user it was before
    // The rules in force, read now, so that the calls that follow are
    // decided under them at once, on the I/O thread too (admitsNow).
    {
      MutexLock policyLock(policyMutex_);
      session.policy_ = policy_;
      session.policyGeneration_ = policyGeneration_.load(std::memory_order_relaxed);
    }
    if (!sasl) session.scram_.reset();
  }
  std::chrono::milliseconds wait{0};
  if (ends) {
    MutexLock lock(mutex_);
    if (role) {
      throttle_.succeeded(job.caller.host, job.throttleUser);
    } else if (counts) {
      const auto now = AuthThrottle::Clock::now();
      throttle_.failed(job.caller.host, job.throttleUser, now);
      wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          throttle_.notBefore(job.caller.host, job.throttleUser, now) - now);
    }
  }
  if (role) {
    spdlog::debug("{} authenticated as '{}' (role {}{})", job.caller.address(), user, roleName(*role),
                  sasl ? ", SCRAM-SHA-256" : "");
  } else if (ends && counts) {
    uint64_t suppressed = 0;
    if (gFailedLog.allow(&suppressed)) {
      spdlog::warn("authentication of user '{}' from {} failed{}: unknown user or wrong secret; answered "
                   "NOT_AUTHORIZED{}{}",
                   printableForLog(user), job.caller.address(), sasl ? " (SCRAM-SHA-256)" : "",
                   wait.count() > 0 ? fmt::format("; the next Authenticate from {} or for this user waits {} ms",
                                                  job.caller.host, wait.count())
                                    : std::string(),
                   suppressedNote(suppressed));
    }
  }
  // Nothing arrived meanwhile: the session is settled before the answer goes
  // out, so that what the client sends once it has the answer is admitted
  // straight away, by the I/O thread too (admitsNow).
  {
    MutexLock lock(session.mutex_);
    if (session.waiting_.empty()) session.checking_ = false;
  }
  job.done(std::move(answer));

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
        Job again{job.session, next.caller, job.next, next.header, std::move(*auth), std::move(next.done), {}};
        again.throttleUser = throttleUserOf(session, again.request);
        {
          MutexLock jobsLock(mutex_);
          if (stopping_) return;
          jobs_.push_back(std::move(again));
        }
        wake_.notify_one();
        return;  // still checking_
      }
    }
    if (job.next == nullptr) {
      // Another port's session holds only its authentication steps.
      next.done(protocol::errorResponse(next.request, protocol::ErrorCode::NOT_AUTHORIZED));
      continue;
    }
    admit(session, next.caller, *job.next, next.header, std::move(next.request), std::move(next.done));
  }
}

}  // namespace groupcoord::server
