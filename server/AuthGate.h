#pragma once

// The authentication and role check between the TCP server and the
// protocol::Handler, used when auth.credentials.file is set.
//
// Each connection has an AuthSession. Authenticate requests are checked on
// the gate's own worker thread (the slow hash must not stall an I/O
// thread); requests that arrive on the connection while its Authenticate is
// being checked wait in the session, in order, and go on once the answer is
// known, so a client may pipeline Authenticate and its first calls. The
// number waiting is bounded by the server's in-flight limit per connection
// (each holds a response slot).
//
// With a permissions file (common/Permissions.h), a call naming a group
// also needs a rule allowing its operation on that group for the
// connection's user; the answer is remembered per connection and group
// until the rules change (setPermissions), so a member's heartbeats cost
// one lookup. ListGroups shows only the groups the user may describe.
// Without one, the role alone decides (roleAllows).
//
// Failed Authenticates are counted per address and per user
// (AuthThrottle): after a few, the next checks from that address or for that
// user wait, in the worker's queue of delayed checks, not in a thread, so no
// other connection waits with them.
//
// Threads: handle() on I/O threads; the worker calls the next Handler for
// waiting requests (Handlers are called from several threads already).
// stop() after the TCP server stopped and before the Handler goes away
// (TcpServer::stop() calls it: the handler it forwards to is the server's
// chain).

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/Permissions.h"
#include "common/Scram.h"
#include "common/Sync.h"
#include "protocol/Handler.h"
#include "server/Auth.h"
#include "server/AuthThrottle.h"

namespace groupcoord::server {

class AuthSession {
 public:
  AuthSession() = default;

 private:
  friend class AuthGate;
  struct Waiting {
    protocol::Caller caller;
    protocol::RequestHeader header;
    protocol::Request request;
    protocol::ResponseCallback done;
  };
  Mutex mutex_;
  bool checking_ GUARDED_BY(mutex_) = false;  // an Authenticate is with the worker
  bool authenticated_ GUARDED_BY(mutex_) = false;
  std::string user_ GUARDED_BY(mutex_);  // valid when authenticated_
  Role role_ GUARDED_BY(mutex_) = Role::Member;
  std::vector<Waiting> waiting_ GUARDED_BY(mutex_);
  // The rules this connection decides under (those of generation
  // policyGeneration_) and the operations the user may perform, by group,
  // under them (cleared when the rules change, or when it holds
  // kMaxDecisions groups).
  uint64_t policyGeneration_ GUARDED_BY(mutex_) = 0;
  std::shared_ptr<const permissions::Policy> policy_ GUARDED_BY(mutex_);
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, permissions::OperationSet, Hash, std::equal_to<>> decided_ GUARDED_BY(mutex_);
  // The entry of decided_ asked for last (null after any clear).
  const std::string* lastGroup_ GUARDED_BY(mutex_) = nullptr;
  permissions::OperationSet lastOps_ GUARDED_BY(mutex_) = 0;
  // A SCRAM exchange begun (Authenticate v1, first message answered) and
  // the user it names.
  std::unique_ptr<scram::ServerExchange> scram_ GUARDED_BY(mutex_);
  std::string scramUser_ GUARDED_BY(mutex_);
};

// Authenticate version 0 (the secret on the wire): auth.plain.
enum class PlainAuth { Allow, TlsOnly, Never };

class AuthGate {
 public:
  explicit AuthGate(std::shared_ptr<const CredentialStore> credentials);
  ~AuthGate();  // stop()
  AuthGate(const AuthGate&) = delete;
  AuthGate& operator=(const AuthGate&) = delete;

  // I/O thread: answers or forwards one decoded, name-checked request of the
  // connection from `caller` (whose user the gate fills in when it forwards).
  void handle(const std::shared_ptr<AuthSession>& session, const protocol::Caller& caller, protocol::Handler& next,
              const protocol::RequestHeader& header, protocol::Request request, protocol::ResponseCallback done)
      EXCLUDES(mutex_);

  // The authentication step of another port (the Kafka port's SASL,
  // docs/protocol.md, "Security on the Kafka port"), checked like an
  // Authenticate of the binary port: `version` 0 is the secret (PLAIN, under
  // auth.plain), 1 a SCRAM-SHA-256 message; on the gate's worker, with its
  // throttle; `done` gets the AuthenticateResponse the binary port would
  // send (NONE with a message: a SCRAM challenge, the connection not yet
  // authenticated; authenticatedUser() tells when it is). The port sends one
  // step at a time per session.
  void authenticate(const std::shared_ptr<AuthSession>& session, const protocol::Caller& caller, int16_t version,
                    protocol::AuthenticateRequest request, protocol::ResponseCallback done) EXCLUDES(mutex_);
  // The session's user once authenticated.
  static std::optional<std::string> authenticatedUser(AuthSession& session) EXCLUDES(session.mutex_);

  // The gate's decision on one call of `api` naming `group` ("" for calls
  // that name none) by the session's user, as for the binary port's calls:
  // by the permissions file's rules for calls that name a group, else by
  // the role (roleAllows). ListGroups is allowed, its answer filtered by
  // shows().
  struct Verdict {
    bool authenticated = false;
    bool allowed = false;
    bool ruled = false;  // decided by the permissions file
    Role role = Role::Member;
    std::string user;
    // The rules a listing's answer is filtered by; null: it shows every group.
    std::shared_ptr<const permissions::Policy> listing;
    // Whether a listing's answer may show `group` to the user.
    bool shows(std::string_view group) const {
      return listing == nullptr || listing->allows(user, role, group, permissions::Operation::Describe);
    }
  };
  Verdict judge(AuthSession& session, protocol::ApiKey api, std::string_view group)
      EXCLUDES(session.mutex_, policyMutex_);
  // The warning for a refused call (rate-limited): `api` and `group` as the
  // port names them, `answer` what it was answered.
  static void logRefusal(const Verdict& verdict, std::string_view api, std::string_view group,
                         std::optional<permissions::Operation> operation, const std::string& peer,
                         std::string_view answer);

  // I/O thread: whether handle() would forward a call `api` of `group` on
  // this session as it is: authenticated, nothing waiting behind an
  // Authenticate, the rules in force already read by the session, and
  // allowed (by the rules, or by the role). Then the server may answer it on
  // the I/O thread (a heartbeat's fast path). false: handle() decides, and
  // explains a refusal.
  bool admitsNow(AuthSession& session, protocol::ApiKey api, std::string_view group) EXCLUDES(session.mutex_);

  // Ends the worker; checks not yet made are dropped (their connections are
  // closed by then). Idempotent.
  void stop() EXCLUDES(mutex_);

  const CredentialStore& credentials() const { return *credentials_; }

  // Whether Authenticate version 0 is answered (before the first request).
  void setPlainAuth(PlainAuth plain) { plain_ = plain; }
  // Whether the secret may be sent in the clear on a connection (auth.plain).
  bool plainAllowed(bool tls) const { return plain_ == PlainAuth::Allow || (plain_ == PlainAuth::TlsOnly && tls); }

  // The rules in force from now on; nullptr: the roles alone decide. Any
  // thread; connections keep going, each deciding again under the new rules.
  void setPermissions(std::shared_ptr<const permissions::Policy> policy) EXCLUDES(policyMutex_);
  std::shared_ptr<const permissions::Policy> permissions() const EXCLUDES(policyMutex_);

  // Groups remembered per connection before its memory is cleared.
  static constexpr size_t kMaxDecisions = 1024;

 private:
  struct Job {
    std::shared_ptr<AuthSession> session;
    protocol::Caller caller;
    protocol::Handler* next = nullptr;  // null for another port's (authenticate())
    protocol::RequestHeader header;
    protocol::AuthenticateRequest request;
    protocol::ResponseCallback done;
    std::string throttleUser;  // the user the throttle counts it for
  };
  // The user an Authenticate is counted for: version 0's, the one a SCRAM
  // first message names, or the one of the session's exchange.
  static std::string throttleUserOf(const AuthSession& session, const protocol::AuthenticateRequest& request)
      REQUIRES(session.mutex_);
  // Version 1: one step of the session's SCRAM exchange. *role is set when
  // it ends in success; *counts when it ends in a failure the throttle counts.
  protocol::AuthenticateResponse scramStep(Job& job, std::optional<Role>* role, std::string* user, bool* counts);
  // A decoy for a user not in the file: a salt derived from the name (the
  // same each time, so asking twice does not tell) and the file's dearest
  // iteration count.
  scram::ServerExchange::User decoyFor(std::string_view user) const;
  // Forwards or refuses by the session's state; the caller holds no lock.
  void admit(AuthSession& session, const protocol::Caller& caller, protocol::Handler& next,
             const protocol::RequestHeader& header, protocol::Request request, protocol::ResponseCallback done)
      EXCLUDES(mutex_, session.mutex_);
  // Queues an authentication check (or keeps it behind the session's own).
  void enqueue(Job job) EXCLUDES(mutex_);
  void run() EXCLUDES(mutex_);
  // Worker: the next job whose check may be made now, waiting on wake_ for
  // one (or for the first delayed one's time); false when stopping.
  bool nextJob(Job* job) REQUIRES(mutex_);
  void check(Job& job) EXCLUDES(mutex_);

  // The operations `user` may perform on `group`, from the session's memory
  // or decided now under `policy` (of generation `generation`).
  // Clears the session's remembered decisions (the rules or the user changed).
  static void forgetDecisions(AuthSession& session) REQUIRES(session.mutex_);
  static permissions::OperationSet decide(AuthSession& session, const permissions::Policy& policy,
                                          const std::string& user, Role role, std::string_view group)
      REQUIRES(session.mutex_);

  std::shared_ptr<const CredentialStore> credentials_;
  PlainAuth plain_ = PlainAuth::Allow;
  scram::Bytes decoyKey_;  // random, per process
  mutable Mutex policyMutex_;
  std::shared_ptr<const permissions::Policy> policy_ GUARDED_BY(policyMutex_);
  // Moves (under policyMutex_) with every setPermissions; read without it.
  std::atomic<uint64_t> policyGeneration_{1};
  Mutex mutex_;
  std::condition_variable wake_;  // waited on with mutex_ held (waitLocked)
  std::deque<Job> jobs_ GUARDED_BY(mutex_);
  // Checks held back by the throttle, by the time they may be made.
  std::multimap<AuthThrottle::Clock::time_point, Job> delayed_ GUARDED_BY(mutex_);
  AuthThrottle throttle_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread worker_;
};

// A user name or other client text made safe for one log line: printable
// ASCII only, at most 64 characters.
std::string printableForLog(std::string_view text);

}  // namespace groupcoord::server
